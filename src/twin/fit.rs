//! Fitting the twin's parameters to measured cells: decode cells' time per token (1 /
//! per-request tok/s, else TBT) by relative least squares in (1, N, N × (C + O/2)) — step,
//! per-request and per-KV-token costs; prefill cells'
//! (else single-stream decode cells') TTFT in (1, C, C²/2) after the steps of its chunks —
//! API, per-token and attention costs; decode cells' TTFT in (1, C, N^¼ − 1) beyond those —
//! admission, per-token and the API server's wait as concurrency grows. Coefficients stay ≥ 0 (a negative one is dropped and the rest refitted).
//! Pure functions over observations read from records.

use super::identify::{Design, Designs, first_token_row, prefill_row, step_row};
use super::lsq::nnls_relative;
use super::model::{Params, burst};
use crate::plan::Phase;
use crate::results::bursts::MIN_TOKEN_S;
use crate::results::{Record, Status};

/// One measured cell, as the fit sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Obs {
    /// The cell id.
    pub cell: String,
    /// Prefill or decode.
    pub phase: Phase,
    /// The phase it was measured in (load, session and replay cells are fitted as decode).
    pub source: Phase,
    /// Prompt tokens.
    pub context: f64,
    /// Requests in flight.
    pub n: f64,
    /// `max_tokens` of its requests.
    pub output: f64,
    /// Measured TTFT p50, seconds.
    pub ttft_s: Option<f64>,
    /// Measured TBT p50, seconds.
    pub tbt_s: Option<f64>,
    /// Measured per-request tok/s.
    pub per_request_tok_s: Option<f64>,
    /// Measured total tok/s.
    pub total_tok_s: Option<f64>,
    /// A closed-loop decode cell's window, seconds.
    pub window_s: Option<f64>,
    /// Its requests that finished inside the window (its median TTFT is one of the burst
    /// sent at its start when none did: [`super::model::burst`]).
    pub finished: f64,
}

impl Obs {
    /// The observation of a measured record; `output` the run's `max_tokens`. Prefill and
    /// decode cells and capacity probes by concurrency as they are; load, session and replay
    /// cells and capacity probes by rate as decode steps of the requests that were in flight on
    /// average (the server's `running_mean` where it was scraped, else the client's
    /// `avg_active`) over their mean prompt and output, by their TBT p50, their TTFT left out
    /// (it holds a queue the closed form has no term for).
    pub fn of(r: &Record, output: u64) -> Option<Obs> {
        if !matches!(r.status, Status::Valid | Status::Invalid) {
            return None;
        }
        let closed = match r.phase {
            Phase::Prefill | Phase::Decode => true,
            Phase::Capacity => r.open.rate_offered.is_none(),
            Phase::Load | Phase::Sessions | Phase::Replay => false,
        };
        let decode = closed && r.phase != Phase::Prefill;
        let (phase, context, n, ttft, output) = if closed {
            let phase = if r.phase == Phase::Prefill {
                Phase::Prefill
            } else {
                Phase::Decode
            };
            let n = f64::from(r.concurrency.max(1));
            let ttft = r.ttft_ms.map(|s| s.p50 / 1e3);
            (phase, r.prompt_tokens as f64, n, ttft, output as f64)
        } else {
            let out = r.open.output_tokens_mean.unwrap_or(output as f64);
            (Phase::Decode, mean_prompt(r), in_flight(r)?, None, out)
        };
        Some(Obs {
            cell: r.cell.clone(),
            phase,
            source: r.phase,
            context,
            n,
            output,
            ttft_s: ttft.filter(|x| *x > 0.0),
            tbt_s: r.tbt_ms.and_then(|s| step_of_tbt(s.p50)),
            // An open loop's arrivals put other requests' prefills into many steps: its
            // median time per token (TBT p50) is the step, its mean is not.
            per_request_tok_s: r.per_request_tok_s.filter(|_| closed),
            total_tok_s: r.total_tok_s,
            window_s: r.measured_s.filter(|_| decode),
            finished: r.completed as f64,
        })
    }
}

/// A TBT p50 (ms) as an engine step (s): none when tokens arrived together (under
/// [`MIN_TOKEN_S`] apart: several SSE events in one read). A real vLLM on a busy CPU delivered
/// most tokens of a cell at once (TBT p50 0.001 ms); taken as a step, that cell outweighed
/// every other in the relative fit and set the step's costs to 0.
pub fn step_of_tbt(p50_ms: f64) -> Option<f64> {
    Some(p50_ms / 1e3).filter(|x| *x >= MIN_TOKEN_S)
}

/// The requests in flight on average: the server's count, else the client's, else (a
/// peer's imported run, which says neither) Little's law — requests completed per second ×
/// the mean seconds each took (≥ 1).
fn in_flight(r: &Record) -> Option<f64> {
    let little = || Some(r.open.rate_achieved? * r.open.e2e_ms?.mean / 1e3);
    r.server
        .as_ref()
        .and_then(|s| s.running_mean)
        .or(r.avg_active)
        .or_else(little)
        .filter(|n| *n > 0.0)
        .map(|n| n.max(1.0))
}

