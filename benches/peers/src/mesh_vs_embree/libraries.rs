//! The libraries behind one interface ([`Tracer`]), and the timed passes over a ray file
//! ([`Passes`]).

use std::hint::black_box;
use std::time::{Duration, Instant};

use cgmath::Vector3;
use embree::{CommittedScene, IntersectContext, RayHit};
use nalgebra::{Point3, Vector3 as NVec3};
use slabtree::MeshBvh;

use crate::RawRay;

/// A ray tracer over one mesh. `closest` gives `(t, triangle)`.
pub(crate) trait Tracer: Sync {
    /// `coherent`: whether the run of [`HINT_RUN`] rays this one belongs to was judged coherent
    /// ([`slabtree::RayCoherence::of_rays`], once per ray file, outside the timed passes). slabtree
    /// takes it as its query hint, Embree as its intersect context's coherent or incoherent flag;
    /// the other libraries have no such hint.
    fn closest(&self, r: &RawRay, coherent: bool) -> Option<(f32, u32)>;
    fn occluded(&self, r: &RawRay, coherent: bool) -> bool;
}

/// Rays judged coherent or not together: as in slabtree's batch queries, a few scan lines of a
/// camera's image.
pub(crate) const HINT_RUN: usize = 256;

/// Each run of [`HINT_RUN`] rays of `rays` judged coherent or not.
pub(crate) fn judge_runs(rays: &[RawRay]) -> Vec<bool> {
    rays.chunks(HINT_RUN)
        .map(|run| {
            let dir = |i: usize| glam::Vec3A::new(run[i][4], run[i][5], run[i][6]);
            slabtree::RayCoherence::of_directions(run.len(), dir) == slabtree::RayCoherence::Coherent
        })
        .collect()
}

/// Per-ray answers of one library on one ray set.
pub(crate) enum Outcome {
    Closest(Vec<Option<(f32, u32)>>),
    Occluded(Vec<bool>),
}

impl Outcome {
    pub(crate) fn count(&self) -> usize {
        match self {
            Outcome::Closest(v) => v.iter().filter(|h| h.is_some()).count(),
            Outcome::Occluded(v) => v.iter().filter(|&&o| o).count(),
        }
    }
    pub(crate) fn hit(&self, i: usize) -> bool {
        match self {
            Outcome::Closest(v) => v[i].is_some(),
            Outcome::Occluded(v) => v[i],
        }
    }
    pub(crate) fn t_prim(&self, i: usize) -> Option<(f32, u32)> {
        match self {
            Outcome::Closest(v) => v[i],
            Outcome::Occluded(_) => None,
        }
    }
    pub(crate) fn describe(&self, i: usize) -> String {
        match self {
            Outcome::Closest(v) => match v[i] {
                Some((t, p)) => format!("t={t:.7e} tri={p}"),
                None => "miss".to_string(),
            },
            Outcome::Occluded(v) => (if v[i] { "occluded" } else { "clear" }).to_string(),
        }
    }
}

/// Type-erased passes, monomorphised per tracer so the per-ray calls are static.
pub(crate) trait Passes: Sync {
    /// One timed pass: the hit (or occluded) count and the wall time. `coherent` holds each run
    /// of [`HINT_RUN`] rays' judgement ([`judge_runs`]).
    fn pass(&self, rays: &[RawRay], coherent: &[bool], shadow: bool) -> (usize, Duration);
    /// One pass that keeps every answer.
    fn record(&self, rays: &[RawRay], coherent: &[bool], shadow: bool) -> Outcome;
}

impl<T: Tracer> Passes for T {
    #[inline(never)]
    fn pass(&self, rays: &[RawRay], coherent: &[bool], shadow: bool) -> (usize, Duration) {
        let start = Instant::now();
        let mut n = 0usize;
        for (run, &c) in rays.chunks(HINT_RUN).zip(coherent) {
            if shadow {
                for r in run {
                    n += self.occluded(r, c) as usize;
                }
            } else {
                for r in run {
                    n += self.closest(r, c).is_some() as usize;
                }
            }
        }
        (n, start.elapsed())
    }

    fn record(&self, rays: &[RawRay], coherent: &[bool], shadow: bool) -> Outcome {
        let runs = || rays.chunks(HINT_RUN).zip(coherent);
        if shadow {
            Outcome::Occluded(runs().flat_map(|(run, &c)| run.iter().map(move |r| self.occluded(r, c))).collect())
        } else {
            Outcome::Closest(runs().flat_map(|(run, &c)| run.iter().map(move |r| self.closest(r, c))).collect())
        }
    }
}

/// The shared ray files hold valid rays only (finite, ordered ranges), so slabtree never refuses
/// one here.
pub(crate) const VALID: &str = "the shared rays are valid";

