//! Test and benchmark support of slabtree, shared by its tests, benches, examples and peer
//! programs as a crate rather than by file includes:
//!
//! * [`rng`]: the one deterministic random number generator (SplitMix64);
//! * [`triangle`]: the f64 ray–triangle reference;
//! * [`rays`]: coherent primary rays in packet tiles;
//! * [`box2d`]: the reader of the Box2D reference vectors;
//! * [`gltf`]: glTF files written by hand (base64, the binary container);
//! * [`moving_instances`]: the moving-instances workload of the scene example, bench and peer;
//! * [`worlds`]: the broad-phase workloads (a settled pile, a level, a swarm);
//! * at the top level, the brute-force model of a [`Dbvt`]: every query answered by looping over
//!   all live proxies, with the scalar reference tests.
//!
//! Not published: it exists for the repository's own checks.
#![allow(missing_docs)]

pub mod box2d;
pub mod gltf;
pub mod moving_instances;
pub mod rays;
pub mod rng;
pub mod triangle;
pub mod worlds;

use glam::Vec3A;
use slabtree::{
    Aabb, Dbvt, DbvtConfig, Frustum, LeafControl, PairControl, ProxyId, QueryWorkspace, Ray, RayControl, RayLeaf,
    WideDbvt, ray_aabb2,
};

/// The model of one live proxy: its id, tight box and the fat box the documented rule gives.
#[derive(Clone, Copy, Debug)]
pub struct ModelProxy {
    pub id: ProxyId,
    pub tight: Aabb,
    pub fat: Aabb,
    pub tag: u32,
}

/// The documented fattening rule (`DbvtConfig::margin`, `prediction`), computed independently.
pub fn fatten(c: &DbvtConfig, tight: &Aabb, d: Vec3A) -> Aabb {
    let m = Vec3A::splat(c.margin);
    let d = d * c.prediction;
    Aabb::new(tight.min - m + d.min(Vec3A::ZERO), tight.max + m + d.max(Vec3A::ZERO))
}

/// The documented move rule: keep the fat box while it contains the new box and is not huge.
pub fn model_move(c: &DbvtConfig, p: &mut ModelProxy, tight: Aabb, d: Vec3A) -> bool {
    let fat = fatten(c, &tight, d);
    p.tight = tight;
    let huge = Aabb::new(fat.min - Vec3A::splat(4.0 * c.margin), fat.max + Vec3A::splat(4.0 * c.margin));
    if p.fat.contains(&tight) && huge.contains(&p.fat) {
        return false;
    }
    p.fat = fat;
    true
}

pub fn brute_ray(model: &[ModelProxy], ray: &Ray) -> Vec<(ProxyId, f32)> {
    let mut v: Vec<_> = model.iter().filter_map(|p| ray_aabb2(ray, &p.fat).map(|t| (p.id, t))).collect();
    v.sort_by_key(|a| a.0);
    v
}

/// Reference box cast: the centre ray against the fat box grown by the half-extents.
pub fn brute_box_cast(model: &[ModelProxy], b: &Aabb, d: Vec3A) -> Vec<(ProxyId, f32)> {
    let ray = Ray::new(b.center(), d).with_range(0.0, 1.0);
    let h = b.half_extents();
    let mut v: Vec<_> = model
        .iter()
        .filter_map(|p| ray_aabb2(&ray, &Aabb::new(p.fat.min - h, p.fat.max + h)).map(|t| (p.id, t)))
        .collect();
    v.sort_by_key(|a| a.0);
    v
}

pub fn brute_overlap(model: &[ModelProxy], b: &Aabb) -> Vec<ProxyId> {
    let mut v: Vec<_> = model.iter().filter(|p| p.fat.overlaps(b)).map(|p| p.id).collect();
    v.sort();
    v
}

pub fn brute_frustum(model: &[ModelProxy], f: &Frustum) -> Vec<ProxyId> {
    let mut v: Vec<_> =
        model.iter().filter(|p| f.planes.iter().all(|pl| !pl.box_outside(&p.fat))).map(|p| p.id).collect();
    v.sort();
    v
}

pub fn brute_pairs(model: &[ModelProxy]) -> Vec<(ProxyId, ProxyId)> {
    let mut v = Vec::new();
    for (i, a) in model.iter().enumerate() {
        for b in &model[i + 1..] {
            if a.fat.overlaps(&b.fat) {
                v.push(if a.id.index() < b.id.index() { (a.id, b.id) } else { (b.id, a.id) });
            }
        }
    }
    v.sort();
    v
}

