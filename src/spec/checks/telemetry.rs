//! Meaning checks of `telemetry` (docs/spec.md): a DCGM source needs its URL, and a scrape
//! interval short enough to load the engine is refused.

use super::Checker;
use crate::spec::diag::Problem;
use crate::spec::telemetry::GpuSource;
use crate::spec::units::Span;
use std::time::Duration;

/// The shortest scrape interval: a `/metrics` answer can take milliseconds to render.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Every problem of `telemetry`.
pub(super) fn check(cx: &Checker<'_>, out: &mut Vec<Problem>) {
    if let Ok(Some(i)) = cx.field::<Span>("/telemetry/interval")
        && i.0 < MIN_INTERVAL
    {
        out.push(Problem::error(
            "/telemetry/interval",
            format!(
                "scraping `/metrics` every {i} loads the engine being measured; use 100ms or more"
            ),
        ));
    }
    let gpu = cx.or("/telemetry/gpu", GpuSource::Auto);
    let url = cx.json.pointer("/telemetry/dcgm_url").is_some();
    if gpu == Some(GpuSource::Dcgm) && !url {
        out.push(Problem::error(
            "/telemetry/gpu",
            "`gpu: dcgm` reads a DCGM exporter: give its endpoint in `telemetry.dcgm_url` (e.g. http://127.0.0.1:9400/metrics)",
        ));
    }
    if url && gpu.is_some_and(|g| g != GpuSource::Dcgm) {
        out.push(Problem::warning(
            "/telemetry/dcgm_url",
            "`dcgm_url` is only read with `gpu: dcgm`",
        ));
    }
}