pub(crate) fn slab_ray(r: &RawRay) -> slabtree::Ray {
    slabtree::Ray::new(glam::Vec3A::new(r[0], r[1], r[2]), glam::Vec3A::new(r[4], r[5], r[6])).with_range(r[3], r[7])
}

pub(crate) struct Slab(pub(crate) MeshBvh);

pub(crate) fn slab_hint(coherent: bool) -> slabtree::RayCoherence {
    if coherent { slabtree::RayCoherence::Coherent } else { slabtree::RayCoherence::Incoherent }
}

pub(crate) fn embree_context(coherent: bool) -> IntersectContext {
    if coherent { IntersectContext::coherent() } else { IntersectContext::incoherent() }
}

impl Tracer for Slab {
    #[inline]
    fn closest(&self, r: &RawRay, coherent: bool) -> Option<(f32, u32)> {
        // Each computed field goes to `black_box` on its own, as a caller would store it: the
        // whole `Result<Option<Hit>>` through `black_box` made the compiler copy it between stack
        // slots with loads wider than the stores that wrote it, and time those stalls as ours.
        // The distance too: a timed pass only counts hits, and without it the compiler dropped
        // the refinement of `t` in f64, work a caller pays for (58 instructions per bunny random
        // ray, callgrind).
        let h = self
            .0
            .intersect_with(
                &slab_ray(r),
                &mut slabtree::AcceptAll,
                slabtree::RayOptions { coherence: slab_hint(coherent) },
            )
            .expect(VALID)?;
        black_box(h.t);
        black_box((h.u, h.v));
        black_box(h.normal);
        Some((h.t, h.triangle))
    }
    #[inline]
    fn occluded(&self, r: &RawRay, coherent: bool) -> bool {
        self.0
            .occluded_with(
                &slab_ray(r),
                &mut slabtree::AcceptAll,
                slabtree::RayOptions { coherence: slab_hint(coherent) },
            )
            .expect(VALID)
    }
}

pub(crate) fn embree_ray(r: &RawRay) -> embree::Ray {
    embree::Ray::segment(Vector3::new(r[0], r[1], r[2]), Vector3::new(r[4], r[5], r[6]), r[3], r[7])
}

pub(crate) struct Embree<'a>(pub(crate) CommittedScene<'a>);

impl Embree<'_> {
    #[inline]
    pub(crate) fn intersect(&self, ray: embree::Ray, coherent: bool) -> Option<(f32, u32)> {
        let mut ctx = embree_context(coherent);
        let mut rh = RayHit::new(ray);
        self.0.intersect(&mut ctx, &mut rh);
        rh.hit.hit().then_some((rh.ray.tfar, rh.hit.primID))
    }
    #[inline]
    pub(crate) fn occlude(&self, mut ray: embree::Ray, coherent: bool) -> bool {
        let mut ctx = embree_context(coherent);
        self.0.occluded(&mut ctx, &mut ray);
        // rtcOccluded1 sets tfar to -inf on a hit.
        ray.tfar == f32::NEG_INFINITY
    }
}

impl Tracer for Embree<'_> {
    #[inline]
    fn closest(&self, r: &RawRay, coherent: bool) -> Option<(f32, u32)> {
        self.intersect(embree_ray(r), coherent)
    }
    #[inline]
    fn occluded(&self, r: &RawRay, coherent: bool) -> bool {
        self.occlude(embree_ray(r), coherent)
    }
}

pub(crate) struct Obvhs {
    pub(crate) bvh: obvhs::cwbvh::CwBvh,
    /// Triangles in the BVH's primitive order.
    pub(crate) tris: Vec<obvhs::triangle::Triangle>,
}

pub(crate) fn obvhs_ray(r: &RawRay) -> obvhs::ray::Ray {
    obvhs::ray::Ray::new([r[0], r[1], r[2]].into(), [r[4], r[5], r[6]].into(), r[3], r[7])
}

impl Tracer for Obvhs {
    #[inline]
    fn closest(&self, r: &RawRay, _: bool) -> Option<(f32, u32)> {
        let mut hit = obvhs::ray::RayHit::none();
        let tris = &self.tris;
        if self.bvh.ray_traverse(obvhs_ray(r), &mut hit, |ray, id| tris[id].intersect(ray)) {
            Some((hit.t, self.bvh.primitive_indices[hit.primitive_id as usize]))
        } else {
            None
        }
    }
    #[inline]
    fn occluded(&self, r: &RawRay, _: bool) -> bool {
        let tris = &self.tris;
        !self.bvh.ray_traverse_miss(obvhs_ray(r), |ray, id| tris[id].intersect(ray))
    }
}

pub(crate) struct Parry(pub(crate) parry3d::shape::TriMesh);