/// A cell's mean prompt: over a session cell's turns (weighted by their requests), else the
/// open loop's mean input, else the record's prompt tokens.
fn mean_prompt(r: &Record) -> f64 {
    let turns = r.by_turn.as_deref().unwrap_or_default();
    let (sum, n) = turns
        .iter()
        .fold((0.0, 0.0), |(s, n), t| match t.input_tokens_mean {
            Some(m) if t.requests > 0 => (s + m * t.requests as f64, n + t.requests as f64),
            _ => (s, n),
        });
    if n > 0.0 {
        sum / n
    } else {
        r.open.input_tokens_mean.unwrap_or(r.prompt_tokens as f64)
    }
}

/// Decode steps: the mean time per token (1 / per-request tok/s) where measured — it holds
/// the stalls of other requests' prefills, which TBT's median leaves out — in
/// (1, N, N × (C + O/2)).
fn fit_steps(decode: &[&Obs], p: &mut Params) -> Design {
    let rows: Vec<Vec<f64>> = decode
        .iter()
        .map(|o| step_row(o.n, o.context, o.output))
        .collect();
    if decode.is_empty() {
        return Design::of(&rows, 3);
    }
    let y: Vec<f64> = decode
        .iter()
        .filter_map(|o| {
            o.per_request_tok_s
                .filter(|t| *t > 0.0)
                .map(|t| 1.0 / t)
                .or(o.tbt_s)
        })
        .collect();
    let x = nnls_relative(&rows, &y);
    (p.step_s, p.per_seq_s, p.per_kv_token_s) = (x[0], x[1], x[2]);
    Design::of(&rows, 3)
}

/// Cold prompts — prefill cells, else one-stream decode cells less half a step — after the
/// steps of their chunks, in (1, C, C²) (the quadratic term from 3 contexts on).
fn fit_prefill(obs: &[Obs], decode: &[&Obs], p: &mut Params) -> Design {
    let mut cold: Vec<(f64, f64)> = obs
        .iter()
        .filter(|o| o.phase == Phase::Prefill)
        .filter_map(|o| Some((o.context, o.ttft_s?)))
        .collect();
    if cold.is_empty() {
        cold = decode
            .iter()
            .filter(|o| o.n <= 1.0)
            .filter_map(|o| {
                Some((
                    o.context,
                    o.ttft_s? - p.step(1.0, o.context, o.output) / 2.0,
                ))
            })
            .collect();
    }
    let chunks = |c: f64| (c / p.max_batched_tokens.max(1) as f64).ceil().max(1.0);
    let usable: Vec<(f64, f64)> = cold
        .into_iter()
        .map(|(c, t)| (c, t - p.step_s * chunks(c)))
        .filter(|(_, t)| *t > 0.0)
        .collect();
    let design = Design::of(
        &usable
            .iter()
            .map(|(c, _)| prefill_row(*c))
            .collect::<Vec<_>>(),
        3,
    );
    if usable.is_empty() {
        return design;
    }
    let quadratic = usable.len() >= 3;
    let rows: Vec<Vec<f64>> = usable
        .iter()
        .map(|(c, _)| {
            if quadratic {
                vec![1.0, *c, c * c]
            } else {
                vec![1.0, *c]
            }
        })
        .collect();
    let y: Vec<f64> = usable.iter().map(|(_, t)| *t).collect();
    let x = nnls_relative(&rows, &y);
    p.api_s = x[0];
    p.prefill_token_s = x[1];
    p.prefill_quadratic_s = x.get(2).map_or(0.0, |q| 2.0 * q);
    design
}

/// Decode cells' first token, beyond the API server and half a step, in (1, C, N^¼ − 1,
/// C × (1 + the median's place in the burst sent at the cell's start): its own prompt and those
/// ahead of it on the one tokenizer).
fn fit_first_tokens(decode: &[&Obs], p: &mut Params) -> Design {
    let firsts: Vec<(&Obs, f64)> = decode
        .iter()
        .filter_map(|o| {
            Some((
                *o,
                o.ttft_s? - p.step(o.n, o.context, o.output) / 2.0 - p.api_s,
            ))
        })
        .filter(|(_, y)| *y > 0.0)
        .collect();
    let rows: Vec<Vec<f64>> = firsts
        .iter()
        .map(|(o, _)| first_token_row(o.context, o.n, burst(o.n, o.finished)))
        .collect();
    if firsts.is_empty() {
        return Design::of(&rows, 5);
    }
    let y: Vec<f64> = firsts.iter().map(|(_, y)| *y).collect();
    let x = nnls_relative(&rows, &y);
    (
        p.cached_request_s,
        p.cached_token_s,
        p.cached_quadratic_s,
        p.api_stream_s,
        p.tokenizer_token_s,
    ) = (x[0], x[1], x[2], x[3], x[4]);
    Design::of(&rows, 5)
}

/// Fit `base`'s costs (its limits kept) to `obs`: steps, then prefill, then first tokens.
pub fn fit(obs: &[Obs], base: Params) -> Params {
    fit_designed(obs, base).0
}

