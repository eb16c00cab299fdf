//! Sending one request and reading its stream: writing it (retrying a stale pooled
//! connection), the stall timeout over the reads, the outcome's failure kinds, and the
//! tallies a request adds to (images, speculative drafts).

use super::h1::WireError;
use super::wire::{Events, Wire};
use super::{ApiKey, Chunk, Client, DraftSum, Failure, Outcome, Prepared, Route, SEND_TRIES};
use super::{describe, exchange, refusal};
use tokio::time::Instant;

impl Client {
    /// Write the request. A pooled keep-alive connection the server has closed in the
    /// meantime (llama.cpp's server closes idle ones, and each after a number of requests)
    /// fails before any response byte; that is retried, with the clock restarted, up to
    /// [`SEND_TRIES`] times, as the next pooled connection may be as stale as the first.
    async fn send<'a>(
        &'a self,
        to: &'a Route,
        req: &Prepared,
        out: &mut Outcome,
    ) -> Result<Wire<'a>, Failure> {
        let swapped = to
            .adapter_name()
            .map(|name| req.with_model(&self.model, name));
        let req = swapped.as_ref().unwrap_or(req);
        if let Some(server) = &self.inner {
            let post = exchange::request(axum::http::Method::POST, req.path, req.whole());
            out.sent = Instant::now();
            return match tokio::time::timeout(self.stall, server.exchange(post)).await {
                Ok(r) => Ok(Wire::InProcess(exchange::Reading::new(r))),
                Err(_) => Err(Failure::Stall),
            };
        }
        let Some(target) = to.target() else {
            return Err(Failure::Connect);
        };
        let Some(pool) = &target.lean else {
            return self.send_reqwest(&target.base, req, out).await;
        };
        let head = pool.post_head(req.path, req.len(), self.key.as_ref().map(ApiKey::expose));
        // A stale idle connection costs no try: the pool shrinks with each.
        let mut tries = 0;
        while tries < SEND_TRIES {
            let conn = match pool.take().await {
                Ok(c) => c,
                Err(WireError::Refused) => return Err(Failure::Refused),
                Err(_) => return Err(Failure::Connect),
            };
            // TTFT starts just before the request is written: a new connection's set-up
            // is not part of it.
            out.sent = Instant::now();
            tries += usize::from(!conn.reused);
            match tokio::time::timeout(self.stall, conn.exchange(&head, req.parts())).await {
                Err(_) => return Err(Failure::Stall),
                Ok(Ok(r)) => return Ok(Wire::Lean(r, pool)),
                Ok(Err(WireError::Stale)) => {}
                Ok(Err(WireError::Refused)) => return Err(Failure::Refused),
                Ok(Err(WireError::Disconnect)) => return Err(Failure::Disconnect),
                Ok(Err(_)) if tries < SEND_TRIES => {}
                Ok(Err(_)) => return Err(Failure::Connect),
            }
        }
        Err(Failure::Connect)
    }

    /// [`Client::send`] through reqwest (https engines).
    async fn send_reqwest(
        &self,
        base: &str,
        req: &Prepared,
        out: &mut Outcome,
    ) -> Result<Wire<'_>, Failure> {
        for attempt in 0..SEND_TRIES {
            let mut rb = self
                .http
                .post(format!("{base}{}", req.path))
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(req.whole());
            if let Some(key) = &self.key {
                rb = rb.bearer_auth(key.expose());
            }
            out.sent = Instant::now();
            match tokio::time::timeout(self.stall, rb.send()).await {
                Err(_) => return Err(Failure::Stall),
                Ok(Ok(r)) => return Ok(Wire::Reqwest(r, None)),
                Ok(Err(e))
                    if attempt + 1 < SEND_TRIES
                        && !e.is_timeout()
                        && classify(&e) != Failure::Refused =>
                {
                    continue;
                }
                Ok(Err(e)) => return Err(classify(&e)),
            }
        }
        Err(Failure::Connect)
    }

    /// Send one prepared streamed request to the server the balance picks; `on_chunk` sees
    /// every token-bearing chunk as it arrives, on the task that reads the stream.
    pub async fn generate(&self, req: &Prepared, on_chunk: impl FnMut(Chunk) + Send) -> Outcome {
        let to = self.route();
        self.generate_via(&to, req, on_chunk).await
    }

    /// [`Client::generate`] to the server `to` names ([`Client::route`]). A request with
    /// images is tallied ([`Client::take_images`]), and its `usage.prompt_tokens` (text and
    /// images) kept there, not in the outcome: the outcome's is compared with the text's
    /// exact length.
    pub async fn generate_via(
        &self,
        to: &Route,
        req: &Prepared,
        on_chunk: impl FnMut(Chunk) + Send,
    ) -> Outcome {
        let images = self
            .images
            .as_ref()
            .filter(|_| req.path == "/v1/chat/completions");
        if let Some(images) = images {
            images.sent(req.images);
        }
        let mut out = self.exchange(to, req, on_chunk).await;
        if let Some(images) = images.filter(|_| req.images > 0)
            && let Some(usage) = out.usage_prompt.take()
        {
            images.charged(usage);
        }
        out
    }

    async fn exchange(
        &self,
        to: &Route,
        req: &Prepared,
        mut on_chunk: impl FnMut(Chunk) + Send,
    ) -> Outcome {
        if let Some(t) = &self.transport {
            return t.generate(req, &mut on_chunk).await;
        }
        let mut out = Outcome::started(Instant::now());
        let mut wire = match self.send(to, req, &mut out).await {
            Ok(w) if (200..300).contains(&w.status()) => w,
            Ok(w) => return refusal::refused(out, w, self.stall).await,
            Err(f) => {
                // A server that cannot be connected to is left out for a while.
                if matches!(f, Failure::Refused | Failure::Connect) {
                    to.server_down();
                }
                return fail(out, f);
            }
        };
        let mut events = Events::keeping_text(req.keep_text);
        // One timer for the stall timeout, moved on only when it fires: a timer per read
        // would cost a timer-wheel update per chunk.
        let mut at = Instant::now();
        let stall = tokio::time::sleep_until(at + self.stall);
        tokio::pin!(stall);
        loop {
            // What the last read brought (for the lean path, the first time, what came
            // with the response head), then wait for more.
            if let Err(f) = events.take(&mut wire, at, &mut out, &mut on_chunk) {
                return fail(out, f);
            }
            let read = tokio::select! {
                biased;
                read = wire.read() => read,
                () = &mut stall => {
                    if at.elapsed() >= self.stall {
                        return fail(out, Failure::Stall);
                    }
                    stall.as_mut().reset(at + self.stall);
                    continue;
                }
            };
            match read {
                Err(f) => return fail(out, f),
                Ok(false) => break,
                Ok(true) => at = Instant::now(),
            }
        }
        wire.finish();
        if !events.complete() {
            return fail(out, Failure::Disconnect);
        }
        let total = out.usage_completion.unwrap_or(out.counted);
        if let Some((draft, accepted)) = out.drafted {
            let one = DraftSum {
                draft,
                accepted,
                completion: total,
            };
            // When its last bytes came: where a window that closes on them still holds it.
            self.drafts.ended(at, one);
        }
        if self.ignore_eos && total < req.max_tokens && out.failure.is_none() {
            out.failure = Some(Failure::Short);
        }
        out
    }
}

fn fail(mut out: Outcome, f: Failure) -> Outcome {
    out.failure = Some(f);
    out
}

fn classify(e: &reqwest::Error) -> Failure {
    if e.is_timeout() {
        Failure::Stall
    } else if e.is_connect() && describe(e).contains("refused") {
        Failure::Refused
    } else {
        Failure::Connect
    }
}
