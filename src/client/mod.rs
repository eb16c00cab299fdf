//! The streaming client, a leaf: it imports nothing from the rest of benchspec but the seeded
//! generator ([`crate::rng`], itself a leaf). One
//! keep-alive pool sized to the concurrency, streamed completions and chat requests read
//! through the SSE parser, and the engine dialects that differ (the tokenize endpoint; usage
//! in a separate chunk or inside the last one). A request's stream is reported chunk by
//! chunk to a callback with its arrival time, so the measuring code sees what the network
//! delivered and when. [`Generate`] is the seam: the run drives any implementation of it,
//! this client over the network or a [`scripted::Scripted`] one in tests.

pub mod adapters;
mod attach;
mod body;
mod chunk;
mod drafts;
pub mod exchange;
mod generate;
pub mod h1;
mod info;
pub mod local;
mod outcome;
mod prepared;
mod refusal;
#[cfg(test)]
pub(crate) mod replay;
pub mod route;
pub mod scripted;
mod send;
mod settings;
pub mod sse;
mod text;
mod tokenize;
#[cfg(test)]
mod vllm_fixtures;
mod wire;

pub use attach::{Attach, ImageTally};
pub use drafts::{DraftSum, Drafts};
pub use generate::Generate;
pub use info::{ApiError, INTROSPECT_TIMEOUT, Introspection, describe};
pub use outcome::{Chunk, Failure, Outcome};
pub use prepared::Prepared;
use prepared::{escaped, last_part};
pub use route::{Balance, Route};
use route::{Target, Targets};
use serde_json::Value;
pub use settings::{Api, ApiKey, BadKey, ClientDialect, Settings};
use std::sync::Arc;
use std::time::Duration;
pub use wire::Events;

/// How many times a request that fails before any response byte is sent.
pub const SEND_TRIES: usize = 3;

/// The client of one run.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    /// The first server's `http://host:port`, no trailing slash: where the informational
    /// endpoints are asked.
    pub base: String,
    /// Every server generation requests go to, with their pools.
    targets: Arc<Targets>,
    model: String,
    api: Api,
    dialect: ClientDialect,
    key: Option<ApiKey>,
    stall: Duration,
    ignore_eos: bool,
    /// The sampling temperature of every request.
    temperature: f64,
    /// `workload.tokenizer`: prompts are counted here, never with the engine's `/tokenize`.
    local: Option<Arc<local::LocalTokenizer>>,
    /// Another transport in place of the network (tests).
    transport: Option<Arc<dyn Generate>>,
    /// A server in this process, answering every request in place of the network.
    inner: Option<Arc<dyn exchange::Exchange>>,
    /// Images after the text of every chat prompt (`workload.images`).
    images: Option<attach::Images>,
    /// The drafts the responses reported, as they ended (shared by the clones).
    drafts: Arc<Drafts>,
}

/// A reqwest client builder for any endpoint this tool reads. reqwest is built without a
/// TLS provider of its own, and building a client without one panics, so rustls's ring
/// provider is installed first (once per process) for https endpoints.
pub fn http_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

impl Client {
    /// A client of the engine `settings` describe, with a pool of `settings.pool`
    /// connections.
    pub fn new(settings: Settings) -> Result<Client, ApiError> {
        let pool = settings.pool;
        let http = http_builder()
            .http1_only()
            .no_proxy()
            .pool_max_idle_per_host(pool.max(1))
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .build()
            .map_err(ApiError::Build)?;
        let list = std::iter::once(&settings.base)
            .chain(&settings.others)
            .map(|b| Target::new(b, pool, false))
            .collect();
        let mix = adapters::Mix::new(&settings.adapters, settings.adapter_seed).map(Arc::new);
        let targets = Arc::new(Targets::new(list, settings.balance).with_mix(mix));
        Ok(Client {
            http,
            base: settings.base.trim_end_matches('/').to_string(),
            targets,
            model: settings.model,
            api: settings.api,
            dialect: settings.dialect,
            key: settings.key,
            stall: settings.stall,
            // Hosted APIs refuse `ignore_eos`: their output lengths vary and are recorded.
            ignore_eos: settings.ignore_eos && settings.dialect != ClientDialect::Hosted,
            temperature: settings.temperature.max(0.0),
            local: None,
            transport: None,
            inner: None,
            images: None,
            drafts: Arc::default(),
        })
    }

