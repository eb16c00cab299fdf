//! `benchspec sim`: serve the simulated engine on 127.0.0.1 until Ctrl-C.

use super::exit::Exit;
use super::output::Out;
use crate::Error;
use crate::sim::{self, Faults, Options, profile};
use crate::spec::Span;
use clap::Args;

/// Options of `benchspec sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// The port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// The performance profile.
    #[arg(long, default_value = crate::spec::DEFAULT_SIM_PROFILE)]
    pub profile: String,
    /// List the profiles and exit.
    #[arg(long)]
    pub list: bool,
    /// The model name to serve (default: the profile's).
    #[arg(long, value_name = "NAME")]
    pub served_name: Option<String>,
    /// Chat: send the first N generated tokens as `reasoning_content`.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub reasoning_tokens: usize,
    /// Tokens per streamed chunk, as speculative decoding sends them.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub tokens_per_chunk: usize,
    /// Speak llama.cpp's streaming dialect (usage only inside the last chunk); the same as
    /// `--dialect llama-cpp`.
    #[arg(long)]
    pub llama_cpp_dialect: bool,
    /// Whose API dialect to speak.
    #[arg(long, value_enum, default_value_t = crate::spec::SimDialectSpec::Vllm)]
    pub dialect: crate::spec::SimDialectSpec,
    /// The KV cache's capacity in tokens (default: the profile's).
    #[arg(long, value_name = "TOKENS")]
    pub kv_tokens: Option<u64>,
    /// The most requests scheduled at once (default: the profile's).
    #[arg(long, value_name = "N")]
    pub max_num_seqs: Option<usize>,
    /// Tokens per KV-cache block, 1–4096 (default 16, GPU vLLM's; vLLM's CPU build uses 128).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub block_size: Option<u16>,
    /// Every cost of the profile times this: 1.5 serves 1.5 times slower.
    #[arg(long, default_value_t = 1.0, value_name = "FACTOR")]
    pub time_scale: f64,
    /// Run-to-run noise: relative standard deviation of the step time (e.g. 0.03).
    #[arg(long, default_value_t = 0.0, value_name = "SIGMA")]
    pub noise: f64,
    /// The noise's seed.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub noise_seed: u64,
    /// Fault: fraction of requests answered with HTTP 500.
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    pub failure_rate: f64,
    /// Fault: fraction of streams cut mid-way.
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    pub disconnect_rate: f64,
    /// Fault: fraction of streams that go silent mid-way.
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    pub stall_rate: f64,
    /// Speculative decoding: draft this many tokens per decode step (0: none; at most 64,
    /// as `engine.sim.speculative.draft_tokens`).
    #[arg(long, default_value_t = 0, value_name = "K",
          value_parser = clap::value_parser!(u32).range(0..=64))]
    pub draft_tokens: u32,
    /// The probability that a draft token is accepted, for random, natural and code prompt
    /// text (needs `--draft-tokens`).
    #[arg(long, default_value = "0.3,0.6,0.8", value_name = "R,N,C", value_parser = acceptance,
          requires = "draft_tokens")]
    pub acceptance: AcceptanceArg,
    /// Fault: stop serving after this long (e.g. `30s`).
    #[arg(long, value_name = "DURATION", value_parser = |s: &str| Span::parse(s))]
    pub die_after: Option<Span>,
    /// Prompt tokens an image costs: `N` for every image (gemma-3's 256, the default), or
    /// `patch:P` for one per P × P patch, ⌈w/P⌉ · ⌈h/P⌉ (Qwen2-VL: `patch:28`).
    #[arg(long, value_name = "N|patch:P", value_parser = image_tokens)]
    pub image_tokens: Option<sim::images::ImageTokens>,
    /// The most images a chat prompt may carry (vLLM `--limit-mm-per-prompt`); more is
    /// HTTP 400 in vLLM's words.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub limit_mm_per_prompt: u32,
    /// The longest side an image may have, pixels; larger is HTTP 400.
    #[arg(long, default_value_t = 4096, value_name = "PIXELS")]
    pub max_image_side: u32,
}

/// `--image-tokens`: `N` or `patch:P`.
fn image_tokens(s: &str) -> Result<sim::images::ImageTokens, sim::SimError> {
    let bad = || sim::SimError::ImageTokensArg { value: s.into() };
    match s.strip_prefix("patch:") {
        Some(p) => p
            .parse()
            .ok()
            .filter(|p| *p > 0)
            .map(sim::images::ImageTokens::Patch)
            .ok_or_else(bad),
        None => s
            .parse()
            .map(sim::images::ImageTokens::Fixed)
            .map_err(|_| bad()),
    }
}

/// `--acceptance`: three probabilities.
#[derive(Debug, Clone, Copy)]
pub struct AcceptanceArg(pub [f64; 3]);

