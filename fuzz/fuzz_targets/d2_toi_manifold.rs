//! 2D collision with arbitrary shapes and sweeps: hulls from arbitrary points, polygon and box
//! manifolds, GJK distance, shape casts, ray casts and time of impact.
//!
//! Half the inputs are "sane" (finite coordinates within ±1000, radii in [0, 2], `max_fraction` in
//! [0, 1]), where outputs are checked: at most two manifold points with finite separations, a
//! non-negative finite distance, TOI and cast fractions within `[0, max_fraction]`. The other half
//! are raw bit patterns (NaN, infinities, denormals, huge values), where nothing may panic.
#![no_main]

use glam::Vec2;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use slabtree::d2::{
    DistanceInput, OrientedBox, Polygon, RayCastInput, Rot, ShapeCastInput, SimplexCache, Sweep, ToiInput, ToiState,
    Transform, collide_boxes, collide_polygons, compute_hull, raycast_polygon, shape_cast, shape_distance,
    time_of_impact,
};

struct Gen {
    wild: bool,
}

impl Gen {
    fn f(&self, u: &mut Unstructured) -> Result<f32> {
        if self.wild && u.ratio(1u8, 3)? {
            return Ok(f32::from_bits(u.arbitrary()?));
        }
        Ok(u.arbitrary::<i16>()? as f32 / 32.0)
    }
    fn v(&self, u: &mut Unstructured) -> Result<Vec2> {
        Ok(Vec2::new(self.f(u)?, self.f(u)?))
    }
    fn unit(&self, u: &mut Unstructured, lo: f32, hi: f32) -> Result<f32> {
        if self.wild && u.ratio(1u8, 4)? {
            return Ok(f32::from_bits(u.arbitrary()?));
        }
        Ok(lo + (hi - lo) * (u.arbitrary::<u16>()? as f32 / 65535.0))
    }
    fn rot(&self, u: &mut Unstructured) -> Result<Rot> {
        Ok(Rot::from_angle(self.unit(u, -7.0, 7.0)?))
    }
    fn polygon(&self, u: &mut Unstructured) -> Result<Option<Polygon>> {
        let n = u.int_in_range(1u8..=8)? as usize;
        let mut pts = Vec::with_capacity(n);
        for _ in 0..n {
            pts.push(self.v(u)?);
        }
        let radius = self.unit(u, 0.0, 2.0)?;
        if std::env::var_os("SLABTREE_FUZZ_DEBUG").is_some() {
            eprintln!("compute_hull({:?})", pts.iter().map(|p| (p.x.to_bits(), p.y.to_bits())).collect::<Vec<_>>());
        }
        let hull = compute_hull(&pts);
        assert!(hull.count <= 8);
        Ok(Polygon::from_hull(&hull, radius))
    }
}

fn run(u: &mut Unstructured) -> Result<()> {
    let g = Gen { wild: u.arbitrary()? };
    let Some(a) = g.polygon(u)? else { return Ok(()) };
    let Some(b) = g.polygon(u)? else { return Ok(()) };
    let xf = Transform::new(g.v(u)?, g.rot(u)?);
    let sane = !g.wild;

    let m = collide_polygons(&a, &b, xf);
    assert!(m.point_count <= 2);
    if sane {
        for p in m.points() {
            assert!(p.separation.is_finite(), "separation {}", p.separation);
        }
    }

    let mut cache = SimplexCache::default();
    let d = shape_distance(
        &DistanceInput { proxy_a: a.proxy(), proxy_b: b.proxy(), transform: xf, use_radii: true },
        &mut cache,
    );
    if sane {
        assert!(d.distance >= 0.0 && d.distance.is_finite(), "distance {}", d.distance);
        assert!(cache.count <= 3);
    }

    let max_fraction = g.unit(u, 0.0, 1.0)?;
    let translation = g.v(u)?;
    let cast = shape_cast(&ShapeCastInput {
        proxy_a: a.proxy(),
        proxy_b: b.proxy(),
        transform: xf,
        translation_b: translation,
        max_fraction,
        can_encroach: u.arbitrary()?,
    });
    if sane && cast.hit {
        assert!(cast.fraction >= 0.0 && cast.fraction <= max_fraction, "cast fraction {}", cast.fraction);
    }

    let ray = RayCastInput { origin: g.v(u)?, translation: g.v(u)?, max_fraction };
    let r = raycast_polygon(&a, &ray);
    if sane && r.hit {
        assert!(r.fraction >= 0.0 && r.fraction <= max_fraction, "ray fraction {}", r.fraction);
    }

    let sweep = |u: &mut Unstructured| -> Result<Sweep> {
        Ok(Sweep { local_center: g.v(u)?, c1: g.v(u)?, c2: g.v(u)?, q1: g.rot(u)?, q2: g.rot(u)? })
    };
    let input =
        ToiInput { proxy_a: a.proxy(), proxy_b: b.proxy(), sweep_a: sweep(u)?, sweep_b: sweep(u)?, max_fraction };
    let toi = time_of_impact(&input);
    assert_ne!(toi.state, ToiState::Unknown, "TOI returned Unknown");
    if sane {
        assert!(toi.fraction >= 0.0 && toi.fraction <= max_fraction, "toi fraction {} ({:?})", toi.fraction, toi.state);
    }

    let ba = OrientedBox::new(g.v(u)?, g.v(u)?.abs(), g.unit(u, -7.0, 7.0)?);
    let bb = OrientedBox::new(g.v(u)?, g.v(u)?.abs(), g.unit(u, -7.0, 7.0)?);
    let bm = collide_boxes(&ba, &bb);
    assert!(bm.count <= 2);
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