/// [`fit`], with the span of each group's fitted rows (what the cells constrain).
pub fn fit_designed(obs: &[Obs], base: Params) -> (Params, Designs) {
    let mut p = base;
    let decode: Vec<&Obs> = obs
        .iter()
        .filter(|o| {
            o.phase == Phase::Decode && (o.tbt_s.is_some() || o.per_request_tok_s.is_some())
        })
        .collect();
    let step = fit_steps(&decode, &mut p);
    let prefill = fit_prefill(obs, &decode, &mut p);
    let first_token = fit_first_tokens(&decode, &mut p);
    let designs = Designs {
        step,
        prefill,
        first_token,
    };
    (p, designs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine the cells are made by: every cost known.
    fn truth() -> Params {
        Params {
            step_s: 4e-3,
            per_seq_s: 20e-6,
            per_kv_token_s: 3e-9,
            prefill_token_s: 8e-6,
            prefill_quadratic_s: 4e-10,
            api_s: 0.02,
            api_stream_s: 0.1,
            cached_request_s: 3e-3,
            cached_token_s: 1e-7,
            cached_quadratic_s: 1e-12,
            tokenizer_token_s: 2e-6,
            max_batched_tokens: 8192,
            max_num_seqs: 256,
            kv_tokens: 1 << 30,
            max_model_len: 131_072,
        }
    }

    /// The cells `truth` makes: a prefill cell and four decode cells (1–64 streams, a 1 s
    /// window) at each of 1K, 8K and 32K.
    fn cells_of(truth: &Params) -> Vec<Obs> {
        let mut obs = Vec::new();
        for c in [1024.0, 8192.0, 32768.0] {
            let pre = truth.prefill(c);
            obs.push(Obs {
                cell: format!("prefill/{c}"),
                phase: Phase::Prefill,
                source: Phase::Prefill,
                context: c,
                n: 1.0,
                output: 256.0,
                ttft_s: pre.ttft_ms_p50.map(|t| t / 1e3),
                tbt_s: None,
                per_request_tok_s: None,
                total_tok_s: None,
                window_s: None,
                finished: 0.0,
            });
            for n in [1.0, 4.0, 16.0, 64.0] {
                // A window of 1 s: at 1K, 16 and 64 streams do not finish 256 tokens in it,
                // and the median TTFT is one of the burst sent at the start.
                let d = truth.decode(c, n, 256.0, Some(1.0));
                let burst = truth.burst_at(n, c, 256.0, Some(1.0));
                let finished = if burst > 0.0 { 0.0 } else { n };
                obs.push(Obs {
                    cell: format!("decode/{c}/{n}"),
                    phase: Phase::Decode,
                    source: Phase::Decode,
                    context: c,
                    n,
                    output: 256.0,
                    ttft_s: d.ttft_ms_p50.map(|t| t / 1e3),
                    tbt_s: d.tbt_ms_p50.map(|t| t / 1e3),
                    per_request_tok_s: d.per_request_tok_s,
                    total_tok_s: d.total_tok_s,
                    window_s: Some(1.0),
                    finished,
                });
            }
        }
        obs
    }

    #[test]
    fn decode_costs_come_back_from_cells_made_by_the_model() {
        let truth = truth();
        let mut obs = cells_of(&truth);
        let zero = Params {
            step_s: 0.0,
            per_seq_s: 0.0,
            per_kv_token_s: 0.0,
            prefill_token_s: 0.0,
            prefill_quadratic_s: 0.0,
            api_s: 0.0,
            api_stream_s: 0.0,
            cached_request_s: 0.0,
            cached_token_s: 0.0,
            cached_quadratic_s: 0.0,
            tokenizer_token_s: 0.0,
            ..truth
        };
        let p = fit(&obs, zero);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1e-12) + 1e-12;
        assert!(
            close(p.step_s, truth.step_s)
                && close(p.per_seq_s, truth.per_seq_s)
                && close(p.per_kv_token_s, truth.per_kv_token_s),
            "{p:?}"
        );
        assert!(
            close(p.prefill_token_s, truth.prefill_token_s)
                && close(p.prefill_quadratic_s, truth.prefill_quadratic_s),
            "{p:?}"
        );
        assert!(close(p.api_stream_s, truth.api_stream_s), "{p:?}");
        assert!(close(p.tokenizer_token_s, truth.tokenizer_token_s), "{p:?}");
        // A cell whose tokens arrived together (TBT p50 at the clock's 1 µs floor, no
        // per-request tok/s) says nothing of the step: the costs still come back.
        let coalesced = Obs {
            tbt_s: step_of_tbt(0.001),
            per_request_tok_s: None,
            ..obs[1].clone()
        };
        assert_eq!(coalesced.tbt_s, None);
        obs.push(coalesced);
        let p = fit(&obs, zero);
        assert!(close(p.step_s, truth.step_s), "{p:?}");
        assert_eq!(step_of_tbt(4.0), Some(0.004));
    }
}
