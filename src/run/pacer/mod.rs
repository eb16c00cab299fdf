//! The pacer, open-loop load's driver (docs/results.md, load cells): arrival schedules drawn
//! ahead from the seed ([`arrivals`]) and a dispatcher that sends each request on time and
//! lets it run as its own task ([`dispatch`]). The requests' times become a load cell's record
//! fields in `results::fill`.

pub mod arrivals;
pub mod dispatch;
pub mod gaps;
mod timer;
