//! splitmix64: a small seedable generator for what must be reproducible
//! from a printed seed (the bench's plans, the property and chaos tests).
//! Never for secrets or tokens: those come from the OS (`getrandom`).

#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// An index into something `len` long.
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_replays_the_same_numbers_within_bounds() {
        let (mut a, mut b) = (SplitMix64::new(42), SplitMix64::new(42));
        let first: Vec<u64> = (0..100).map(|_| a.below(7)).collect();
        let again: Vec<u64> = (0..100).map(|_| b.below(7)).collect();
        assert_eq!(first, again);
        assert!(first.iter().all(|&n| n < 7));
        assert!((0..7).all(|n| first.contains(&n)), "{first:?}");
        assert_eq!(SplitMix64::new(1).below(0), 0);
        assert_eq!(*SplitMix64::new(9).pick(&["only"]), "only");
    }
}
