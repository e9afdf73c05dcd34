//! The command's random draws, on the test kit's SplitMix64 (`slabtree_testkit::rng::Rng`), so
//! that generated scenes and rays are the same on every run and every machine. The draws here are
//! the ones the built-in scene and the generated rays were made with, which the test kit does not
//! draw the same way: an index below `n` by multiply-shift (the kit's is a remainder), a normal
//! sample, and a seed hashed from a stream's index.

pub use slabtree_testkit::rng::Rng;

/// A generator for stream `index` (of many, e.g. one per pixel): the seed is the index hashed
/// (MurmurHash3's finaliser), so that neighbouring streams are not shifted copies of one another.
pub fn hashed(index: u64) -> Rng {
    let mut z = index ^ 0x2545_F491_4F6C_DD1D;
    z = (z ^ (z >> 33)).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    z = (z ^ (z >> 33)).wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    Rng(z ^ (z >> 33))
}

/// Uniform in `0..n` (`n > 0`): the high 32 bits scaled by `n` (Lemire's multiply-shift).
pub fn below(rng: &mut Rng, n: u32) -> u32 {
    (((rng.next() >> 32) * u64::from(n)) >> 32) as u32
}

/// A standard normal sample (Box–Muller).
pub fn normal(rng: &mut Rng) -> f32 {
    let u1 = 1.0 - rng.unit(); // (0, 1]
    let u2 = rng.unit();
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::{Rng, below, hashed};

    #[test]
    fn ranges() {
        let mut r = Rng(7);
        for _ in 0..10_000 {
            let x = r.unit();
            assert!((0.0..1.0).contains(&x));
            assert!(below(&mut r, 5) < 5);
        }
    }

    /// The draws the built-in scene was made with, pinned to values computed apart from this
    /// code (SplitMix64 and MurmurHash3's finaliser by hand): a change of generator would change
    /// the scene, its picture and every figure measured on it.
    #[test]
    fn the_draws_are_the_ones_the_scene_was_made_with() {
        assert_eq!(Rng(0x51ab_7233).next(), 0xb2d3_48b3_b7db_3b1e);
        assert_eq!(below(&mut Rng(1), 6), 3);
        assert_eq!(hashed(3).0, 0xba1f_0359_8dd8_3004);
    }
}
