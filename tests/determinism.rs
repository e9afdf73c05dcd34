//! Builds do not depend on the threads that make them: a mesh BVH of every build quality gives
//! the same bytes, and a dynamic tree's bulk build the same structure (its statistics, and the
//! order in which its queries meet the proxies), on one thread and two, with the parallel paths
//! taken at every size or at none.

use glam::Vec3A;
use slabtree::{
    Aabb, BuildOptions, BuildQuality, Dbvt, DbvtConfig, LeafControl, MeshBvh, QueryWorkspace, Ray, RayControl, RayLeaf,
    TriMesh,
};

use common::rng::Rng;
use common::triangle::room;
use slabtree_testkit as common;

/// Runs `f` in a rayon pool of `threads` threads.
fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
}

/// Every quality, on an interior large enough that every parallel path runs (High's root bins
/// its spatial splits in halves above 16k references; the binned builder bins in halves above
/// 32k items). (A spatial build whose merge dropped one half's bins, or whose budget went to the
/// subtree that finished first, fails it.)
#[test]
fn mesh_bvh_builds_are_the_same_on_any_number_of_threads() {
    let (p, t) = room(40_000, 9);
    let mesh = TriMesh::new(p, t).unwrap();
    for quality in [BuildQuality::Low, BuildQuality::Medium, BuildQuality::High] {
        let bytes = |threads: usize, parallel_threshold: usize| {
            let options = BuildOptions { quality, parallel_threshold, ..Default::default() };
            on_threads(threads, || MeshBvh::build(&mesh, &options)).to_bytes()
        };
        let serial = bytes(1, usize::MAX);
        for (threads, threshold) in [(2, 16), (1, 16), (2, usize::MAX), (2, 4096)] {
            assert!(bytes(threads, threshold) == serial, "{quality:?}: {threads} threads, threshold {threshold}");
        }
    }
}

/// What a bulk-built tree looks like from outside: its statistics, and the proxies its box and
/// ray queries meet, in the order they meet them.
fn fingerprint(tree: &Dbvt<u32>) -> (u32, u32, usize, Vec<u32>) {
    tree.validate().unwrap();
    let stats = tree.stats();
    let mut ws = QueryWorkspace::new();
    let mut met = Vec::new();
    let mut r = Rng(31);
    for _ in 0..200 {
        let c = Vec3A::from(r.unit3()) * 100.0;
        let b = Aabb::from_center_half_extents(c, Vec3A::splat(4.0));
        tree.overlap(&b, &mut ws, &mut |_, &v: &u32| {
            met.push(v);
            LeafControl::Continue
        })
        .unwrap();
        let ray = Ray::new(c, r.direction());
        tree.visit_ray(&ray, &mut ws, &mut |leaf: RayLeaf<'_, u32>| {
            met.push(*leaf.data);
            RayControl::Continue
        })
        .unwrap();
    }
    (stats.sah_cost.to_bits(), stats.height, stats.internal_nodes, met)
}

#[test]
fn dynamic_tree_bulk_builds_are_the_same_on_any_number_of_threads() {
    let mut r = Rng(30);
    let boxes: Vec<(Aabb, u32)> = (0..60_000)
        .map(|i| {
            let c = Vec3A::from(r.unit3()) * 100.0;
            (Aabb::from_center_half_extents(c, Vec3A::from(r.unit3()) + Vec3A::splat(0.05)), i)
        })
        .collect();
    let tree = |threads: usize, parallel_threshold: usize| {
        let config = DbvtConfig { parallel_threshold, ..Default::default() };
        on_threads(threads, || Dbvt::build_with_config(boxes.clone(), config).unwrap().0)
    };
    let serial = fingerprint(&tree(1, usize::MAX));
    assert!(serial.3.len() > 1000, "the queries met too little to compare: {}", serial.3.len());
    for (threads, threshold) in [(2, 64), (1, 64), (2, usize::MAX)] {
        assert!(fingerprint(&tree(threads, threshold)) == serial, "{threads} threads, threshold {threshold}");
    }
}
