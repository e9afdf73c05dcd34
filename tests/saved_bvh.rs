//! Saved BVHs (`MeshBvh::to_bytes` / `from_bytes`): a round trip gives the same bytes and answers
//! every ray as brute force over the triangles does; every truncation and every damaged byte is
//! an error; and files whose tree was altered and whose checksum was then forged are either
//! refused or answer as brute force does, never panic and never miss.

use glam::Vec3;
use slabtree::mesh::saved_checksum;
use slabtree::{BuildOptions, MeshBvh, Ray, SavedBvhError, TriMesh, TriangleTest};

use common::rng::Rng;
use common::triangle::{margin, mt64, random_triangles};
use slabtree_testkit as common;

/// Random triangles in a cube, with a few degenerate ones.
fn soup(n: usize, seed: u64) -> TriMesh {
    let (mut p, mut t) = random_triangles(n, seed, |_| 2.0);
    let k = p.len() as u32;
    p.extend([Vec3::splat(5.0), Vec3::splat(5.0), Vec3::splat(5.0)]);
    t.push([k, k + 1, k + 2]);
    TriMesh::new(p, t).unwrap()
}

fn rays(seed: u64, n: usize) -> Vec<(Vec3, Vec3)> {
    let mut r = Rng(seed);
    (0..n)
        .map(|_| {
            let o = Vec3::splat(10.0) + r.direction() * 40.0;
            let target = r.unit3() * 20.0;
            (o, (target - o).normalize())
        })
        .collect()
}

/// Every ray's closest hit agrees with f64 brute force over all triangles (rays within 1e-5 of
/// an edge, in barycentric terms, may round either way and are skipped). Returns rays compared.
fn agrees_with_brute_force(bvh: &MeshBvh, rays: &[(Vec3, Vec3)]) -> usize {
    let mesh = bvh.mesh();
    let mut compared = 0;
    for &(o, d) in rays {
        let mut best: Option<(f64, f64)> = None;
        for i in 0..mesh.len() {
            let tri = mesh.triangle(i).map(|v| v.as_dvec3());
            if let Some((t, u, v)) = mt64(o.as_dvec3(), d.as_dvec3(), tri)
                && margin(u, v) >= 0.0
                && t >= 0.0
                && best.is_none_or(|b| t < b.0)
            {
                best = Some((t, margin(u, v)));
            }
        }
        if best.is_some_and(|b| b.1 < 1e-5) {
            continue;
        }
        compared += 1;
        let got = bvh.intersect(&Ray::new(o, d)).unwrap();
        match (got, best) {
            (None, None) => {}
            (Some(h), Some((t, _))) => assert!(((h.t as f64) - t).abs() <= 1e-4 * t.max(1e-3), "t {} vs {t}", h.t),
            (g, e) => panic!("hit/miss differs: saved BVH {g:?}, brute force {e:?}"),
        }
        assert_eq!(bvh.occluded(&Ray::new(o, d)).unwrap(), got.is_some());
    }
    compared
}

fn options(test: TriangleTest) -> BuildOptions {
    BuildOptions { triangle_test: test, parallel_threshold: 64, ..BuildOptions::default() }
}

#[test]
fn round_trips_give_the_same_bytes_and_brute_force_answers() {
    for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
        for (n, seed) in [(1, 1), (5, 2), (300, 3), (3000, 4)] {
            let mesh = soup(n, seed);
            let bvh = MeshBvh::build(&mesh, &options(test));
            let bytes = bvh.to_bytes();
            let back = MeshBvh::from_bytes(&bytes).unwrap();
            // The boxes and rows are computed again on reading: equal bytes mean equal contents.
            assert_eq!(back.to_bytes(), bytes, "n = {n}, {test:?}");
            assert_eq!(back.options().triangle_test, test);
            assert_eq!((back.stats().nodes, back.stats().depth), (bvh.stats().nodes, bvh.stats().depth));
            assert!(agrees_with_brute_force(&back, &rays(seed, 300)) > 200);
        }
    }
    // The empty mesh too.
    let empty = MeshBvh::build(&TriMesh::new(Vec::new(), Vec::new()).unwrap(), &BuildOptions::default());
    let back = MeshBvh::from_bytes(&empty.to_bytes()).unwrap();
    assert_eq!(back.intersect(&Ray::new(Vec3::ZERO, Vec3::X)).unwrap(), None);
}

