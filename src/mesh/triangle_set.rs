//! [`TriangleSet`]: a set of triangle indices, a bit each, and [`SeenOnRay`], the triangles a
//! query has already reported, for a BVH with spatial splits, where one triangle can sit in
//! several leaves.

/// A set of indices below a bound, a bit each: the triangles listed in a saved BVH's packs, and
/// the triangles a BVH references from more than one leaf ([`MeshBvh`](super::MeshBvh)'s
/// `shared`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TriangleSet(Vec<u64>, usize);

impl TriangleSet {
    /// The empty set of indices below `len`.
    pub(crate) fn new(len: usize) -> TriangleSet {
        TriangleSet(vec![0; len.div_ceil(64)], len)
    }

    /// Adds `i`; `false` when it was there already.
    #[inline]
    pub(crate) fn set(&mut self, i: usize) -> bool {
        let (w, bit) = (&mut self.0[i / 64], 1u64 << (i % 64));
        let new = *w & bit == 0;
        *w |= bit;
        new
    }

    /// Whether `i` is in the set (`false` for an index past its bound).
    #[inline]
    pub(crate) fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// The least index not in the set, if any.
    pub(crate) fn first_clear(&self) -> Option<usize> {
        let (w, word) = self.0.iter().enumerate().find(|(_, w)| **w != u64::MAX)?;
        Some(64 * w + word.trailing_ones() as usize).filter(|&i| i < self.1)
    }

    /// Whether the set holds no index.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The indices listed more than once in `indices` (all below `len`), or `None` when each is
    /// listed once at most.
    pub(crate) fn repeated(len: usize, indices: impl IntoIterator<Item = u32>) -> Option<TriangleSet> {
        let (mut seen, mut twice) = (TriangleSet::new(len), TriangleSet::new(len));
        for i in indices {
            if !seen.set(i as usize) {
                twice.set(i as usize);
            }
        }
        (!twice.is_empty()).then_some(twice)
    }
}

/// The shared triangles (those in several leaves) a query along one ray has already reported,
/// so that it reports each once. A handful fit in place; more go to a vector, which a query
/// allocates only past them.
pub(crate) struct SeenOnRay {
    inline: [u32; 8],
    len: usize,
    more: Vec<u32>,
}

impl SeenOnRay {
    /// Nothing seen yet.
    pub(crate) fn new() -> SeenOnRay {
        SeenOnRay { inline: [0; 8], len: 0, more: Vec::new() }
    }

    /// Adds `triangle`; `false` when it was there already.
    pub(crate) fn first_time(&mut self, triangle: u32) -> bool {
        if self.inline[..self.len].contains(&triangle) || self.more.contains(&triangle) {
            return false;
        }
        if self.len < self.inline.len() {
            self.inline[self.len] = triangle;
            self.len += 1;
        } else {
            self.more.push(triangle);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_indices_and_seen_triangles() {
        assert_eq!(TriangleSet::repeated(10, [1, 2, 3]), None);
        let twice = TriangleSet::repeated(100, [1, 70, 3, 70, 1, 99]).unwrap();
        assert!(twice.contains(1) && twice.contains(70) && !twice.contains(3) && !twice.contains(99));
        assert!(!twice.contains(1000));
        let mut seen = SeenOnRay::new();
        for t in 0..20 {
            assert!(seen.first_time(t * 7));
        }
        for t in 0..20 {
            assert!(!seen.first_time(t * 7));
        }
    }
}