pub fn tree_ray_all(tree: &Dbvt<u32>, ray: &Ray, ws: &mut QueryWorkspace) -> Vec<(ProxyId, f32)> {
    let mut v = Vec::new();
    tree.visit_ray(ray, ws, &mut |l: RayLeaf<'_, u32>| {
        v.push((l.id, l.t));
        RayControl::Continue
    })
    .unwrap();
    v.sort_by_key(|a| a.0);
    v
}

pub fn tree_box_cast_all(tree: &Dbvt<u32>, b: &Aabb, d: Vec3A, ws: &mut QueryWorkspace) -> Vec<(ProxyId, f32)> {
    let mut v = Vec::new();
    tree.visit_swept_box(b, d, ws, &mut |l: RayLeaf<'_, u32>| {
        v.push((l.id, l.t));
        RayControl::Continue
    })
    .unwrap();
    v.sort_by_key(|a| a.0);
    v
}

pub fn tree_overlap(tree: &Dbvt<u32>, b: &Aabb, ws: &mut QueryWorkspace) -> Vec<ProxyId> {
    let mut v = Vec::new();
    tree.overlap(b, ws, &mut |id, _: &u32| {
        v.push(id);
        LeafControl::Continue
    })
    .unwrap();
    v.sort();
    v
}

pub fn tree_frustum(tree: &Dbvt<u32>, f: &Frustum, ws: &mut QueryWorkspace) -> Vec<ProxyId> {
    let mut v = Vec::new();
    tree.frustum(f, ws, &mut |id, _: &u32| {
        v.push(id);
        LeafControl::Continue
    })
    .unwrap();
    v.sort();
    v
}

/// [`Dbvt::frustum_scan`]'s proxies, sorted; the scan must hand them over in slot order.
pub fn tree_frustum_scan(tree: &Dbvt<u32>, f: &Frustum) -> Vec<ProxyId> {
    let mut v: Vec<ProxyId> = Vec::new();
    tree.frustum_scan(f, &mut |id: ProxyId, _: &u32| {
        v.push(id);
        LeafControl::Continue
    })
    .unwrap();
    assert!(v.windows(2).all(|w| w[0].index() < w[1].index()), "frustum_scan out of slot order");
    v.sort();
    v
}

pub fn tree_pairs(tree: &Dbvt<u32>, ws: &mut QueryWorkspace) -> Vec<(ProxyId, ProxyId)> {
    let mut v = Vec::new();
    tree.self_pairs(ws, |a, _, b, _| {
        assert!(a.index() < b.index());
        v.push((a, b));
        PairControl::Continue
    })
    .unwrap();
    v.sort();
    v
}

/// The smallest entry distance, or `None`.
/// [`tree_ray_all`] through the tree's 8-wide copy.
pub fn wide_ray_all(wide: &WideDbvt<'_, u32>, ray: &Ray, ws: &mut QueryWorkspace) -> Vec<(ProxyId, f32)> {
    let mut v = Vec::new();
    wide.visit_ray(ray, ws, &mut |l: RayLeaf<'_, u32>| {
        v.push((l.id, l.t));
        RayControl::Continue
    })
    .unwrap();
    v.sort_by_key(|a| a.0);
    v
}

/// [`tree_frustum`] through the tree's 8-wide copy.
pub fn wide_frustum(wide: &WideDbvt<'_, u32>, f: &Frustum, ws: &mut QueryWorkspace) -> Vec<ProxyId> {
    let mut v = Vec::new();
    wide.frustum(f, ws, &mut |id, _: &u32| {
        v.push(id);
        LeafControl::Continue
    })
    .unwrap();
    v.sort();
    v
}

/// The closest hit as `Dbvt::intersect` defines it: the least distance, and of equal distances
/// the lowest proxy index.
pub fn closest_hit(v: &[(ProxyId, f32)]) -> Option<(ProxyId, f32)> {
    v.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.index().cmp(&b.0.index())))
}

pub fn closest(v: &[(ProxyId, f32)]) -> Option<f32> {
    v.iter().map(|a| a.1).min_by(|a, b| a.total_cmp(b))
}
