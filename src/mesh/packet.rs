//! Ray packets: 8 coherent rays traversed together, one node's child bounds tested against all 8
//! rays in `f32x8` (rays across lanes, one child at a time), after Wald, Slusallek, Benthin and
//! Wagner, "Interactive Rendering with Coherent Ray Tracing" (2001), and Embree's packet kernels.
//!
//! Results equal the single-ray path exactly: the slab arithmetic is the same, lane for lane
//! (`(plane - o) * inv`, far times [`FAR_PAD`], NaN-keeping `fast_max` / `fast_min` with the
//! accumulator second), leaves are tested per active ray with the same [`TriRay`] code, and the
//! public hit is built by the same f64 refinement. The one thing a packet changes is the order in
//! which a ray meets the leaves; that only matters when two triangles give exactly the same `t`
//! (the single-ray path keeps the last one it meets), so a ray that sees such a tie is answered
//! again by [`MeshBvh::intersect`].

use wide::f32x8;

use super::bvh::{Hit, MeshBvh, TriangleTest};
use super::triangle::{PackHit, TriPack, TriRay};
use crate::math::{Aabb, BatchError, FAR_PAD, Ray, ray_aabb2, validate_rays};
use crate::wide::{ChildRef, FixedStack};

/// Stack capacity of the packet traversal (same bound as the single-ray stack).
const STACK: usize = 1024;

/// Per-ray state of a packet.
struct Packet {
    ox: [f32x8; 3],
    ix: [f32x8; 3],
    /// All-ones lanes where the direction's sign bit is set on that axis.
    neg: [f32x8; 3],
    tmin: f32x8,
    /// Rays that are valid and reach the root box.
    live: u32,
}

impl Packet {
    fn new(rays: &[Ray; 8], root: &Aabb) -> Packet {
        let mut live = 0u32;
        let mut o = [[0.0f32; 8]; 3];
        let mut inv = [[0.0f32; 8]; 3];
        let mut neg = [[0.0f32; 8]; 3];
        let mut tmin = [0.0f32; 8];
        let ones = f32::from_bits(u32::MAX);
        for (r, ray) in rays.iter().enumerate() {
            if ray.validate().is_ok() && ray_aabb2(ray, root).is_some() {
                live |= 1 << r;
            }
            let (ro, ri, rs) = (ray.origin(), ray.inv_dir(), ray.sign());
            for a in 0..3 {
                o[a][r] = ro[a];
                inv[a][r] = ri[a];
                neg[a][r] = if rs[a] == 1 { ones } else { 0.0 };
            }
            tmin[r] = ray.tmin;
        }
        Packet {
            ox: o.map(f32x8::new),
            ix: inv.map(f32x8::new),
            neg: neg.map(f32x8::new),
            tmin: f32x8::new(tmin),
            live,
        }
    }

    /// The slab test of one child (lane `l` of `node`) against all 8 rays: entry distances and
    /// the mask of rays that hit it within `[tmin, tmax]`.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // `a` indexes the bounds and four per-axis arrays together
    fn test_child(&self, b: &[[[f32; 8]; 3]; 2], l: usize, tmax: f32x8) -> (f32x8, u32) {
        let pad = f32x8::splat(FAR_PAD);
        let mut near = self.tmin;
        let mut far = tmax;
        for a in 0..3 {
            let lo = f32x8::splat(b[0][a][l]);
            let hi = f32x8::splat(b[1][a][l]);
            // The sign bit picks the near plane, as in the single-ray test.
            let np = self.neg[a].bitselect(hi, lo);
            let fp = self.neg[a].bitselect(lo, hi);
            let tn = (np - self.ox[a]) * self.ix[a];
            let tf = (fp - self.ox[a]) * self.ix[a] * pad;
            near = tn.fast_max(near);
            far = tf.fast_min(far);
        }
        (near, (near.simd_le(far) & near.simd_lt(f32x8::splat(f32::INFINITY))).to_bitmask())
    }
}

impl MeshBvh {
    /// [`MeshBvh::intersect`] for 8 rays at once, traversed as a packet: each result equals
    /// `intersect` of the same ray exactly (same triangle, same `t`, `u`, `v`). Worth it for
    /// coherent rays (a pixel tile, a cursor neighbourhood); incoherent rays should use
    /// [`MeshBvh::intersect`] or [`MeshBvh::intersect_batch`]. Refuses the packet when one of
    /// its rays is invalid, naming the first.
    pub fn intersect8(&self, rays: &[Ray; 8]) -> Result<[Option<Hit>; 8], BatchError> {
        validate_rays(rays)?;
        Ok(self.intersect8_unchecked(rays))
    }

    /// [`MeshBvh::occluded`] for 8 rays at once, traversed as a packet; equals `occluded` of each
    /// ray exactly. Invalid rays as in [`MeshBvh::intersect8`].
    pub fn occluded8(&self, rays: &[Ray; 8]) -> Result<[bool; 8], BatchError> {
        validate_rays(rays)?;
        Ok(self.occluded8_unchecked(rays))
    }