    /// This client sending every request (generation and informational) to `server`, a
    /// server in this process, instead of over the network.
    pub fn in_process(mut self, server: Arc<dyn exchange::Exchange>) -> Client {
        let list = self
            .targets
            .list
            .iter()
            .map(|t| Target::new(&t.base, 1, true));
        let mix = self.targets.mix.clone();
        self.targets = Arc::new(Targets::new(list.collect(), Balance::default()).with_mix(mix));
        self.inner = Some(server);
        self
    }

    /// The servers generation requests go to, in order (`by_endpoint`).
    pub fn endpoints(&self) -> Vec<String> {
        self.targets.list.iter().map(|t| t.base.clone()).collect()
    }

    /// The adapters requests are spread over (`workload.adapters`), in the mix's order
    /// (`by_adapter`); empty without a mix.
    pub fn adapters(&self) -> Vec<String> {
        self.targets
            .mix
            .as_ref()
            .map(|m| m.names().to_vec())
            .unwrap_or_default()
    }

    /// A client of server `index` alone (its pool shared): its readiness, its metrics.
    pub fn endpoint(&self, index: usize) -> Client {
        let mut one = self.clone();
        if let Some(t) = self.targets.list.get(index) {
            one.base.clone_from(&t.base);
            one.targets = Arc::new(Targets::new(vec![t.alone()], Balance::default()));
        }
        one
    }

    /// The server for the next generation request, counted in flight there until the
    /// route is dropped.
    pub fn route(&self) -> Route {
        Route::pick(&self.targets)
    }

    /// A route to server `index` (a conversation's later turns keep to their server, whose
    /// prefix cache holds the conversation so far).
    pub fn route_to(&self, index: usize) -> Route {
        Route::to(&self.targets, index)
    }

    /// The drafts the responses reported (llama.cpp's timings), as they ended.
    pub fn drafts(&self) -> Arc<Drafts> {
        self.drafts.clone()
    }

    /// Whether generation requests go to the chat endpoint (with messages).
    pub fn chat(&self) -> bool {
        self.api == Api::Chat
    }

    /// Whether requests go to a server in this process.
    pub fn is_in_process(&self) -> bool {
        self.inner.is_some()
    }

    /// Wait until a server in this process has no request of an earlier cell in flight
    /// ([`exchange::Exchange::settle`]); at once for a server over the network, which
    /// aborts a request its client dropped by itself.
    pub async fn settle(&self) {
        if let Some(server) = &self.inner {
            server.settle().await;
        }
    }

    /// This client sending its generation requests through `transport` instead of the
    /// network, and counting prompt tokens as it does.
    pub fn with_transport(mut self, transport: Arc<dyn Generate>) -> Client {
        self.transport = Some(transport);
        self
    }

    /// This client adding `maker`'s images after the text of every chat prompt it prepares.
    pub fn with_images(mut self, maker: Option<Arc<dyn Attach>>) -> Client {
        self.images = maker.map(|maker| attach::Images {
            maker,
            tally: Arc::default(),
        });
        self
    }

    /// What the requests with images sent and were charged since the last call (zero
    /// without images); the tally starts again from zero.
    pub fn take_images(&self) -> ImageTally {
        self.images
            .as_ref()
            .map(attach::Images::take)
            .unwrap_or_default()
    }

    /// This client counting prompt tokens with `local` instead of the engine's `/tokenize`.
    pub fn with_tokenizer(mut self, local: Option<Arc<local::LocalTokenizer>>) -> Client {
        self.local = local;
        self
    }

    fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        let mut rb = self.http.post(format!("{}{path}", self.base)).json(body);
        if let Some(key) = &self.key {
            rb = rb.bearer_auth(key.expose());
        }
        rb
    }
}