/// Read `--acceptance R,N,C`: three numbers from 0 to 1.
fn acceptance(s: &str) -> Result<AcceptanceArg, sim::SimError> {
    let bad = || sim::SimError::AcceptanceArg { value: s.into() };
    let v: Vec<f64> = s
        .split(',')
        .map(|p| p.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    match v[..] {
        [r, n, c] if v.iter().all(|p| (0.0..=1.0).contains(p)) => Ok(AcceptanceArg([r, n, c])),
        _ => Err(bad()),
    }
}

/// Run `benchspec sim`.
pub fn run(args: &SimArgs, out: &Out) -> Result<i32, Error> {
    if args.list {
        let mut text = String::new();
        for p in profile::profiles() {
            text.push_str(&format!("{:<18} {}\n", p.name, p.about));
        }
        out.print(&text);
        return Ok(0);
    }
    let profile = sim::find_profile(&args.profile)?.scaled(args.time_scale.clamp(0.1, 10.0));
    let mut opts = Options::new(profile);
    if let Some(name) = &args.served_name {
        opts.served_name.clone_from(name);
    }
    opts.reasoning_tokens = args.reasoning_tokens;
    (opts.noise, opts.noise_seed) = (args.noise.clamp(0.0, 0.5), args.noise_seed);
    if let Some(kv) = args.kv_tokens {
        opts.profile.kv_tokens = kv;
    }
    if let Some(n) = args.max_num_seqs {
        opts.profile.max_num_seqs = n.max(1);
    }
    if let Some(b) = args.block_size {
        opts.profile.block_size = usize::from(b);
    }
    opts.tokens_per_chunk = args.tokens_per_chunk.max(1);
    opts.images = sim::images::ImageRule {
        tokens: args.image_tokens.unwrap_or(opts.images.tokens),
        limit_per_prompt: args.limit_mm_per_prompt,
        max_side: args.max_image_side.max(1),
    };
    opts.speculation = (args.draft_tokens > 0).then_some(sim::Speculation {
        draft_tokens: args.draft_tokens as usize,
        acceptance: args.acceptance.0,
    });
    opts.dialect = crate::plan::sim::dialect(args.dialect);
    if args.llama_cpp_dialect {
        opts.dialect = sim::SimDialect::LlamaCpp;
    }
    opts.faults = Faults {
        failure_rate: args.failure_rate,
        disconnect_rate: args.disconnect_rate,
        stall_rate: args.stall_rate,
        die_after: args.die_after.map(|d| d.0),
        ..Faults::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|source| sim::SimError::Bind {
            addr: "runtime".into(),
            source,
        })?;
    runtime.block_on(serve(args.port, opts, out))
}

async fn serve(port: u16, opts: Options, out: &Out) -> Result<i32, Error> {
    let addr = format!("127.0.0.1:{port}");
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|source| sim::SimError::Bind {
            addr: addr.clone(),
            source,
        })?;
    let (profile, served) = (opts.profile.name, opts.served_name.clone());
    let mut server =
        sim::start(listener, opts).map_err(|source| sim::SimError::Bind { addr, source })?;
    // The address line is printed even with --quiet: it is how a caller learns the port.
    eprintln!(
        "benchspec sim: profile `{profile}` serving `{served}` at {} (Ctrl-C stops)",
        server.base_url()
    );
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {
            out.info("benchspec sim: stopping");
            server.stop().await;
            Ok(0)
        }
        () = server.wait() => {
            out.info("benchspec sim: stopped by the `die_after` fault option");
            Ok(Exit::Engine.code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--acceptance` takes three probabilities; anything else is the one sentence saying
    /// what to give (`SimError::AcceptanceArg`), as is an `--image-tokens` that is neither
    /// `N` nor `patch:P`.
    #[test]
    fn draft_tokens_are_bounded_and_acceptance_needs_them() {
        use clap::Parser;
        let parse = |args: &[&str]| {
            let mut all = vec!["benchspec", "sim"];
            all.extend_from_slice(args);
            crate::cli::Cli::try_parse_from(all).map(|_| ())
        };
        assert!(parse(&["--draft-tokens", "64"]).is_ok());
        assert!(parse(&["--draft-tokens", "65"]).is_err(), "the spec's 1–64");
        assert!(parse(&["--draft-tokens", "1000000"]).is_err());
        assert!(
            parse(&["--acceptance", "0.1,0.2,0.3"]).is_err(),
            "ignored alone"
        );
        assert!(parse(&["--draft-tokens", "3", "--acceptance", "0.1,0.2,0.3"]).is_ok());
        assert!(parse(&[]).is_ok());
    }

    #[test]
    fn sim_flags_are_read_or_refused_in_the_stages_error() {
        for (text, ok) in [
            ("0.3,0.6,0.8", true),
            ("0, 1, 0.5", true),
            ("0.3,0.6", false),
            ("0.3,1.5,0.8", false),
            ("a,b,c", false),
        ] {
            match acceptance(text) {
                Ok(_) => assert!(ok, "{text}"),
                Err(e) => {
                    assert!(!ok, "{text}");
                    assert!(matches!(e, sim::SimError::AcceptanceArg { .. }), "{text}");
                    assert!(e.to_string().starts_with(&format!("`{text}`: give three")));
                }
            }
        }
        for (text, ok) in [
            ("256", true),
            ("patch:28", true),
            ("patch:0", false),
            ("x", false),
        ] {
            match image_tokens(text) {
                Ok(_) => assert!(ok, "{text}"),
                Err(e) => {
                    assert!(!ok, "{text}");
                    assert!(matches!(e, sim::SimError::ImageTokensArg { .. }), "{text}");
                }
            }
        }
    }
}
