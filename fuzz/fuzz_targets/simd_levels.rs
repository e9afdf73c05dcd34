//! Differential: the same mesh, tree and rays at every SIMD level this CPU runs (SSE2, AVX2,
//! AVX-512 on x86-64) give bit-identical answers. The oracle is the lowest level, whose kernels
//! are other code (other instructions, no fused multiply-add) than the levels above it.
//!
//! Compared, with either triangle test and any build quality (the input chooses): closest hit (`t`, triangle, `u`,
//! `v`, normal, as bits), any hit, all hits, batches of single rays and streams (packets), box,
//! sphere and capsule casts; and the dynamic tree's 8-wide copy (closest box, every box a ray
//! enters).
#![no_main]

#[path = "common/random_mesh.rs"]
mod random_mesh;

use glam::{Vec3, Vec3A};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use slabtree::{
    Aabb, BatchOptions, BuildOptions, BuildQuality, Dbvt, Hit, MeshBvh, QueryWorkspace, Ray, RayControl, RayLeaf,
    SimdLevel, Threads, TriangleTest, set_simd_level,
};

/// Everything one level answered, as bits, and which query each word came from.
#[derive(Debug)]
struct Answers(Vec<u32>, Vec<(usize, &'static str)>);

impl Answers {
    /// Marks where the words of `query` begin.
    fn query(&mut self, query: &'static str) {
        self.1.push((self.0.len(), query));
    }

    /// The query whose words include word `at`.
    fn query_at(&self, at: usize) -> &'static str {
        self.1.iter().rev().find(|(start, _)| *start <= at).map_or("?", |q| q.1)
    }

    fn f(&mut self, x: f32) {
        self.0.push(x.to_bits());
    }

    fn hit(&mut self, h: Option<Hit>) {
        match h {
            None => self.0.push(u32::MAX),
            Some(h) => {
                self.0.push(h.triangle);
                for x in [h.t, h.u, h.v, h.normal.x, h.normal.y, h.normal.z] {
                    self.f(x);
                }
            }
        }
    }

    fn point(&mut self, p: Vec3) {
        for x in p.to_array() {
            self.f(x);
        }
    }
}

/// The levels this CPU runs, each once (`set_simd_level` lowers a level the CPU lacks).
fn levels() -> Vec<SimdLevel> {
    let mut levels: Vec<SimdLevel> =
        [SimdLevel::Sse2, SimdLevel::Avx2, SimdLevel::Avx512].into_iter().map(set_simd_level).collect();
    levels.dedup();
    levels
}

fn answers(bvhs: &[MeshBvh], tree: &Dbvt<u32>, rays: &[Ray], casts: &[(Aabb, Vec3, f32)]) -> Answers {
    let mut out = Answers(Vec::new(), Vec::new());
    let mut all = Vec::new();
    let mut batch = Vec::new();
    let mut batch_any = Vec::new();
    for bvh in bvhs {
        for ray in rays {
            out.query("intersect");
            out.hit(bvh.intersect(ray).unwrap_or(None));
            out.query("occluded");
            out.0.push(bvh.occluded(ray).unwrap_or(false) as u32);
            out.query("intersect_all");
            if bvh.intersect_all(ray, &mut all).is_ok() {
                all.sort_by_key(|h| h.triangle);
                out.0.push(all.len() as u32);
                for &h in &all {
                    out.hit(Some(h));
                }
            }
        }
        for packets in [false, true] {
            let options = BatchOptions { threads: Threads::Calling, packets, ..Default::default() };
            out.query(if packets { "intersect_batch, packets" } else { "intersect_batch" });
            if bvh.intersect_batch(rays, &mut batch, options).is_ok() {
                batch.iter().for_each(|&h| out.hit(h));
            }
            out.query(if packets { "occluded_batch, packets" } else { "occluded_batch" });
            if bvh.occluded_batch(rays, &mut batch_any, options).is_ok() {
                out.0.extend(batch_any.iter().map(|&a| a as u32));
            }
        }
        for &(b, d, r) in casts {
            out.query("cast_box");
            match bvh.cast_box(&b, d.into()) {
                Ok(Some(s)) => {
                    out.0.push(s.triangle);
                    out.f(s.t);
                }
                _ => out.0.push(u32::MAX),
            }
            let c = Vec3::from(b.center());
            out.query("cast_sphere, cast_capsule");
            for cast in [bvh.cast_sphere(c, r, d), bvh.cast_capsule(c, Vec3::from(b.max), r, d)] {
                match cast {
                    Ok(Some(s)) => {
                        out.0.push(s.triangle);
                        out.f(s.t);
                        out.point(s.point);
                        out.point(s.normal);
                    }
                    _ => out.0.push(u32::MAX),
                }
            }
        }
    }
    let wide = tree.wide().expect("a built tree has no refit pending");
    let mut ws = QueryWorkspace::new();
    for ray in rays {
        out.query("tree: wide intersect, visit_ray");
        if let Ok(hit) = wide.intersect(ray, &mut ws) {
            match hit {
                Some(h) => {
                    out.0.push(h.id.index());
                    out.f(h.t);
                }
                None => out.0.push(u32::MAX),
            }
        }
        let mut entered = Vec::new();
        let _ = wide.visit_ray(ray, &mut ws, &mut |leaf: RayLeaf<'_, u32>| {
            entered.push((leaf.id.index(), leaf.t.to_bits()));
            RayControl::Continue
        });
        entered.sort_unstable();
        out.0.extend(entered.into_iter().flat_map(|(p, t)| [p, t]));
    }
    out
}

