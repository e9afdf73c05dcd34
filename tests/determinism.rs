//! Builds do not depend on the threads that make them, nor on the process: a mesh BVH of every
//! build quality gives the same bytes, and a dynamic tree's bulk build the same structure (its
//! statistics, and the order in which its queries meet the proxies), on one thread and two, with
//! the parallel paths taken at every size or at none, and in other processes (other addresses,
//! other hash seeds, other thread timing).

use glam::Vec3A;
use slabtree::{
    Aabb, BuildOptions, BuildQuality, Dbvt, DbvtConfig, LeafControl, MeshBvh, QueryWorkspace, Ray, RayControl, RayLeaf,
    SimdLevel, TriMesh, set_simd_level, simd_level,
};

use common::rng::Rng;
use common::triangle::room;
use slabtree_testkit as common;

/// `n` boxes of sizes 0.05 to 1.05 scattered over a cube of side 100, from `seed`, numbered.
fn random_boxes(n: u32, seed: u64) -> Vec<(Aabb, u32)> {
    let mut r = Rng(seed);
    (0..n)
        .map(|i| {
            let c = Vec3A::from(r.unit3()) * 100.0;
            (Aabb::from_center_half_extents(c, Vec3A::from(r.unit3()) + Vec3A::splat(0.05)), i)
        })
        .collect()
}

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

/// The builders' split choice and binning run at the SIMD level the process chose, compiled
/// once per level (`BinnedSah::choose_split`): every level gives the same tree, for every
/// quality and for the dynamic tree's bulk build. (The level is the process's, so a build that
/// another test runs meanwhile may run at any level: it must give the same tree too.)
#[test]
fn builds_are_the_same_at_every_simd_level() {
    let (p, t) = room(40_000, 9);
    let mesh = TriMesh::new(p, t).unwrap();
    let boxes = random_boxes(20_000, 32);
    let built = || {
        let meshes: Vec<Vec<u8>> = [BuildQuality::Low, BuildQuality::Medium, BuildQuality::High]
            .map(|quality| MeshBvh::build(&mesh, &BuildOptions { quality, ..Default::default() }).to_bytes())
            .into();
        (meshes, fingerprint(&Dbvt::build(boxes.clone()).unwrap().0))
    };
    let before = simd_level();
    let levels = [SimdLevel::Scalar, SimdLevel::Sse2, SimdLevel::Neon, SimdLevel::Avx2, SimdLevel::Avx512];
    let mut first: Option<(SimdLevel, _)> = None;
    for level in levels {
        // Levels the CPU lacks are lowered to its best, which is then built twice.
        let level = set_simd_level(level);
        let this = built();
        match &first {
            None => first = Some((level, this)),
            Some((at, want)) => assert!(this == *want, "built at {level:?}, not as at {at:?}"),
        }
    }
    set_simd_level(before);
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
    let boxes = random_boxes(60_000, 30);
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

/// One line for everything a process builds: the checksum of each quality's saved mesh BVH, and
/// a hash of a bulk-built tree's fingerprint; built on two threads with every parallel path taken.
fn summary() -> String {
    let (p, t) = room(20_000, 5);
    let mesh = TriMesh::new(p, t).unwrap();
    let mut line = String::new();
    for quality in [BuildQuality::Low, BuildQuality::Medium, BuildQuality::High] {
        let options = BuildOptions { quality, parallel_threshold: 16, ..Default::default() };
        let bytes = on_threads(2, || MeshBvh::build(&mesh, &options)).to_bytes();
        line += &format!("{quality:?} {:016x} ", slabtree::mesh::saved_checksum(&bytes));
    }
    let mut r = Rng(33);
    let boxes: Vec<(Aabb, u32)> = (0..20_000)
        .map(|i| (Aabb::from_center_half_extents(Vec3A::from(r.unit3()) * 100.0, Vec3A::splat(0.5)), i))
        .collect();
    let config = DbvtConfig { parallel_threshold: 64, ..Default::default() };
    let tree = on_threads(2, || Dbvt::build_with_config(boxes, config).unwrap().0);
    let (sah, height, nodes, met) = fingerprint(&tree);
    let met = met.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &v| (h ^ v as u64).wrapping_mul(0x100_0000_01b3));
    line + &format!("tree {sah:08x} {height} {nodes} {met:016x}")
}

/// The same builds in two child processes (this test binary, run again on this test alone)
/// give the same summary as this process.
#[test]
fn builds_are_the_same_in_other_processes() {
    const CHILD: &str = "SLABTREE_DETERMINISM_CHILD";
    if std::env::var_os(CHILD).is_some() {
        println!("summary: {}", summary());
        return;
    }
    let here = summary();
    for child in 0..2 {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "builds_are_the_same_in_other_processes", "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            // A longer environment moves the child's stack: other addresses, as well as ASLR's.
            .env("SLABTREE_DETERMINISM_PADDING", "x".repeat(4096 * (child + 1)))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let there = text.lines().find_map(|l| l.split_once("summary: ").map(|s| s.1)).unwrap_or_else(|| {
            panic!("child {child} printed no summary: {text} {}", String::from_utf8_lossy(&out.stderr))
        });
        assert_eq!(there, here, "child process {child}");
    }
}
