//! The unit tests' random numbers: SplitMix64 (Steele, Lea and Flood 2014), small, seedable and
//! the same on every platform, so a failing case can be replayed from its seed.

/// The next number in `[0, 1)` (24 bits) from the SplitMix64 state `state`.
pub(crate) fn unit(state: &mut u64) -> f32 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
}