fn run(u: &mut Unstructured) -> Result<()> {
    let mesh = random_mesh::mesh(u, 96)?;
    // One build quality and triangle test per input (each input's own), which keeps an
    // execution short enough for millions of them.
    let quality = *u.choose(&[BuildQuality::Low, BuildQuality::Medium, BuildQuality::High])?;
    let triangle_test = *u.choose(&[TriangleTest::MollerTrumbore, TriangleTest::Watertight])?;
    let bvhs = [MeshBvh::build(&mesh, &BuildOptions { quality, triangle_test, ..Default::default() })];
    let boxes: Vec<(Aabb, u32)> = (0..mesh.len()).map(|i| (Aabb::from_points(mesh.triangle(i)), i as u32)).collect();
    let (tree, _) = Dbvt::build(boxes).expect("finite boxes");
    let mut rays = Vec::new();
    for _ in 0..u.int_in_range(1u8..=24)? {
        rays.push(random_mesh::ray(u, &mesh)?);
    }
    let mut casts = Vec::new();
    for _ in 0..u.int_in_range(0u8..=3)? {
        let r = random_mesh::ray(u, &mesh)?;
        let half = Vec3A::splat(u.int_in_range(0u8..=8)? as f32 * 0.0625);
        let o = r.origin();
        casts.push((Aabb::new(o - half, o + half), Vec3::from(r.dir()), half.x));
    }
    let levels = levels();
    let mut first: Option<Answers> = None;
    for &level in &levels {
        set_simd_level(level);
        let got = answers(&bvhs, &tree, &rays, &casts);
        match &first {
            None => first = Some(got),
            Some(expected) => {
                if got.0 != expected.0 {
                    let at = got.0.iter().zip(&expected.0).position(|(a, b)| a != b).unwrap_or(got.0.len());
                    let near = |a: &Answers| a.0[at.saturating_sub(2)..(at + 8).min(a.0.len())].to_vec();
                    panic!(
                        "{level} differs from {} at word {at} of {} ({}): {:x?} against {:x?}; rays {rays:?}, \
                         casts {casts:?}, mesh {mesh:?}",
                        levels[0],
                        expected.0.len(),
                        expected.query_at(at),
                        near(&got),
                        near(expected),
                    );
                }
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
