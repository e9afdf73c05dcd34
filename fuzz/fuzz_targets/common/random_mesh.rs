//! Random meshes and rays for the targets that compare a mesh BVH's answers with another
//! answer: mostly ordinary triangles, with the degenerate cases a builder must survive mixed in
//! (zero-area, collinear and repeated triangles, repeated vertices, huge triangles, long thin
//! strips that spatial splits cut) and rays that are likely to hit them (aimed at vertices, edges
//! and centroids, often along an axis).
//!
//! Coordinates stay below 1e7: beyond about 4e9 the f32 edge products of both triangle tests
//! overflow, a documented limit (`docs/robustness.md`, "Known limits of very large triangles").

use glam::Vec3;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use slabtree::{Ray, TriMesh};

/// A coordinate: mostly a small multiple of 1/8 (so that points repeat and line up), sometimes
/// any value in [-8, 8], sometimes huge.
fn coordinate(u: &mut Unstructured) -> Result<f32> {
    Ok(match u.int_in_range(0u8..=9)? {
        0..=5 => u.int_in_range(-64i8..=64)? as f32 * 0.125,
        6 | 7 => (u.arbitrary::<u16>()? as f32 / 65535.0 - 0.5) * 16.0,
        8 => *u.choose(&[1e3f32, -1e3, 1e5, -1e5, 1e7, -1e7, 3e-6, -3e-6])?,
        _ => u.int_in_range(-64i8..=64)? as f32 * 1.5625e-2 + 1.0,
    })
}

fn point(u: &mut Unstructured) -> Result<Vec3> {
    Ok(Vec3::new(coordinate(u)?, coordinate(u)?, coordinate(u)?))
}

/// SplitMix64: many triangles from a few input bytes.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in [-8, 8), in steps of 1/256 (points near each other repeat and line up).
    fn coordinate(&mut self) -> f32 {
        (self.next() % 4096) as f32 / 256.0 - 8.0
    }
}

/// `count` triangles from `seed`, as an interior: long thin strips along the axes (walls, beams:
/// what spatial splits cut) among small triangles in clusters, some repeated.
fn seeded(seed: u64, count: usize, positions: &mut Vec<Vec3>, triangles: &mut Vec<[u32; 3]>) {
    let mut r = SplitMix(seed);
    let mut centre = Vec3::ZERO;
    for k in 0..count {
        let base = positions.len() as u32;
        match r.next() % 8 {
            0 | 1 => {
                let axis = (r.next() % 3) as usize;
                let mut lo = Vec3::new(r.coordinate(), r.coordinate(), r.coordinate());
                let mut hi = lo;
                lo[axis] = -8.0;
                hi[axis] = 8.0;
                let mut w = Vec3::ZERO;
                w[(axis + 1 + (r.next() % 2) as usize) % 3] = (r.next() % 64 + 1) as f32 / 64.0;
                positions.extend([lo, hi, lo + w]);
            }
            2 if k > 0 => {
                let [a, b, c] = triangles[(r.next() % triangles.len() as u64) as usize];
                triangles.push([c, a, b]);
                continue;
            }
            3 => centre = Vec3::new(r.coordinate(), r.coordinate(), r.coordinate()),
            _ => {}
        }
        if positions.len() as u32 == base {
            let size = (r.next() % 64 + 1) as f32 / 64.0;
            for _ in 0..3 {
                positions.push(centre + Vec3::new(r.coordinate(), r.coordinate(), r.coordinate()) * size * 0.125);
            }
        }
        triangles.push([base, base + 1, base + 2]);
    }
}

