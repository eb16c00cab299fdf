//! The twin's step-cost model — the simulator's, in closed form for the cells whose steady
//! state it describes — and the parameters a fit gives it; the requests run at once are at most
//! `max_num_seqs` and what the KV cache holds. A decode step of N requests each
//! holding about C + O/2 KV tokens takes `step_s + per_seq_s × N + per_kv_token_s × N ×
//! (C + O/2)`: that is the TBT, N over it the total tok/s. A cold prompt of C tokens reaches its
//! first token after `api_s + prefill_token_s × C + prefill_quadratic_s × C² / 2` plus one
//! `step_s` per chunk of `max_batched_tokens`. A decode cell's first token comes after `api_s +
//! cached_request_s + cached_token_s × C` (its prompts may be prefix-cached, so it is fitted
//! apart from prefill) plus `api_stream_s × (N^¼ − 1)` for the API server busy with N − 1
//! streams, plus half a step; where the cell's measured requests are the N sent together at
//! its start (none finishes inside the window), the median of them also waits for (N − 1)/2
//! prompts on the API server's one tokenizer, `tokenizer_token_s × C` each.

use serde::{Deserialize, Serialize};

/// The fitted parameters: one type, the simulator's ([`crate::sim::fitted`]), which reads
/// a twin file's `[params]` with it.
pub use crate::sim::fitted::Params;

/// What the model says of one cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Predicted {
    /// Output tokens per second of all requests.
    pub total_tok_s: Option<f64>,
    /// Output tokens per second of one request.
    pub per_request_tok_s: Option<f64>,
    /// Time to first token, median, ms.
    pub ttft_ms_p50: Option<f64>,
    /// Time between tokens, median, ms.
    pub tbt_ms_p50: Option<f64>,
}

impl Params {
    /// Seconds of one decode step of `n` requests of `context` prompt tokens and `output`
    /// output tokens each.
    pub fn step(&self, n: f64, context: f64, output: f64) -> f64 {
        self.step_s + self.per_seq_s * n + self.per_kv_token_s * n * (context + output / 2.0)
    }

    /// Seconds to the first token of a cold prompt of `context` tokens, alone.
    pub fn cold_ttft(&self, context: f64) -> f64 {
        let chunks = (context / self.max_batched_tokens.max(1) as f64)
            .ceil()
            .max(1.0);
        self.api_s
            + self.prefill_token_s * context
            + self.prefill_quadratic_s * context * context / 2.0
            + self.step_s * chunks
    }

    /// A decode cell's first token, less half a step: the API server, the prompt's admission
    /// (fitted to decode cells, whose prompts may be prefix-cached), the wait for the streams,
    /// and its own prompt with `burst` prompts ahead of it on the one tokenizer ([`burst`]).
    pub fn decode_ttft(&self, context: f64, n: f64, burst: f64) -> f64 {
        self.api_s
            + self.cached_request_s
            + self.cached_token_s * context
            + self.cached_quadratic_s * context * context
            + self.stream_wait(n)
            + self.tokenizer_token_s * context * (burst + 1.0)
    }

    /// The API server's extra wait for a request arriving among `n − 1` running ones.
    pub fn stream_wait(&self, n: f64) -> f64 {
        self.api_stream_s * (n.max(1.0).powf(0.25) - 1.0)
    }

    /// The requests of `n` in flight that run at once: at most `max_num_seqs`, and as many as
    /// the KV cache holds at C + O/2 tokens each (at least one).
    pub fn running(&self, n: f64, context: f64, output: f64) -> f64 {
        let fit = (self.kv_tokens as f64 / (context + output / 2.0).max(1.0)).floor();
        n.min(self.max_num_seqs.max(1) as f64).min(fit.max(1.0))
    }

