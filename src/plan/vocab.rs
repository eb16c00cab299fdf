//! The spec's value types a plan and its run carry unchanged (SLOs, validity rules, arrival
//! processes, durations, dataset entries): the plan's vocabulary, re-exported so that the
//! stages below the plan name them without reading the spec.

pub use crate::spec::dataset::{DatasetError, Entry};
pub use crate::spec::files::{KEPT_TRACE, KEPT_TWIN};
pub use crate::spec::telemetry::{GpuSource, KvOverflow};
pub use crate::spec::trace::{TraceEntry, TraceError, read as read_trace};
pub use crate::spec::{Arrivals, Distribution, Rate, SearchAxis, Slo, Span, Spread, Validity};
pub use crate::spec::{Prefix, Tokens};
