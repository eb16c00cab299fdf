//! The pacer, open-loop load's driver (docs/results.md, load cells): a dispatcher that sends
//! each request on time and lets it run as its own task ([`dispatch`]), on the arrival
//! schedule drawn ahead from the seed (`plan::arrivals`). Each request's chunk times are kept
//! as `results::fill::gaps` keeps them, and the requests' times become a load cell's record
//! fields in `results::fill`.

pub mod dispatch;
mod timer;
