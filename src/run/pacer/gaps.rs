//! One request's token times as its chunks arrive: the first and last token-bearing chunk,
//! and each gap between chunks in µs per token of the later chunk — what ITL is made of.
//! Load, replay and session cells keep them the same way.

use crate::client::Chunk;
use tokio::time::Instant;

/// The times of one request's chunks so far.
#[derive(Debug, Default)]
pub struct Gaps {
    first: Option<Instant>,
    last: Option<Instant>,
    gaps: Vec<u32>,
    /// Some chunk's tokens came from the server's usage.
    usage: bool,
}

impl Gaps {
    /// Take one token-bearing chunk.
    pub fn chunk(&mut self, c: &Chunk) {
        self.usage |= c.from_usage;
        match self.last {
            None => self.first = Some(c.at),
            Some(p) => {
                let gap = (c.at - p).as_micros() as u64 / c.tokens.max(1);
                self.gaps.push(gap.min(u64::from(u32::MAX)) as u32);
            }
        }
        self.last = Some(c.at);
    }

    /// The first token-bearing chunk's arrival.
    pub fn first(&self) -> Option<Instant> {
        self.first
    }

    /// The last token-bearing chunk's arrival.
    pub fn last(&self) -> Option<Instant> {
        self.last
    }

    /// The gaps, µs per token, once the request ended with `tokens` (the server's count)
    /// over `counted` (the client's): chunk-counted gaps are scaled when a chunk held several
    /// tokens, which shortens each token's share of the gap.
    pub fn finish(self, tokens: u64, counted: u64) -> Vec<u32> {
        let mut gaps = self.gaps;
        if !self.usage && counted > 0 && tokens > counted {
            let factor = tokens as f64 / counted as f64;
            gaps.iter_mut()
                .for_each(|g| *g = (f64::from(*g) / factor).round() as u32);
        }
        gaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn chunk(at: Instant, tokens: u64, from_usage: bool) -> Chunk {
        Chunk {
            sent: at,
            at,
            tokens,
            from_usage,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn gaps_are_per_token_and_scaled_by_the_servers_count() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        // Usage in every chunk: the later chunk's tokens divide its gap.
        let mut g = Gaps::default();
        g.chunk(&chunk(ms(100), 1, true));
        g.chunk(&chunk(ms(110), 2, true));
        g.chunk(&chunk(ms(116), 1, true));
        assert_eq!((g.first(), g.last()), (Some(ms(100)), Some(ms(116))));
        assert_eq!(g.finish(4, 4), vec![5_000, 6_000]);
        // One token counted per chunk, the server says 6 of 3 chunks: each gap halves.
        let mut g = Gaps::default();
        for at in [100, 110, 130] {
            g.chunk(&chunk(ms(at), 1, false));
        }
        assert_eq!(g.finish(6, 3), vec![5_000, 10_000]);
        // Any chunk with usage: no scaling.
        let mut g = Gaps::default();
        g.chunk(&chunk(ms(100), 1, false));
        g.chunk(&chunk(ms(110), 1, true));
        assert_eq!(g.finish(6, 2), vec![10_000]);
    }
}
