//! `BuildQuality::High` (spatial splits) on an interior where triangles land in several leaves:
//! the build references some triangles more than once, and every query still reports a triangle
//! once (the brute-force tests of each query run on High builds too: `mesh_bvh.rs`,
//! `hit_policy.rs`, `triangle_overlap.rs`, `closest_point.rs`, `shape_cast.rs`, `streams.rs`);
//! such a BVH is refused a refit and saved with the flag that lets its packs repeat a triangle.
//! (That its tree does not depend on the thread count: `determinism.rs`.)

use glam::Vec3;
use slabtree::{BuildOptions, BuildQuality, MeshBvh, MeshError, SavedBvhError, TriMesh, TriangleTest};

use common::triangle::room;
use slabtree_testkit as common;

fn high(mesh: &TriMesh, test: TriangleTest) -> MeshBvh {
    let options =
        BuildOptions { quality: BuildQuality::High, triangle_test: test, parallel_threshold: 64, ..Default::default() };
    MeshBvh::build(mesh, &options)
}

fn room_mesh() -> TriMesh {
    let (p, t) = room(2000, 7);
    TriMesh::new(p, t).unwrap()
}

/// The interior's High build puts triangles in several leaves, within the budget, and has a
/// lower SAH cost than the Medium build; on a mesh of small triangles alone it adds few.
#[test]
fn spatial_splits_add_references_within_the_budget() {
    let mesh = room_mesh();
    let s = high(&mesh, TriangleTest::MollerTrumbore).stats();
    let medium = MeshBvh::build(&mesh, &BuildOptions::default()).stats();
    assert!(s.references > s.triangles + 50, "{} references of {} triangles", s.references, s.triangles);
    assert!(s.references <= s.triangles * 5 / 4 + 1, "{} references of {} triangles", s.references, s.triangles);
    assert!(s.sah_cost < medium.sah_cost, "High SAH {} against Medium {}", s.sah_cost, medium.sah_cost);
    assert_eq!(medium.references, medium.triangles);
}

/// A BVH with triangles in several leaves is refused a refit, and left as it was.
#[test]
fn a_high_build_is_refused_a_refit() {
    let mesh = room_mesh();
    let mut bvh = high(&mesh, TriangleTest::Watertight);
    let before = bvh.to_bytes();
    let moved: Vec<Vec3> = mesh.positions().iter().map(|p| *p + Vec3::X).collect();
    assert_eq!(bvh.refit(&moved), Err(MeshError::RefitSpatialSplits));
    assert_eq!(bvh.to_bytes(), before);
}

/// A High build saved and read back, fast or from an untrusted source, answers as built; its
/// bytes without the flag that lets a triangle repeat, or with an unknown flag, are refused.
#[test]
fn a_high_build_is_saved_and_read_back() {
    let mesh = room_mesh();
    let bvh = high(&mesh, TriangleTest::MollerTrumbore);
    let bytes = bvh.to_bytes();
    let back = MeshBvh::from_bytes(&bytes).unwrap();
    assert_eq!(back.to_bytes(), bytes);
    assert_eq!(back.stats().references, bvh.stats().references);
    let untrusted = MeshBvh::from_untrusted_bytes(&bytes).unwrap();
    let mut r = common::rng::Rng(5);
    for _ in 0..2000 {
        let o = r.unit3() * 18.0 + Vec3::ONE;
        let ray = slabtree::Ray::new(o, r.direction());
        let want = bvh.intersect(&ray).unwrap();
        assert_eq!(back.intersect(&ray).unwrap(), want);
        // Whole-triangle boxes: the same triangle at the same distance.
        let got = untrusted.intersect(&ray).unwrap();
        assert_eq!(got.map(|h| (h.triangle, h.t)), want.map(|h| (h.triangle, h.t)));
    }
    // The flags word (bytes 28..32) is covered by the checksum: rewrite both.
    let with_flags = |flags: u32| {
        let mut b = bytes.clone();
        b[28..32].copy_from_slice(&flags.to_le_bytes());
        let n = b.len() - 8;
        let sum = slabtree::mesh::saved_checksum(&b[..n]);
        b[n..].copy_from_slice(&sum.to_le_bytes());
        b
    };
    assert!(matches!(
        MeshBvh::from_bytes(&with_flags(0)),
        Err(SavedBvhError::BadTree { reason: "triangle listed twice", .. })
    ));
    assert!(matches!(MeshBvh::from_bytes(&with_flags(3)), Err(SavedBvhError::BadHeader { field: "flags", value: 3 })));
    assert!(MeshBvh::from_bytes(&with_flags(1)).is_ok());
}
