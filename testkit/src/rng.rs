//! The tests' random numbers: SplitMix64 (Steele, Lea and Flood 2014), small, seedable and the
//! same on every platform, so a failing seed reproduces everywhere.

use glam::{Vec3, Vec3A};

/// SplitMix64's output function of state `z` (after its increment): a well-mixed 64-bit hash,
/// usable on its own to key random values by an index (the same values whatever the thread
/// count).
pub fn mix(z: u64) -> u64 {
    let mut z = z;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A SplitMix64 generator; the seed is the state.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)] // an endless generator, not an iterator
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
    /// Uniform in `[0, 1)`, from the top 24 bits.
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Uniform in `[a, b)`.
    pub fn range(&mut self, a: f32, b: f32) -> f32 {
        a + (b - a) * self.unit()
    }
    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// Each coordinate uniform in `[a, b)`.
    pub fn vec(&mut self, a: f32, b: f32) -> Vec3 {
        Vec3::new(self.range(a, b), self.range(a, b), self.range(a, b))
    }
    /// Each coordinate uniform in `[0, 1)`.
    pub fn unit3(&mut self) -> Vec3 {
        Vec3::new(self.unit(), self.unit(), self.unit())
    }
    /// [`Rng::unit3`] as a `Vec3A`.
    pub fn unit3a(&mut self) -> Vec3A {
        Vec3A::new(self.unit(), self.unit(), self.unit())
    }
    /// Each coordinate uniform in `[-half, half)`.
    pub fn in_cube(&mut self, half: f32) -> Vec3A {
        Vec3A::new(self.range(-half, half), self.range(-half, half), self.range(-half, half))
    }
    /// A unit direction uniform on the sphere (Archimedes: `z` uniform in `[-1, 1)`, the
    /// azimuth uniform).
    pub fn on_sphere(&mut self) -> Vec3A {
        let z = self.range(-1.0, 1.0);
        let phi = self.range(0.0, std::f32::consts::TAU);
        let r = (1.0 - z * z).max(0.0).sqrt();
        Vec3A::new(r * phi.cos(), r * phi.sin(), z)
    }
    /// A unit direction (not uniform on the sphere: normalised from the cube).
    pub fn direction(&mut self) -> Vec3 {
        (self.unit3() * 2.0 - Vec3::ONE).normalize_or(Vec3::X)
    }
}

/// A closure of uniform `f32`s in `[0, 1)` from `Rng(seed)`: for tests that draw plain numbers.
pub fn units(seed: u64) -> impl FnMut() -> f32 {
    let mut rng = Rng(seed);
    move || rng.unit()
}

/// `n` independent triangles: each centre uniform in `[-spread, spread)³`, each corner within
/// `size` of it per axis. Overlapping, crossing and near-degenerate triangles all occur.
pub fn triangle_soup(rng: &mut Rng, n: usize, spread: f32, size: f32) -> slabtree::TriMesh {
    let mut p = Vec::new();
    let mut t = Vec::new();
    for i in 0..n as u32 {
        let c = rng.vec(-spread, spread);
        for _ in 0..3 {
            p.push(c + rng.vec(-size, size));
        }
        t.push([3 * i, 3 * i + 1, 3 * i + 2]);
    }
    slabtree::TriMesh::new(p, t).unwrap()
}