#[test]
fn every_truncation_and_every_damaged_byte_is_an_error() {
    let bvh = MeshBvh::build(&soup(40, 9), &BuildOptions::default());
    let bytes = bvh.to_bytes();
    for len in 0..bytes.len() {
        let e = MeshBvh::from_bytes(&bytes[..len]).err().unwrap_or_else(|| panic!("{len} bytes accepted"));
        assert!(matches!(e, SavedBvhError::Truncated { .. }), "{len} bytes: {e}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(MeshBvh::from_bytes(&longer), Err(SavedBvhError::TrailingBytes { .. })));
    for at in 0..bytes.len() {
        for bit in [0, 3, 7] {
            let mut bad = bytes.clone();
            bad[at] ^= 1 << bit;
            assert!(MeshBvh::from_bytes(&bad).is_err(), "byte {at} bit {bit} damaged, accepted");
        }
    }
    // The errors say what is wrong.
    let mut bad = bytes.clone();
    bad[0] = b'X';
    assert_eq!(MeshBvh::from_bytes(&bad).err(), Some(SavedBvhError::NotASavedBvh));
    let mut bad = bytes.clone();
    bad[8] = 2;
    assert_eq!(MeshBvh::from_bytes(&bad).err(), Some(SavedBvhError::UnsupportedVersion(2)));
}

/// Rewrites the checksum so that only the structure checks stand between the bytes and a query.
fn forge(bytes: &mut [u8]) {
    let n = bytes.len() - 8;
    let sum = saved_checksum(&bytes[..n]);
    bytes[n..].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn forged_files_are_refused_or_answer_as_brute_force() {
    let mesh = soup(200, 5);
    let test_rays = rays(77, 60);
    for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
        let bytes = MeshBvh::build(&mesh, &options(test)).to_bytes();
        let blocks_at = 32 + 12 * mesh.positions().len() + 12 * mesh.triangles().len();
        let mut r = Rng(31);
        let (mut refused, mut accepted) = (0, 0);
        for round in 0..3000 {
            let mut bad = bytes.clone();
            // One to three words of the block part set to a random value, a nearby reference,
            // a triangle index or the empty reference.
            for _ in 0..1 + round % 3 {
                let word = blocks_at / 4 + r.below((bytes.len() - 8 - blocks_at) / 4);
                let old = u32::from_le_bytes(bad[4 * word..4 * word + 4].try_into().unwrap());
                let new = match r.below(5) {
                    0 => r.next() as u32,
                    1 => old.wrapping_add(1 + r.below(8) as u32),
                    2 => old.wrapping_sub(1 + r.below(8) as u32),
                    3 => r.below(mesh.len() + 2) as u32,
                    _ => u32::MAX,
                };
                bad[4 * word..4 * word + 4].copy_from_slice(&new.to_le_bytes());
            }
            forge(&mut bad);
            match MeshBvh::from_bytes(&bad) {
                Err(SavedBvhError::BadTree { .. }) => refused += 1,
                Err(e) => panic!("round {round}: a forged tree refused as {e}"),
                Ok(bvh) => {
                    accepted += 1;
                    agrees_with_brute_force(&bvh, &test_rays);
                }
            }
        }
        // Both outcomes happen (a changed box or row is recomputed, so it is accepted).
        assert!(refused > 300 && accepted > 300, "{test:?}: {refused} refused, {accepted} accepted");
    }
}

#[test]
fn a_saved_mesh_is_checked_as_a_new_one() {
    let bvh = MeshBvh::build(&soup(10, 3), &BuildOptions::default());
    let mut bad = bvh.to_bytes();
    // The first triangle's first index, out of range.
    let at = 32 + 12 * bvh.mesh().positions().len();
    bad[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    forge(&mut bad);
    assert!(matches!(MeshBvh::from_bytes(&bad), Err(SavedBvhError::Mesh(_))));
}

/// Where the block part of `bvh`'s bytes starts.
fn blocks_at(bvh: &MeshBvh) -> usize {
    32 + 12 * bvh.mesh().positions().len() + 12 * bvh.mesh().triangles().len()
}

/// Word `w` of the root node (block 0): 48 planes (`[side][axis][lane]`), then 8 references.
fn root_word(bytes: &[u8], at: usize, w: usize) -> u32 {
    u32::from_le_bytes(bytes[at + 4 * w..at + 4 * w + 4].try_into().unwrap())
}

#[test]
fn a_forged_box_is_computed_again_and_a_forged_overlap_is_refused() {
    let mesh = soup(300, 8);
    let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    let bytes = bvh.to_bytes();
    let at = blocks_at(&bvh);

    // Every plane of the root collapsed to the origin: a reader that trusted the boxes would
    // miss nearly everything.
    let mut bad = bytes.clone();
    for w in 0..48 {
        bad[at + 4 * w..at + 4 * w + 4].copy_from_slice(&0f32.to_le_bytes());
    }
    forge(&mut bad);
    let back = MeshBvh::from_bytes(&bad).unwrap();
    assert_eq!(back.to_bytes(), bytes, "the boxes are not the mesh's");
    assert!(agrees_with_brute_force(&back, &rays(8, 200)) > 150);

    // The root's second child made to start one block inside its first: two records sharing
    // blocks, which the rewrite of one would corrupt for the other. (The bytes read there also
    // fail the reference checks, so this asserts the refusal, not which check makes it.)
    let (r0, r1) = (root_word(&bytes, at, 48), root_word(&bytes, at, 49));
    assert_eq!(r0 >> 31, r1 >> 31, "the root's first two children are of one kind in this mesh");
    let mut bad = bytes.clone();
    bad[at + 4 * 49..at + 4 * 50].copy_from_slice(&(r0 + 1).to_le_bytes());
    forge(&mut bad);
    assert!(matches!(MeshBvh::from_bytes(&bad), Err(SavedBvhError::BadTree { .. })));
}