    /// [`MeshBvh::intersect8`] of rays not validated: an invalid one hits nothing (the scene's
    /// packets mark unused lanes so).
    pub(crate) fn intersect8_unchecked(&self, rays: &[Ray; 8]) -> [Option<Hit>; 8] {
        let mut out = [None; 8];
        let (best, ties) = self.traverse8::<false>(rays);
        for r in 0..8 {
            if ties & (1 << r) != 0 {
                out[r] = self.intersect_unchecked(&rays[r]);
            } else if let Some((prim, h)) = best[r] {
                out[r] = Some(self.finish(prim, h, &rays[r]));
            }
        }
        out
    }

    /// [`MeshBvh::occluded8`] of rays not validated: an invalid one hits nothing.
    pub(crate) fn occluded8_unchecked(&self, rays: &[Ray; 8]) -> [bool; 8] {
        let (best, _) = self.traverse8::<true>(rays);
        best.map(|b| b.is_some())
    }

    /// The packet traversal. Returns each ray's nearest pack hit and the rays that met an exact
    /// tie between two triangles (to be answered by the single-ray path).
    fn traverse8<const ANY: bool>(&self, rays: &[Ray; 8]) -> ([Option<(u32, PackHit)>; 8], u32) {
        let mut best: [Option<(u32, PackHit)>; 8] = [None; 8];
        let mut ties = 0u32;
        if self.blocks.is_empty() {
            return (best, ties);
        }
        let pk = Packet::new(rays, &self.bounds);
        if pk.live == 0 {
            return (best, ties);
        }
        let watertight = self.options.triangle_test == TriangleTest::Watertight;
        let mut tri: [Option<TriRay>; 8] = [None; 8];
        let mut tmax_a = [f32::NEG_INFINITY; 8];
        for r in 0..8 {
            if pk.live & (1 << r) != 0 {
                let ray = &rays[r];
                tri[r] = Some(TriRay::new(ray.origin().into(), ray.dir().into(), ray.tmin, watertight));
                tmax_a[r] = ray.tmax;
            }
        }
        // Dead rays get tmax = -inf: no box passes `near <= far` for them.
        let mut tmax = f32x8::new(tmax_a);
        let mut done = !pk.live & 0xFF;

        let mut stack = FixedStack::<(ChildRef, f32x8), STACK>::new();
        let mut cur = (ChildRef::node(0), pk.tmin);
        loop {
            let (c, dist) = cur;
            // Rays still inside this entry's range (the single-ray `dist <= tmax`).
            let active = dist.simd_le(tmax).to_bitmask() & !done;
            if active != 0 {
                if c.is_leaf() {
                    // A checked lookup (the single-ray loop reads packs unchecked): an empty slot
                    // holds no pack.
                    let p = self.blocks.pack(c.index()).unwrap_or(&TriPack::EMPTY);
                    let mut m = active;
                    while m != 0 {
                        let r = m.trailing_zeros() as usize;
                        m &= m - 1;
                        let Some(tr) = tri[r].as_ref() else { continue };
                        let h = match self.options.triangle_test {
                            TriangleTest::MollerTrumbore => tr.intersect_mt(p, tmax_a[r]),
                            TriangleTest::Watertight => tr.intersect_watertight(p, tmax_a[r]),
                        };
                        if let Some(mut h) = h {
                            h.pack = c.index();
                            if ANY {
                                best[r] = Some((p.prim[h.lane], h));
                                done |= 1 << r;
                                continue;
                            }
                            if best[r].is_some() && h.t == tmax_a[r] {
                                ties |= 1 << r;
                            }
                            best[r] = Some((p.prim[h.lane], h));
                            tmax_a[r] = h.t;
                        }
                    }
                    if ANY && done == 0xFF {
                        break;
                    }
                    tmax = f32x8::new(tmax_a);
                } else {
                    let node = self.blocks.node(c.index());
                    let mut hits: [(ChildRef, f32x8, f32); 8] = [(ChildRef::EMPTY, pk.tmin, 0.0); 8];
                    let mut n = 0usize;
                    for l in 0..8 {
                        let child = node.child[l];
                        if child.is_empty() {
                            continue;
                        }
                        let (near, mask) = pk.test_child(&node.bounds, l, tmax);
                        let mask = mask & active;
                        if mask != 0 {
                            // Order key: the nearest entry over the rays that hit the child.
                            let d = near.to_array();
                            let mut key = f32::INFINITY;
                            let mut mm = mask;
                            while mm != 0 {
                                let r = mm.trailing_zeros() as usize;
                                mm &= mm - 1;
                                key = key.min(d[r]);
                            }
                            // Rays that missed the child get +inf, so they are inactive there.
                            let near = f32x8::new(std::array::from_fn(|r| {
                                if mask & (1 << r) != 0 { d[r] } else { f32::INFINITY }
                            }));
                            hits[n] = (child, near, key);
                            n += 1;
                        }
                    }
                    if n == 1 {
                        cur = (hits[0].0, hits[0].1);
                        continue;
                    }
                    if n > 1 {
                        // Far to near, so the nearest is popped first.
                        let hs = &mut hits[..n];
                        hs.sort_unstable_by(|a, b| b.2.total_cmp(&a.2));
                        for &(child, near, _) in hs.iter() {
                            stack.push((child, near));
                        }
                    }
                }
            }
            match stack.pop() {
                Some(e) => cur = e,
                None => break,
            }
        }
        (best, ties)
    }
}
