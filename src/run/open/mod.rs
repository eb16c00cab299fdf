//! Open-loop load (docs/results.md, load cells): arrival schedules drawn ahead from the seed
//! ([`arrivals`]), a dispatcher that sends each request on time and lets it run as its own
//! task ([`dispatch`]), and the requests' times turned into a load cell's record fields
//! ([`fill`]), saturation included ([`saturation`]).

pub mod arrivals;
pub mod dispatch;
pub mod fill;
pub mod gaps;
pub mod saturation;
mod timer;