    /// The median request's place in the burst a closed loop of `n` sends at its start
    /// ([`burst`]): its first requests finish inside a window of `window_s` (`None`: taken
    /// to) when generating their output takes less than the window and the burst's spread
    /// (the window opens once the last of them has its first token).
    pub fn burst_at(&self, n: f64, context: f64, output: f64, window_s: Option<f64>) -> f64 {
        let step = self.step(self.running(n, context, output), context, output);
        let spread = self.tokenizer_token_s * context * (n - 1.0).max(0.0);
        let finish = window_s.is_none_or(|w| output * step < w + spread);
        burst(n, if finish { n } else { 0.0 })
    }

    /// A prefill cell: one cold prompt of `context` tokens.
    pub fn prefill(&self, context: f64) -> Predicted {
        let ttft = self.cold_ttft(context);
        Predicted {
            ttft_ms_p50: Some(ttft * 1e3),
            ..Predicted::default()
        }
    }

    /// A decode cell: `n` requests of `context` tokens, `output` tokens each, measured over a
    /// window of `window_s` (`None`: requests are taken to finish inside it).
    pub fn decode(&self, context: f64, n: f64, output: f64, window_s: Option<f64>) -> Predicted {
        let n_eff = self.running(n, context, output);
        let step = self.step(n_eff, context, output);
        let burst = self.burst_at(n, context, output, window_s);
        // A new request waits for the API server, its prompt's admission, and half a step.
        let ttft = self.decode_ttft(context, n_eff, burst) + step / 2.0;
        Predicted {
            total_tok_s: Some(n_eff / step),
            per_request_tok_s: Some(1.0 / step),
            ttft_ms_p50: Some(ttft * 1e3),
            tbt_ms_p50: Some(step * 1e3),
        }
    }
}

/// The median request's place on the API server's one tokenizer among the `n` sent together at
/// a closed-loop cell's start, when `finished` of them finished inside the window — prompts
/// ahead of it: (n − 1)/2 when none did (the median is one of them), (n − finished)/2 when
/// some did (the median lies among the rest, the later requests, sent one by one as others
/// end, not queueing), 0 once n did.
pub fn burst(n: f64, finished: f64) -> f64 {
    if finished <= 0.0 {
        (n.max(1.0) - 1.0) / 2.0
    } else {
        ((n - finished) / 2.0).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::Params;

    /// A twin file's `[params]` from before `tokenizer_token_s` and `cached_quadratic_s`
    /// were parameters: the twin and the simulator read it as one type, both as 0 — the
    /// twin once refused what the simulator's private copy took.
    #[test]
    fn the_twin_and_the_simulator_read_one_params_table() {
        let table = "step_s = 0.01\nper_seq_s = 0.001\nper_kv_token_s = 0.0\n\
                     prefill_token_s = 0.0002\nprefill_quadratic_s = 0.0\napi_s = 0.003\n\
                     api_stream_s = 0.0\ncached_request_s = 0.0\ncached_token_s = 0.0\n\
                     max_batched_tokens = 2048\nmax_num_seqs = 8\nkv_tokens = 65536\n\
                     max_model_len = 4096\n";
        let p: Result<Params, _> = toml::from_str(table);
        let p = p.map_err(|e| e.to_string());
        assert_eq!(p.as_ref().map(|p| p.tokenizer_token_s), Ok(0.0), "{p:?}");
        assert_eq!(p.as_ref().map(|p| p.cached_quadratic_s), Ok(0.0));
        let profile = crate::sim::profile::from_twin(&format!("[params]\n{table}"));
        let profile = profile.map_err(|e| e.to_string());
        let (p, profile) = (
            p.unwrap_or_else(|e| panic!("{e}")),
            profile.unwrap_or_else(|e| panic!("{e}")),
        );
        assert_eq!((profile.api_s, profile.step_s), (p.api_s, p.step_s));
        assert_eq!(profile.max_num_seqs, p.max_num_seqs as usize);
        assert_eq!(profile.api_serial_token_s, 0.0);
    }
}
