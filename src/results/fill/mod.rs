//! Record fields from measured times, with no I/O: a load or replay cell's requests
//! ([`open_loop`], their times in [`times`], each one's chunk gaps in [`gaps`]) and whether
//! they saturated the server ([`saturation`]), a decode window's merged totals ([`window`]), a
//! session cell's turns ([`sessions`]), and the verdict rules every cell shares ([`verdict`]).

pub mod gaps;
pub mod open_loop;
pub mod saturation;
pub mod sessions;
pub mod times;
pub mod verdict;
pub mod window;

pub use open_loop::{fill, shares};
pub use times::{Done, Finished};
