//! The two-level scene under arbitrary operation sequences: add, remove (also of stale ids),
//! set_transform, batched set_transforms, masks, optimise and rebuild, with arbitrary transforms
//! (NaN, infinities, singular, huge), interleaved with picks, occlusion, packets, overlap and
//! swept boxes with arbitrary floats.
//!
//! Checked: nothing panics; a refused operation leaves the instance count unchanged; the tree
//! validates after every step; every live id stays valid; a pick lies in the ray's range with
//! finite barycentrics and agrees with `occluded` and with the packets of `intersect_batch` (same instance,
//! triangle and t); swept boxes report `t` in `[0, 1]`.
#![no_main]

use std::sync::{Arc, OnceLock};

use glam::{Affine3A, Quat, Vec3, Vec3A};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use slabtree::{Aabb, BatchOptions, BuildOptions, InstanceId, MeshBvh, Ray, Scene, Threads, TriMesh, TriangleTest};

fn f(u: &mut Unstructured) -> Result<f32> {
    Ok(match u.int_in_range(0u8..=9)? {
        0 => f32::from_bits(u.arbitrary()?),
        1 => *u.choose(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-40, 0.0, -0.0, f32::MAX, 1e30, 1e6])?,
        _ => u.arbitrary::<i8>()? as f32 * 0.25,
    })
}

fn v(u: &mut Unstructured) -> Result<Vec3> {
    Ok(Vec3::new(f(u)?, f(u)?, f(u)?))
}

fn transform(u: &mut Unstructured) -> Result<Affine3A> {
    Ok(match u.int_in_range(0u8..=3)? {
        0 => Affine3A::from_cols_array(&std::array::from_fn(|_| f(u).unwrap_or(0.0))),
        _ => {
            let q = Quat::from_rotation_y(f(u)?) * Quat::from_rotation_x(f(u)?);
            Affine3A::from_scale_rotation_translation(Vec3::splat(1.0 + (u.arbitrary::<u8>()? as f32) / 64.0), q, v(u)?)
        }
    })
}

fn meshes() -> &'static [Arc<MeshBvh>; 2] {
    static M: OnceLock<[Arc<MeshBvh>; 2]> = OnceLock::new();
    M.get_or_init(|| {
        let quad = TriMesh::new(
            vec![
                Vec3::new(-1.0, -1.0, 0.0),
                Vec3::new(1.0, -1.0, 0.0),
                Vec3::ONE.with_z(0.0),
                Vec3::new(-1.0, 1.0, 0.0),
            ],
            vec![[0, 1, 2], [0, 2, 3]],
        )
        .unwrap();
        let tet =
            TriMesh::new(vec![Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::Z], vec![[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
                .unwrap();
        [
            Arc::new(MeshBvh::build(
                &quad,
                &BuildOptions { triangle_test: TriangleTest::Watertight, ..Default::default() },
            )),
            Arc::new(MeshBvh::build(&tet, &BuildOptions::default())),
        ]
    })
}

fn run(u: &mut Unstructured) -> Result<()> {
    let mut scene = Scene::new();
    let mut live: Vec<InstanceId> = Vec::new();
    let mut dead: Vec<InstanceId> = Vec::new();
    for step in 0..u.int_in_range(1u8..=40)? {
        let before = scene.len();
        match u.int_in_range(0u8..=8)? {
            0 | 1 => {
                let mesh = meshes()[u.int_in_range(0usize..=1)?].clone();
                match scene.add(mesh, transform(u)?, step as u64, Scene::ALL) {
                    Ok(id) => live.push(id),
                    Err(_) => assert_eq!(scene.len(), before),
                }
            }
            2 if !live.is_empty() => {
                let id = live.swap_remove(u.choose_index(live.len())?);
                scene.remove(id).expect("live id");
                dead.push(id);
            }
            3 if !dead.is_empty() => {
                let id = *u.choose(&dead)?;
                assert!(scene.remove(id).is_err() && scene.set_transform(id, Affine3A::IDENTITY).is_err());
            }
            4 if !live.is_empty() => {
                let id = *u.choose(&live)?;
                let _ = scene.set_transform(id, transform(u)?);
            }
            5 if !live.is_empty() => {
                let moves: Vec<_> = live.iter().map(|&id| (id, transform(u).unwrap_or(Affine3A::IDENTITY))).collect();
                let _ = scene.set_transforms(&moves);
            }
            6 if !live.is_empty() => {
                let _ = scene.set_mask(*u.choose(&live)?, u.arbitrary()?);
            }
            7 => {
                scene.optimize(u.int_in_range(0usize..=4)?);
            }
            8 => scene.rebuild(),
            _ => {}
        }
        assert!(scene.validate().is_ok(), "instance tree invalid after step {step}");
        assert_eq!(scene.len(), live.len());
        assert!(live.iter().all(|&id| scene.contains(id)));
        // Queries with arbitrary floats.
        let rays: [Ray; 8] = std::array::from_fn(|_| {
            let o = v(u).unwrap_or(Vec3::ZERO);
            let d = v(u).unwrap_or(Vec3::X);
            Ray::new(o, d).with_range(
                0.0,
                if u.arbitrary::<bool>().unwrap_or(false) { f(u).unwrap_or(1.0) } else { f32::INFINITY },
            )
        });
        let mask = if u.arbitrary::<bool>()? { u32::MAX } else { u.arbitrary()? };
        let mut streamed = Vec::new();
        let stream = scene.intersect_batch(
            &rays,
            mask,
            &mut streamed,
            BatchOptions { threads: Threads::Calling, packets: true, ..Default::default() },
        );
        // An invalid ray is refused by every query, and refuses its stream.
        assert_eq!(stream.is_err(), rays.iter().any(|r| r.validate().is_err()), "stream refusal for {rays:?}");
        for (k, ray) in rays.iter().enumerate() {
            let (hit, any) = match (scene.intersect(ray, mask), scene.occluded(ray, mask)) {
                (Ok(hit), Ok(any)) => (hit, any),
                (Err(e), Err(e2)) => {
                    // The errors carry the ray's NaNs, which equal nothing: compared as printed.
                    let same = |a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| format!("{a:?}") == format!("{b:?}");
                    assert!(same(&e, &e2) && same(&Err::<(), _>(e), &ray.validate()), "{ray:?} refused with {e}");
                    continue;
                }
                (h, a) => panic!("intersect and occluded disagree on refusing {ray:?}: {h:?} {a:?}"),
            };
            if let Some(h) = hit {
                assert!(h.t >= ray.tmin && h.t <= ray.tmax && h.u.is_finite() && h.v.is_finite(), "{h:?} for {ray:?}");
            }
            assert_eq!(hit.is_some(), any, "intersect and occluded disagree on {ray:?}");
            if stream.is_ok() {
                assert_eq!(
                    streamed[k].map(|p| (p.instance, p.triangle, p.t.to_bits())),
                    hit.map(|p| (p.instance, p.triangle, p.t.to_bits())),
                    "packet ray {k} differs for {ray:?}"
                );
            }
        }
        let b = Aabb::from_center_half_extents(Vec3A::from(v(u)?), Vec3A::from(v(u)?.abs()));
        let _ = scene.overlap(&b, Scene::ALL);
        if let Ok(Some(s)) = scene.cast_box(&b, Vec3A::from(v(u)?), Scene::ALL) {
            assert!((0.0..=1.0).contains(&s.t), "sweep t {}", s.t);
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
