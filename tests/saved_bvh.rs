//! Saved BVHs (`MeshBvh::to_bytes` / `from_bytes` / `from_untrusted_bytes`): a round trip gives
//! the same bytes and answers every ray as brute force over the triangles does; every truncation
//! and every damaged byte is an error; and files whose tree was altered and whose checksum was
//! then forged are refused by both reads or accepted by both; the untrusted read then answers as
//! brute force does, and neither read's queries ever panic.

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
            assert_eq!(back.to_bytes(), bytes, "n = {n}, {test:?}");
            // The untrusted read computes the boxes and rows again: equal bytes mean the stored
            // ones are the mesh's.
            let checked = MeshBvh::from_untrusted_bytes(&bytes).unwrap();
            assert_eq!(checked.to_bytes(), bytes, "n = {n}, {test:?}");
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
    bad[8] = 1;
    assert_eq!(MeshBvh::from_bytes(&bad).err(), Some(SavedBvhError::UnsupportedVersion(1)));
}

#[test]
fn damage_anywhere_in_a_large_file_is_an_error() {
    // Over 1 MiB, so that the checksum's chunks (1 MiB each, hashed apart) are several.
    let bytes = MeshBvh::build(&soup(40_000, 12), &BuildOptions::default()).to_bytes();
    assert!(bytes.len() > 3 << 20, "{} bytes", bytes.len());
    let mut r = Rng(5);
    for _ in 0..100 {
        let mut bad = bytes.clone();
        let at = r.below(bytes.len() - 8);
        bad[at] ^= 1 << r.below(8);
        assert!(matches!(MeshBvh::from_bytes(&bad), Err(SavedBvhError::Checksum { .. })), "byte {at}");
    }
    // Two whole chunks exchanged, and two words of one chunk exchanged.
    let mut bad = bytes.clone();
    let (a, b) = bad[1 << 20..3 << 20].split_at_mut(1 << 20);
    a.swap_with_slice(b);
    assert_ne!(bad, bytes);
    assert!(matches!(MeshBvh::from_bytes(&bad), Err(SavedBvhError::Checksum { .. })));
    let mut bad = bytes.clone();
    let at = (1 << 20) + 4096;
    let word = |i: usize| bytes[i..i + 8].to_vec();
    let (w0, w1) = (word(at), word(at + 8));
    assert_ne!(w0, w1);
    bad[at..at + 8].copy_from_slice(&w1);
    bad[at + 8..at + 16].copy_from_slice(&w0);
    assert!(matches!(MeshBvh::from_bytes(&bad), Err(SavedBvhError::Checksum { .. })));
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
            let fast = MeshBvh::from_bytes(&bad);
            match MeshBvh::from_untrusted_bytes(&bad) {
                Err(e @ SavedBvhError::BadTree { .. }) => {
                    assert_eq!(fast.err(), Some(e), "round {round}: the two reads check alike");
                    refused += 1;
                }
                Err(e) => panic!("round {round}: a forged tree refused as {e}"),
                Ok(bvh) => {
                    accepted += 1;
                    agrees_with_brute_force(&bvh, &test_rays);
                    // The fast read keeps the forged contents, whatever they answer, but its
                    // queries neither panic nor read out of bounds.
                    let fast = fast.unwrap_or_else(|e| panic!("round {round}: only the fast read refused: {e}"));
                    for &(o, d) in &test_rays {
                        let ray = Ray::new(o, d);
                        let _ = (fast.intersect(&ray).unwrap(), fast.occluded(&ray).unwrap());
                        let _ = fast.closest_point(o, f32::INFINITY);
                    }
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
fn a_forged_box_is_kept_by_the_fast_read_and_computed_again_by_the_untrusted_one() {
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
    let back = MeshBvh::from_untrusted_bytes(&bad).unwrap();
    assert_eq!(back.to_bytes(), bytes, "the boxes are not the mesh's");
    assert!(agrees_with_brute_force(&back, &rays(8, 200)) > 150);
    // The fast read uses the boxes as stored (that is its speed), and so misses.
    let fast = MeshBvh::from_bytes(&bad).unwrap();
    assert_eq!(fast.to_bytes(), bad);
    let misses = rays(8, 200).iter().filter(|&&(o, d)| fast.intersect(&Ray::new(o, d)).unwrap().is_none()).count();
    assert!(misses > 150, "{misses} misses");
}

#[test]
fn a_forged_overlap_is_refused() {
    let mesh = soup(300, 8);
    let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    let bytes = bvh.to_bytes();
    let at = blocks_at(&bvh);
    // The root's second child made to start one block inside its first: two records sharing
    // blocks, which a refit of one would corrupt for the other. References count 8-byte steps,
    // 4 to a block. (The bytes read there also fail the reference checks, so this asserts the
    // refusal, not which check makes it.)
    let (r0, r1) = (root_word(&bytes, at, 48), root_word(&bytes, at, 49));
    assert_eq!(r0 >> 31, r1 >> 31, "the root's first two children are of one kind in this mesh");
    let mut bad = bytes.clone();
    bad[at + 4 * 49..at + 4 * 50].copy_from_slice(&(r0 + 4).to_le_bytes());
    forge(&mut bad);
    assert!(matches!(MeshBvh::from_bytes(&bad), Err(SavedBvhError::BadTree { .. })));
    assert!(matches!(MeshBvh::from_untrusted_bytes(&bad), Err(SavedBvhError::BadTree { .. })));
}

#[test]
fn a_reference_inside_a_block_is_refused() {
    // A reference names its record by 8-byte steps from the array's start; a record starts on a
    // block (32 bytes), so a step that is not a multiple of 4 names no record.
    let bvh = MeshBvh::build(&soup(300, 8), &BuildOptions::default());
    let bytes = bvh.to_bytes();
    let at = blocks_at(&bvh);
    let r1 = root_word(&bytes, at, 49);
    for step in 1..4 {
        let mut bad = bytes.clone();
        bad[at + 4 * 49..at + 4 * 50].copy_from_slice(&(r1 + step).to_le_bytes());
        forge(&mut bad);
        for read in [MeshBvh::from_bytes, MeshBvh::from_untrusted_bytes] {
            let e = read(&bad).err();
            let want = SavedBvhError::BadTree { block: 0, reason: "a reference inside a block" };
            assert_eq!(e, Some(want), "step {step}");
        }
    }
}

#[test]
fn an_unused_lane_with_a_box_is_refused() {
    // Two triangles: the root holds one pack, and its lanes 1 to 7 are unused. A box in one of
    // them would lead the traversal to follow the empty reference out of the array.
    let bvh = MeshBvh::build(&soup(1, 1), &BuildOptions::default());
    let bytes = bvh.to_bytes();
    let at = blocks_at(&bvh);
    assert_eq!(root_word(&bytes, at, 49), u32::MAX, "lane 1 is unused");
    for (side, value) in [(0, -1.0f32), (1, 1.0)] {
        for axis in 0..3 {
            let mut bad = bytes.clone();
            let w = 24 * side + 8 * axis + 1;
            bad[at + 4 * w..at + 4 * w + 4].copy_from_slice(&value.to_le_bytes());
            forge(&mut bad);
            for read in [MeshBvh::from_bytes, MeshBvh::from_untrusted_bytes] {
                let e = read(&bad).err();
                assert!(matches!(e, Some(SavedBvhError::BadTree { reason: "an unused lane with a box", .. })), "{e:?}");
            }
        }
    }
}

#[test]
fn a_version_2_file_reads_as_the_same_bvh() {
    // Version 2 counted references in 32-byte blocks, version 3 in 8-byte steps. A version 3
    // file turned back into version 2 (every reference of every node divided by 4) reads as the
    // same BVH, by both reads.
    let mesh = soup(3000, 10);
    for test in [TriangleTest::MollerTrumbore, TriangleTest::Watertight] {
        let bvh = MeshBvh::build(&mesh, &options(test));
        let bytes = bvh.to_bytes();
        let at = blocks_at(&bvh);
        let mut old = bytes.clone();
        old[8..12].copy_from_slice(&2u32.to_le_bytes());
        // The nodes, from the root, by the version 3 references.
        let (mut stack, mut nodes) = (vec![0u32], 0);
        while let Some(node) = stack.pop() {
            nodes += 1;
            let start = at + 8 * node as usize;
            for lane in 0..8 {
                let w = start + 4 * (48 + lane);
                let r = u32::from_le_bytes(bytes[w..w + 4].try_into().unwrap());
                if r == u32::MAX {
                    continue;
                }
                let (leaf, index) = (r >> 31, r & 0x7fff_ffff);
                assert_eq!(index % 4, 0, "a reference starts a block");
                if leaf == 0 {
                    stack.push(index);
                }
                old[w..w + 4].copy_from_slice(&((leaf << 31) | (index / 4)).to_le_bytes());
            }
        }
        assert!(nodes > 20, "{nodes} nodes");
        forge(&mut old);
        for read in [MeshBvh::from_bytes, MeshBvh::from_untrusted_bytes] {
            let back = read(&old).unwrap();
            assert_eq!(back.to_bytes(), bytes, "{test:?}: read back as version 3");
        }
    }
}
