//! The simulated KV cache: a fixed number of blocks, private blocks per request, and a
//! prefix cache of full prompt blocks keyed by a chained hash of their tokens. Blocks that no
//! running request references stay cached until evicted, least recently used first — how
//! vLLM's automatic prefix caching behaves.

use std::collections::{BTreeSet, HashMap};

/// Token positions per block: vLLM's default on GPUs (its CPU build uses 128).
pub const BLOCK_TOKENS: usize = 16;

/// The hash a sequence's first block chains from.
pub const CHAIN_START: u64 = 0xcbf2_9ce4_8422_2325;

/// The chained hashes of the full blocks of `block` tokens of a prompt.
pub fn block_hashes(tokens: &[u32], block: usize) -> Vec<u64> {
    chain(CHAIN_START, tokens, block)
}

/// The chained hashes of the full blocks of `block` tokens of `tokens`, which follow the
/// block hashed `prev`.
pub fn chain(prev: u64, tokens: &[u32], block: usize) -> Vec<u64> {
    let mut prev = prev;
    tokens
        .chunks_exact(block.max(1))
        .map(|block| {
            let mut h = prev;
            for &t in block {
                h ^= u64::from(t);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
            prev = h;
            h
        })
        .collect()
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    refs: u32,
    tick: u64,
}

/// Block accounting for the whole engine.
#[derive(Debug)]
pub struct Kv {
    /// Tokens per block.
    block: usize,
    total: usize,
    private: usize,
    cached: HashMap<u64, Entry>,
    /// Unreferenced cached blocks by last use: the eviction order.
    idle: BTreeSet<(u64, u64)>,
    tick: u64,
    /// Prompt tokens looked up in the prefix cache.
    pub queries: u64,
    /// Prompt tokens found there.
    pub hits: u64,
}

impl Kv {
    /// A cache of `tokens` token slots in blocks of `block` tokens.
    pub fn new(tokens: u64, block: usize) -> Kv {
        let block = block.max(1);
        let total = usize::try_from(tokens).unwrap_or(usize::MAX) / block;
        Kv {
            block,
            total,
            private: 0,
            cached: HashMap::new(),
            idle: BTreeSet::new(),
            tick: 0,
            queries: 0,
            hits: 0,
        }
    }

    /// Tokens per block.
    pub fn block(&self) -> usize {
        self.block
    }

    /// Blocks in all.
    pub fn blocks(&self) -> usize {
        self.total
    }

    /// Blocks neither private nor cached.
    fn free(&self) -> usize {
        self.total.saturating_sub(self.private + self.cached.len())
    }

    /// Fraction of blocks held by running requests (unreferenced cached blocks count as free).
    pub fn usage(&self) -> f64 {
        let referenced = self.cached.len() - self.idle.len();
        (self.private + referenced) as f64 / self.total.max(1) as f64
    }

    /// Make `n` blocks free, evicting idle cached blocks; false when it cannot.
    fn make_room(&mut self, n: usize) -> bool {
        while self.free() < n {
            let Some(&(tick, hash)) = self.idle.iter().next() else {
                return false;
            };
            self.idle.remove(&(tick, hash));
            self.cached.remove(&hash);
        }
        true
    }

    /// The number of leading blocks of `hashes` already cached.
    pub fn hit_blocks(&self, hashes: &[u64]) -> usize {
        hashes
            .iter()
            .take_while(|h| self.cached.contains_key(h))
            .count()
    }

    /// Admit a prompt: reference its first `hit` cached blocks and allocate `new_blocks`
    /// private ones. False (and nothing changed) when the blocks cannot be had.
    pub fn admit(&mut self, hashes: &[u64], hit: usize, new_blocks: usize) -> bool {
        // Referencing idle blocks takes them out of the eviction pool first.
        for h in &hashes[..hit] {
            self.reference(*h);
        }
        if self.make_room(new_blocks) {
            self.private += new_blocks;
            true
        } else {
            for h in &hashes[..hit] {
                self.release(*h);
            }
            false
        }
    }

    /// Count a lookup of `tokens` prompt tokens of which `hit` were cached.
    pub fn record_query(&mut self, tokens: usize, hit: usize) {
        self.queries += tokens as u64;
        self.hits += hit as u64;
    }

    /// One more private block for a growing request; false when none can be had.
    pub fn grow(&mut self) -> bool {
        if self.make_room(1) {
            self.private += 1;
            true
        } else {
            false
        }
    }

    /// A prompt's blocks `from..` were computed: they become cached, referenced by the request.
    pub fn publish(&mut self, hashes: &[u64], from: usize) {
        for &h in &hashes[from..] {
            self.private = self.private.saturating_sub(1);
            if self.cached.contains_key(&h) {
                self.reference(h);
            } else {
                self.tick += 1;
                self.cached.insert(
                    h,
                    Entry {
                        refs: 1,
                        tick: self.tick,
                    },
                );
            }
        }
    }

    /// A request ends: its private blocks are freed, its cached ones released.
    pub fn finish(&mut self, referenced: &[u64], private: usize) {
        self.private = self.private.saturating_sub(private);
        // Tail first, so eviction takes a prompt's last blocks before its prefix.
        for &h in referenced.iter().rev() {
            self.release(h);
        }
    }

    /// Keep blocks a finished request computed beyond its prompt (its answer) in the prefix
    /// cache, unreferenced, as far as there is room for them.
    pub fn keep(&mut self, hashes: &[u64]) {
        for &h in hashes {
            if self.cached.contains_key(&h) {
                continue;
            }
            if !self.make_room(1) {
                return;
            }
            self.tick += 1;
            self.cached.insert(
                h,
                Entry {
                    refs: 0,
                    tick: self.tick,
                },
            );
            self.idle.insert((self.tick, h));
        }
    }

    fn reference(&mut self, h: u64) {
        if let Some(e) = self.cached.get_mut(&h) {
            if e.refs == 0 {
                self.idle.remove(&(e.tick, h));
            }
            e.refs += 1;
        }
    }

    fn release(&mut self, h: u64) {
        self.tick += 1;
        let tick = self.tick;
        if let Some(e) = self.cached.get_mut(&h) {
            e.refs = e.refs.saturating_sub(1);
            if e.refs == 0 {
                e.tick = tick;
                self.idle.insert((tick, h));
            }
        }
    }

    /// Blocks a request needs that can be had now (free or evictable).
    #[cfg(test)]
    fn available(&self) -> usize {
        self.free() + self.idle.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_reuse_and_eviction() {
        let mut kv = Kv::new(10 * BLOCK_TOKENS as u64, BLOCK_TOKENS);
        let a = block_hashes(&[1; 64], BLOCK_TOKENS);
        let b = block_hashes(&[2; 64], BLOCK_TOKENS);
        assert_eq!(a.len(), 4);
        assert!(kv.admit(&a, 0, 5));
        kv.publish(&a, 0);
        kv.finish(&a, 1);
        assert_eq!(kv.hit_blocks(&a), 4, "finished prompts stay cached");
        assert!(kv.usage() < 1e-9);
        // b needs 8 blocks: 6 free + 2 evicted from a's idle blocks.
        assert!(kv.admit(&b, 0, 8));
        assert_eq!(kv.hit_blocks(&a), 2);
        assert!(!kv.admit(&a, 2, 3), "no room left");
        assert_eq!(
            kv.available(),
            2,
            "the refused request's hits are idle again"
        );
    }
}
