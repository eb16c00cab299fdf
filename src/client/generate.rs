//! The seam between the measuring code and the network: [`Generate`] sends one prepared
//! request and reports each token-bearing chunk with its arrival time. The client's network
//! paths (the lean HTTP/1.1 one for `http://` engines, reqwest for `https://`) are what a
//! run uses; a [`Client`](super::Client) given another implementation
//! ([`Client::with_transport`](super::Client::with_transport)), such as
//! [`Scripted`](super::scripted::Scripted), drives the same measuring code without a server,
//! on tokio's clock, so that tests can pause time.

use super::{Chunk, Outcome, Prepared};
use std::future::Future;
use std::pin::Pin;

/// A boxed future of one request's outcome.
pub type Pending<'a> = Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;

/// Sends one prepared streamed request.
pub trait Generate: Send + Sync + std::fmt::Debug {
    /// Send `req`; `on_chunk` sees every token-bearing chunk as it arrives.
    fn generate<'a>(
        &'a self,
        req: &'a Prepared,
        on_chunk: &'a mut (dyn FnMut(Chunk) + Send),
    ) -> Pending<'a>;

    /// The prompt tokens of `text`, where this transport counts them itself (a scripted
    /// one); `None` lets the client ask the engine or its local tokenizer.
    fn count_tokens(&self, text: &str) -> Option<u64> {
        let _ = text;
        None
    }
}
