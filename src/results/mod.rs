//! The results stage: the record of each cell (docs/results.md) and its statistics. The run
//! directory module (`rundir`) writes records to `results.jsonl` and reads them back.

pub(crate) mod bursts;
pub mod endpoints;
pub mod fill;
pub mod images;
pub mod limit;
pub mod limit_cells;
mod lora;
pub(crate) mod observe;
pub(crate) mod open_fields;
pub(crate) mod record;
pub mod repeats;
pub mod sessions;
pub mod significance;
pub mod slo;
pub mod spec_decode;
pub(crate) mod stats;

pub use endpoints::{AdapterUse, EndpointUse, Shares};
pub use images::ImageUse;
pub use lora::LoraUse;
pub use observe::{Bucket, GpuUse, ServerUse};
pub use open_fields::{CapacityBound, OpenFields};
pub use record::{
    ClientUse, Record, Status, TokenSource, record_schema_text, rfc3339, rfc3339_ms,
    unix_of_rfc3339, utc_now,
};
pub use sessions::{SessionCounts, TraceInfo, TurnStats};
pub use spec_decode::{SpecCounts, SpecDecode, SpecSource};
pub use stats::Summary;