pub(crate) fn parry_ray(r: &RawRay) -> parry3d::query::Ray {
    use parry3d::math::Vector;
    parry3d::query::Ray::new(Vector::new(r[0], r[1], r[2]), Vector::new(r[4], r[5], r[6]))
}

impl Tracer for Parry {
    #[inline]
    fn closest(&self, r: &RawRay, _: bool) -> Option<(f32, u32)> {
        use parry3d::query::RayCast;
        // parry's docs: `Real::MAX` for an unbounded ray.
        let max_toi = if r[7].is_finite() { r[7] } else { f32::MAX };
        let hit = self.0.cast_ray_and_get_normal(&parry3d::math::Pose::IDENTITY, &parry_ray(r), max_toi, true);
        black_box(hit).map(|h| (h.time_of_impact, h.subshape))
    }
    #[inline]
    fn occluded(&self, r: &RawRay, _: bool) -> bool {
        use parry3d::query::RayCast;
        self.0.intersects_ray(&parry3d::math::Pose::IDENTITY, &parry_ray(r), r[7])
    }
}

/// A triangle as a `bvh` crate shape.
pub(crate) struct BvhTri {
    pub(crate) v: [Point3<f32>; 3],
    pub(crate) index: u32,
    pub(crate) node: usize,
}

impl bvh::aabb::Bounded<f32, 3> for BvhTri {
    fn aabb(&self) -> bvh::aabb::Aabb<f32, 3> {
        bvh::aabb::Aabb::empty().grow(&self.v[0]).grow(&self.v[1]).grow(&self.v[2])
    }
}

impl bvh::bounding_hierarchy::BHShape<f32, 3> for BvhTri {
    fn set_bh_node_index(&mut self, index: usize) {
        self.node = index;
    }
    fn bh_node_index(&self) -> usize {
        self.node
    }
}

/// Möller–Trumbore without culling or epsilon: `t` in `[tmin, tmax]`.
#[inline]
pub(crate) fn moller_trumbore(
    o: &Point3<f32>,
    d: &NVec3<f32>,
    v: &[Point3<f32>; 3],
    tmin: f32,
    tmax: f32,
) -> Option<f32> {
    let e1 = v[1] - v[0];
    let e2 = v[2] - v[0];
    let p = d.cross(&e2);
    let det = e1.dot(&p);
    if det == 0.0 {
        return None;
    }
    let inv = 1.0 / det;
    let s = o - v[0];
    let u = s.dot(&p) * inv;
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let q = s.cross(&e1);
    let w = d.dot(&q) * inv;
    if w < 0.0 || u + w > 1.0 {
        return None;
    }
    let t = e2.dot(&q) * inv;
    (t >= tmin && t <= tmax).then_some(t)
}

pub(crate) struct BvhCrate {
    pub(crate) bvh: bvh::bvh::Bvh<f32, 3>,
    pub(crate) shapes: Vec<BvhTri>,
}

pub(crate) fn bvh_ray(r: &RawRay) -> bvh::ray::Ray<f32, 3> {
    // Built field by field: `Ray::new` would renormalise the stored direction, and `t` is measured
    // in units of the stored vector.
    bvh::ray::Ray {
        origin: Point3::new(r[0], r[1], r[2]),
        direction: NVec3::new(r[4], r[5], r[6]),
        inv_direction: NVec3::new(1.0 / r[4], 1.0 / r[5], 1.0 / r[6]),
    }
}

impl Tracer for BvhCrate {
    #[inline]
    fn closest(&self, r: &RawRay, _: bool) -> Option<(f32, u32)> {
        let ray = bvh_ray(r);
        let mut best: Option<(f32, u32)> = None;
        let mut tmax = r[7];
        for tri in self.bvh.traverse_iterator(&ray, &self.shapes) {
            if let Some(t) = moller_trumbore(&ray.origin, &ray.direction, &tri.v, r[3], tmax) {
                tmax = t;
                best = Some((t, tri.index));
            }
        }
        best
    }
    #[inline]
    fn occluded(&self, r: &RawRay, _: bool) -> bool {
        let ray = bvh_ray(r);
        self.bvh
            .traverse_iterator(&ray, &self.shapes)
            .any(|tri| moller_trumbore(&ray.origin, &ray.direction, &tri.v, r[3], r[7]).is_some())
    }
}

/// Whether obvhs, parry3d and bvh take part (not with `MESH_LIBS=embree`).
pub(crate) fn rust_peers() -> bool {
    std::env::var("MESH_LIBS").map_or(true, |v| v != "embree")
}

/// A library left out of this run (`MESH_LIBS`): no time, no hits.
pub(crate) struct Skipped;

impl Tracer for Skipped {
    fn closest(&self, _: &RawRay, _: bool) -> Option<(f32, u32)> {
        None
    }
    fn occluded(&self, _: &RawRay, _: bool) -> bool {
        false
    }
}