/// A mesh of up to about `max_triangles` triangles (fewer when the input runs out first): some
/// from a seed (see [`seeded`]), the rest chosen from the input's bytes one by one.
pub fn mesh(u: &mut Unstructured, max_triangles: usize) -> Result<TriMesh> {
    let mut positions: Vec<Vec3> = Vec::new();
    let mut triangles: Vec<[u32; 3]> = Vec::new();
    if u.arbitrary()? {
        let count = u.int_in_range(0..=max_triangles)?;
        seeded(u.arbitrary()?, count, &mut positions, &mut triangles);
    }
    let vertices = u.int_in_range(3u8..=96)? as usize;
    for _ in 0..vertices {
        let p = match (positions.len(), u.int_in_range(0u8..=9)?) {
            (n, 0) if n > 0 => positions[u.choose_index(n)?],
            (n, 1) if n > 1 => {
                // On the line through two earlier points: collinear triangles.
                let (a, b) = (positions[u.choose_index(n)?], positions[u.choose_index(n)?]);
                a + (b - a) * (u.int_in_range(-4i8..=8)? as f32 * 0.25)
            }
            _ => point(u)?,
        };
        positions.push(p);
    }
    let n = positions.len() as u32;
    let wanted = triangles.len() + u.int_in_range(0..=max_triangles / 2)?;
    while triangles.len() < wanted {
        match u.int_in_range(0u8..=15)? {
            // A repeat of an earlier triangle, or of it turned.
            0 if !triangles.is_empty() => {
                let [a, b, c] = triangles[u.choose_index(triangles.len())?];
                triangles.push(if u.arbitrary()? { [a, b, c] } else { [b, c, a] });
            }
            // A vertex used twice: zero area.
            1 => {
                let (a, b) = (u.int_in_range(0..=n - 1)?, u.int_in_range(0..=n - 1)?);
                triangles.push([a, a, b]);
            }
            // A long thin strip across the mesh, two triangles: what spatial splits cut.
            2 if positions.len() + 4 <= u32::MAX as usize => {
                let axis = u.int_in_range(0usize..=2)?;
                let (mut lo, mut hi) = (point(u)?, point(u)?);
                lo[axis] = -8.0;
                hi[axis] = 8.0;
                let w = Vec3::splat(0.0625).with_x(if axis == 0 { 0.0 } else { 0.0625 });
                let k = positions.len() as u32;
                positions.extend([lo, hi, lo + w, hi + w]);
                triangles.extend([[k, k + 1, k + 2], [k + 1, k + 3, k + 2]]);
            }
            _ => triangles.push([u.int_in_range(0..=n - 1)?, u.int_in_range(0..=n - 1)?, u.int_in_range(0..=n - 1)?]),
        }
        if u.is_empty() {
            break;
        }
    }
    Ok(TriMesh::new(positions, triangles).expect("indices are in range and points finite"))
}

/// A ray likely to meet `mesh`: from a random point or a vertex, towards a vertex, an edge's
/// midpoint, a centroid or along an axis; sometimes with a short range.
pub fn ray(u: &mut Unstructured, mesh: &TriMesh) -> Result<Ray> {
    let target = |u: &mut Unstructured| -> Result<Vec3> {
        if mesh.is_empty() {
            return point(u);
        }
        let [a, b, c] = mesh.triangle(u.choose_index(mesh.len())?);
        Ok(match u.int_in_range(0u8..=4)? {
            0 => a,
            1 => (a + b) * 0.5,
            2 => (a + b + c) / 3.0,
            3 => a + (b - a) * (u.arbitrary::<u8>()? as f32 / 255.0),
            _ => point(u)?,
        })
    };
    let origin = if u.arbitrary()? { point(u)? } else { target(u)? + point(u)? * 0.25 };
    let direction = match u.int_in_range(0u8..=5)? {
        0 => [Vec3::X, Vec3::Y, Vec3::Z, -Vec3::X, -Vec3::Y, -Vec3::Z][u.choose_index(6)?],
        1 => point(u)?,
        _ => target(u)? - origin,
    };
    let ray = Ray::new(origin, direction);
    Ok(match u.int_in_range(0u8..=5)? {
        0 => ray.with_range(0.0, u.arbitrary::<u8>()? as f32 / 64.0),
        1 => ray.with_range(u.arbitrary::<u8>()? as f32 / 128.0, f32::INFINITY),
        _ => ray,
    })
}
