//! Property tests of `slabtree::d2` against the definitions, in `f64` and independent of the code
//! under test: swap symmetry and reference-face contacts of the box manifolds, speculative points,
//! GJK distance against brute force, and the time-of-impact guarantees (hits within target ±
//! tolerance, separated sweeps, initial overlap, rotation-only sweeps, no tunnelling).

use glam::{DVec2, Vec2};
use proptest::prelude::*;
use slabtree::Aabb2;
use slabtree::d2::{
    self, DistanceInput, LINEAR_SLOP, OrientedBox, Polygon, RayCastInput, Rot, SPECULATIVE_DISTANCE, SimplexCache,
    Sweep, TOI_TOLERANCE, ToiInput, ToiState, Transform,
};

// ---------------------------------------------------------------------------------------------
// f64 geometry: the definitions.

fn d(v: Vec2) -> DVec2 {
    v.as_dvec2()
}

/// World vertices of a polygon's core (no radius) under `xf`, in f64.
fn world(p: &Polygon, xf: Transform) -> Vec<DVec2> {
    let (c, s) = (xf.q.c as f64, xf.q.s as f64);
    p.vertices()
        .iter()
        .map(|v| DVec2::new(c * v.x as f64 - s * v.y as f64, s * v.x as f64 + c * v.y as f64) + d(xf.p))
        .collect()
}

fn box_world(b: &OrientedBox) -> Vec<DVec2> {
    let (c, s) = (b.rot.c as f64, b.rot.s as f64);
    let (ax, ay) = (DVec2::new(c, s), DVec2::new(-s, c));
    let h = d(b.half_extents);
    let o = d(b.center);
    vec![o - ax * h.x - ay * h.y, o + ax * h.x - ay * h.y, o + ax * h.x + ay * h.y, o - ax * h.x + ay * h.y]
}

/// Outward unit normals of a counter-clockwise convex polygon.
fn normals(v: &[DVec2]) -> Vec<DVec2> {
    (0..v.len()).map(|i| (v[(i + 1) % v.len()] - v[i]).perp().normalize() * -1.0).collect()
}

/// The SAT separation of two convex polygons: the largest gap along any edge normal (negative:
/// the smallest penetration).
fn sat(a: &[DVec2], b: &[DVec2]) -> f64 {
    let one = |p: &[DVec2], q: &[DVec2]| {
        normals(p)
            .iter()
            .zip(p)
            .map(|(n, v)| q.iter().map(|w| n.dot(*w - *v)).fold(f64::INFINITY, f64::min))
            .fold(f64::NEG_INFINITY, f64::max)
    };
    one(a, b).max(one(b, a))
}

fn point_segment(p: DVec2, a: DVec2, b: DVec2) -> f64 {
    let e = b - a;
    let t = ((p - a).dot(e) / e.length_squared()).clamp(0.0, 1.0);
    (p - (a + e * t)).length()
}

/// The distance between two convex polygons (0 when they overlap).
fn distance(a: &[DVec2], b: &[DVec2]) -> f64 {
    if sat(a, b) <= 0.0 {
        return 0.0;
    }
    let one = |p: &[DVec2], q: &[DVec2]| {
        p.iter()
            .flat_map(|v| (0..q.len()).map(move |i| point_segment(*v, q[i], q[(i + 1) % q.len()])))
            .fold(f64::INFINITY, f64::min)
    };
    one(a, b).min(one(b, a))
}

/// The pose of a sweep at `t`, from the sweep's definition (f64: lerp, nlerp, shift).
fn sweep_at(s: &Sweep, t: f64) -> (DVec2, f64, f64) {
    let c = d(s.c1) * (1.0 - t) + d(s.c2) * t;
    let (qc, qs) = (s.q1.c as f64 * (1.0 - t) + s.q2.c as f64 * t, s.q1.s as f64 * (1.0 - t) + s.q2.s as f64 * t);
    let m = (qc * qc + qs * qs).sqrt();
    let (qc, qs) = (qc / m, qs / m);
    let lc = d(s.local_center);
    (c - DVec2::new(qc * lc.x - qs * lc.y, qs * lc.x + qc * lc.y), qc, qs)
}

fn swept(p: &Polygon, s: &Sweep, t: f64) -> Vec<DVec2> {
    let (o, c, sn) = sweep_at(s, t);
    p.vertices()
        .iter()
        .map(|v| DVec2::new(c * v.x as f64 - sn * v.y as f64, sn * v.x as f64 + c * v.y as f64) + o)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Generators.

fn angle() -> impl Strategy<Value = f32> {
    -std::f32::consts::PI..std::f32::consts::PI
}

fn oriented_box() -> impl Strategy<Value = OrientedBox> {
    (-3.0f32..3.0, -3.0f32..3.0, 0.1f32..2.0, 0.1f32..2.0, angle())
        .prop_map(|(x, y, hx, hy, a)| OrientedBox::new(Vec2::new(x, y), Vec2::new(hx, hy), a))
}

/// Two boxes, B's centre in a random direction from A's at `s` times the sum of the
/// half-diagonals, `s` in [0, 1.1) (as the reference cases are drawn).
fn box_pair() -> impl Strategy<Value = (OrientedBox, OrientedBox)> {
    (oriented_box(), oriented_box(), angle(), 0.0f32..1.1).prop_map(|(a, mut b, dir, s)| {
        let r = a.half_extents.length() + b.half_extents.length();
        b.center = a.center + Vec2::new(dir.cos(), dir.sin()) * (s * r);
        (a, b)
    })
}

/// Pairs from [`box_pair`] that penetrate by at least 1e-3 on every face axis. About a third of
/// `box_pair`'s output is separated; filtering here (a local reject, budget 65536) rather than with
/// `prop_assume!` (a global reject, budget 1024) keeps 2000 cases from exhausting the budget.
fn penetrating_box_pair() -> impl Strategy<Value = (OrientedBox, OrientedBox)> {
    box_pair().prop_filter("boxes do not penetrate", |(a, b)| face_separations(a, b).iter().all(|x| x.0 < -1e-3))
}

/// Boxes (plain or offset and rotated) and hulls of 3 to 8 points, sometimes rounded.
fn polygon() -> impl Strategy<Value = Polygon> {
    let radius = prop_oneof![Just(0.0f32), 0.01f32..0.3];
    let boxes = (0.05f32..2.0, 0.05f32..2.0, -0.5f32..0.5, -0.5f32..0.5, angle(), any::<bool>()).prop_map(
        |(hx, hy, cx, cy, a, offset)| {
            if offset {
                Polygon::make_offset_box(hx, hy, Vec2::new(cx, cy), Rot::from_angle(a))
            } else {
                Polygon::make_box(hx, hy)
            }
        },
    );
    let hulls = prop::collection::vec((-1.0f32..1.0, -1.0f32..1.0), 3..=8).prop_filter_map("degenerate hull", |pts| {
        let pts: Vec<Vec2> = pts.into_iter().map(|(x, y)| Vec2::new(x, y)).collect();
        Polygon::from_hull(&d2::compute_hull(&pts), 0.0).filter(|p| {
            let w = world(p, Transform::IDENTITY);
            // Keep edges of at least 1 cm (Box2D's GJK caveat for shorter ones) and some area.
            (0..w.len()).all(|i| (w[(i + 1) % w.len()] - w[i]).length() > 0.01)
        })
    });
    (prop_oneof![boxes, hulls], radius).prop_map(|(p, r)| Polygon { radius: r, ..p })
}

fn transform() -> impl Strategy<Value = Transform> {
    (-2.0f32..2.0, -2.0f32..2.0, angle()).prop_map(|(x, y, a)| Transform::new(Vec2::new(x, y), Rot::from_angle(a)))
}

// ---------------------------------------------------------------------------------------------
// Box–box manifolds (Box2D-Lite).

/// The four face separations in Box2D-Lite's order (A.x, A.y, B.x, B.y) with each axis's
/// half-extent, in f64.
fn face_separations(a: &OrientedBox, b: &OrientedBox) -> [(f64, f64); 4] {
    let axes = |x: &OrientedBox| {
        let (c, s) = (x.rot.c as f64, x.rot.s as f64);
        [DVec2::new(c, s), DVec2::new(-s, c)]
    };
    let (aa, ab) = (axes(a), axes(b));
    let dp = d(b.center) - d(a.center);
    let (ha, hb) = (d(a.half_extents), d(b.half_extents));
    let radius = |axes: &[DVec2; 2], h: DVec2, n: DVec2| h.x * axes[0].dot(n).abs() + h.y * axes[1].dot(n).abs();
    [
        (dp.dot(aa[0]).abs() - ha.x - radius(&ab, hb, aa[0]), ha.x),
        (dp.dot(aa[1]).abs() - ha.y - radius(&ab, hb, aa[1]), ha.y),
        (dp.dot(ab[0]).abs() - hb.x - radius(&aa, ha, ab[0]), hb.x),
        (dp.dot(ab[1]).abs() - hb.y - radius(&aa, ha, ab[1]), hb.y),
    ]
}

/// The axis Box2D-Lite's hysteresis picks in either order, when no other axis is within `margin`
/// of deciding differently; `None` near a tie.
fn decisive_axis(f: &[(f64, f64); 4], margin: f64) -> Option<usize> {
    let best = (0..4).max_by(|&i, &j| f[i].0.total_cmp(&f[j].0))?;
    let (sb, hb) = f[best];
    let clear = (0..4).filter(|&o| o != best).all(|o| {
        let (so, ho) = f[o];
        so < 0.95 * sb + 0.01 * ho - margin && sb > 0.95 * so + 0.01 * hb + margin
    });
    clear.then_some(best)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Swapping A and B negates the normal and gives the same points (with flipped features),
    /// whenever the reference face is not a near-tie of the hysteresis.
    #[test]
    fn box_swap_symmetry((a, b) in penetrating_box_pair()) {
        let f = face_separations(&a, &b);
        let Some(axis) = decisive_axis(&f, 1e-3) else { return Ok(()) };
        // The normal's sign is decided by the sign of the centre offset on that axis.
        let dp = d(b.center) - d(a.center);
        let r = if axis < 2 { a.rot } else { b.rot };
        let n = if axis % 2 == 0 { DVec2::new(r.c as f64, r.s as f64) } else { DVec2::new(-r.s as f64, r.c as f64) };
        prop_assume!(dp.dot(n).abs() > 1e-4);

        let ab = d2::collide_boxes(&a, &b);
        let ba = d2::collide_boxes(&b, &a);
        prop_assert_eq!(ab.count, ba.count);
        for c in ab.contacts() {
            let m = ba.contacts().iter().find(|o| o.feature == c.feature.flipped());
            prop_assert!(m.is_some(), "no swapped twin of {:?} in {:?}", c, ba);
            let m = m.unwrap();
            prop_assert_eq!(m.normal, -c.normal);
            prop_assert!((m.position - c.position).length() <= 1e-5 * (1.0 + c.position.length()));
            prop_assert!((m.separation - c.separation).abs() <= 1e-5);
        }
    }

    /// Every contact lies on the reference face (a face of A with outward normal `normal`, or a
    /// face of B with outward normal `-normal`), with separation ≤ 0, and its incident point
    /// (`position + separation · face normal`) lies on the other box's boundary.
    #[test]
    fn box_contacts_on_reference_face((a, b) in box_pair()) {
        let m = d2::collide_boxes(&a, &b);
        let (wa, wb) = (box_world(&a), box_world(&b));
        if m.count > 0 {
            prop_assert!(sat(&wa, &wb) <= 1e-5, "contacts for separated boxes: {:?}", m);
        }
        let on_face = |poly: &[DVec2], n: DVec2, p: DVec2| {
            let nn = normals(poly);
            (0..4).any(|i| {
                let (v0, v1) = (poly[i], poly[(i + 1) % 4]);
                nn[i].dot(n) > 1.0 - 1e-6 && point_segment(p, v0, v1) <= 1e-4
            })
        };
        let on_boundary = |poly: &[DVec2], p: DVec2| (0..4).any(|i| point_segment(p, poly[i], poly[(i + 1) % 4]) <= 1e-4);
        for c in m.contacts() {
            prop_assert!(c.separation <= 0.0);
            let (p, n) = (d(c.position), d(c.normal));
            let ref_a = on_face(&wa, n, p);
            let ref_b = on_face(&wb, -n, p);
            prop_assert!(ref_a || ref_b, "{:?} is on no reference face", c);
            let front = if ref_a { n } else { -n };
            let incident = p + front * c.separation as f64;
            prop_assert!(on_boundary(if ref_a { &wb } else { &wa }, incident), "incident point {} off the other box", incident);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Polygon manifolds (Box2D v3).

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Two aligned boxes a gap `g` apart: two speculative points at the ends of the overlap of
    /// the facing edges, midway across the gap, when `g` is within the speculative distance, and
    /// none beyond it.
    #[test]
    fn aligned_boxes_speculative(
        hwa in 0.1f32..2.0, hha in 0.1f32..2.0, hwb in 0.1f32..2.0, hhb in 0.1f32..2.0,
        shift in -0.9f32..0.9, gap in 0.0f32..0.03,
    ) {
        prop_assume!((gap - SPECULATIVE_DISTANCE).abs() > 1e-4);
        let dx = shift * (hwa + hwb - 0.05);
        let a = Polygon::make_box(hwa, hha);
        let b = Polygon::make_box(hwb, hhb);
        let m = d2::collide_polygons(&a, &b, Transform::new(Vec2::new(dx, hha + hhb + gap), Rot::IDENTITY));
        let gap64 = (hha + hhb + gap) as f64 - hha as f64 - hhb as f64;
        if gap > SPECULATIVE_DISTANCE {
            prop_assert_eq!(m.point_count, 0);
            return Ok(());
        }
        prop_assert_eq!(m.point_count, 2);
        prop_assert_eq!(m.normal, Vec2::Y);
        let (lo, hi) = ((-hwa).max(dx - hwb) as f64, hwa.min(dx + hwb) as f64);
        let mut xs: Vec<f64> = m.points().iter().map(|p| p.point.x as f64).collect();
        xs.sort_by(f64::total_cmp);
        prop_assert!((xs[0] - lo).abs() < 1e-5 && (xs[1] - hi).abs() < 1e-5, "{:?} want {} {}", xs, lo, hi);
        for p in m.points() {
            prop_assert!((p.separation as f64 - gap64).abs() < 1e-5);
            prop_assert!((p.point.y as f64 - (hha as f64 + 0.5 * gap64)).abs() < 1e-5);
        }
        // Box2D-Lite has no speculative contacts: apart is apart.
        let la = OrientedBox::with_rot(Vec2::ZERO, Vec2::new(hwa, hha), Rot::IDENTITY);
        let lb = OrientedBox::with_rot(Vec2::new(dx, hha + hhb + gap), Vec2::new(hwb, hhb), Rot::IDENTITY);
        if gap > 1e-5 {
            prop_assert_eq!(d2::collide_boxes(&la, &lb).count, 0);
        }
    }

    /// Swapping A and B negates the normal and gives the same points, unless the two reference
    /// candidates tie (then with ids byte-swapped: the high byte is always the vertex of the first
    /// argument).
    #[test]
    fn polygon_swap_symmetry(a in polygon(), b in polygon(), xf in transform()) {
        let (wa, wb) = (world(&a, Transform::IDENTITY), world(&b, xf));
        let one = |p: &[DVec2], q: &[DVec2]| normals(p).iter().zip(p)
            .map(|(n, v)| q.iter().map(|w| n.dot(*w - *v)).fold(f64::INFINITY, f64::min))
            .fold(f64::NEG_INFINITY, f64::max);
        let (sa, sb) = (one(&wa, &wb), one(&wb, &wa));
        prop_assume!((sa - sb).abs() > 1e-3 && (sa.max(sb) - 0.1 * LINEAR_SLOP as f64).abs() > 1e-3);
        let ab = d2::collide_polygons(&a, &b, xf);
        let inv = Transform::IDENTITY.inv_mul(xf).inv_mul(Transform::IDENTITY);
        let ba = d2::collide_polygons(&b, &a, inv);
        let radius = (a.radius + b.radius) as f64;
        prop_assume!((sat(&wa, &wb) - radius - SPECULATIVE_DISTANCE as f64).abs() > 1e-3);
        prop_assert_eq!(ab.point_count, ba.point_count);
        let n_ba = d(xf.q.rotate(ba.normal));
        prop_assert!(ab.point_count == 0 || (d(ab.normal) + n_ba).length() < 1e-4);
        for p in ab.points() {
            let twin = ba.points().iter().find(|q| q.id == p.id.rotate_left(8));
            prop_assert!(twin.is_some(), "no twin of {:?} in {:?}", p, ba);
            let q = twin.unwrap();
            prop_assert!((d(xf.apply(q.point)) - d(p.point)).length() < 1e-4);
            prop_assert!((q.separation - p.separation).abs() < 1e-4);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GJK distance.

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    /// GJK gives the brute-force distance, closest points that realise it, and a normal along
    /// them; a warm start from the returned cache gives the same answer.
    #[test]
    fn gjk_matches_brute_force(a in polygon(), b in polygon(), xf in transform(), use_radii in any::<bool>()) {
        let (wa, wb) = (world(&a, Transform::IDENTITY), world(&b, xf));
        let core = distance(&wa, &wb);
        let sep = sat(&wa, &wb);
        let input = DistanceInput { proxy_a: a.proxy(), proxy_b: b.proxy(), transform: xf, use_radii };
        let mut cache = SimplexCache::default();
        let o = d2::shape_distance(&input, &mut cache);
        if sep < -1e-4 {
            prop_assert_eq!(o.distance, 0.0);
            return Ok(());
        }
        prop_assume!(sep > 1e-4);
        let radii = if use_radii { (a.radius + b.radius) as f64 } else { 0.0 };
        let want = (core - radii).max(0.0);
        prop_assert!((o.distance as f64 - want).abs() <= 1e-5 * (1.0 + want), "{} want {}", o.distance, want);
        prop_assert!((o.normal.length() - 1.0).abs() < 1e-5);
        if !use_radii {
            let gap = d(o.point_b) - d(o.point_a);
            prop_assert!((gap.length() - core).abs() < 1e-4);
            prop_assert!((gap - d(o.normal) * core).length() < 1e-4);
        }
        let again = d2::shape_distance(&input, &mut cache);
        prop_assert!((again.distance - o.distance).abs() <= 1e-6 * (1.0 + o.distance));
    }
}

// ---------------------------------------------------------------------------------------------
// Time of impact.

fn toi(a: &Polygon, b: &Polygon, sa: Sweep, sb: Sweep, max_fraction: f32) -> d2::ToiOutput {
    d2::time_of_impact(&ToiInput { proxy_a: a.proxy(), proxy_b: b.proxy(), sweep_a: sa, sweep_b: sb, max_fraction })
}

fn sweep(lc: Vec2, c1: Vec2, c2: Vec2, a1: f32, a2: f32) -> Sweep {
    Sweep { local_center: lc, c1, c2, q1: Rot::from_angle(a1), q2: Rot::from_angle(a2) }
}

/// Checks a TOI result against the definitions: at a hit with fraction > 0 the core distance is
/// within target ± tolerance; before the fraction (`samples` > 0), a dense sampling never
/// overlaps (nor comes below target − tolerance).
///
/// The sampling holds for translations, where each separation function is concave in time. With
/// rotation Box2D's local separating axis method may miss an intermediate approach that separates
/// again by `max_fraction` ("may miss some intermediate, non-tunneling collisions",
/// `b2TimeOfImpact`'s documentation); callers sample rotating sweeps only where a miss would be
/// tunnelling.
fn check_toi(
    a: &Polygon,
    b: &Polygon,
    sa: &Sweep,
    sb: &Sweep,
    max_fraction: f32,
    samples: usize,
) -> Result<d2::ToiOutput, TestCaseError> {
    let o = toi(a, b, *sa, *sb, max_fraction);
    let target = d2::toi_target(a.radius, b.radius) as f64;
    let tol = TOI_TOLERANCE as f64;
    let at = |t: f64| distance(&swept(a, sa, t), &swept(b, sb, t));
    prop_assert!(o.state != ToiState::Failed && o.state != ToiState::Unknown, "{:?}", o);
    let end = match o.state {
        ToiState::Hit => {
            if o.fraction > 0.0 {
                let dist = at(o.fraction as f64);
                prop_assert!(
                    (dist - target).abs() <= tol + 1e-5,
                    "distance {} at t {} outside {} ± {}",
                    dist,
                    o.fraction,
                    target,
                    tol
                );
            }
            o.fraction as f64
        }
        ToiState::Separated => {
            prop_assert_eq!(o.fraction, max_fraction);
            max_fraction as f64
        }
        _ => return Ok(o),
    };
    // A hit at t = 0 (already within the band) has no "before".
    for k in 0..if end > 0.0 { samples } else { 0 } {
        let t = end * k as f64 / samples as f64;
        let dist = at(t);
        prop_assert!(dist > 0.0, "overlap at t {} before the TOI {:?}", t, o);
        prop_assert!(dist >= target - tol - 1e-5, "distance {} < target - tol at t {} before {:?}", dist, t, o);
    }
    Ok(o)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]

    /// General sweeps of both bodies (translation and rotation within Box2D's per-step limit):
    /// hits are at target ± tolerance, separated sweeps end at tMax, initial overlap is reported,
    /// and for translations nothing comes closer than the target before the result.
    #[test]
    fn toi_definitions(
        a in polygon(), b in polygon(),
        ca in (-1.0f32..1.0, -1.0f32..1.0), cb in (-4.0f32..4.0, -4.0f32..4.0),
        da in (-1.0f32..1.0, -1.0f32..1.0), db in (-6.0f32..6.0, -6.0f32..6.0),
        (a1, b1) in (angle(), angle()),
        a2 in prop_oneof![Just(0.0f32), -0.78f32..0.78], b2 in prop_oneof![Just(0.0f32), -0.78f32..0.78],
        max_fraction in prop_oneof![Just(1.0f32), 0.1f32..1.0],
    ) {
        let sa = sweep(a.centroid, Vec2::new(ca.0, ca.1), Vec2::new(ca.0 + da.0, ca.1 + da.1), a1, a1 + a2);
        let sb = sweep(b.centroid, Vec2::new(cb.0, cb.1), Vec2::new(cb.0 + db.0, cb.1 + db.1), b1, b1 + b2);
        let start = distance(&swept(&a, &sa, 0.0), &swept(&b, &sb, 0.0));
        let translation_only = a2 == 0.0 && b2 == 0.0;
        let o = check_toi(&a, &b, &sa, &sb, max_fraction, if translation_only { 400 } else { 0 })?;
        let target = d2::toi_target(a.radius, b.radius) as f64;
        if start == 0.0 {
            prop_assert_eq!(o.state, ToiState::Overlapped);
            prop_assert_eq!(o.fraction, 0.0);
        } else if start > target + TOI_TOLERANCE as f64 + 1e-5 {
            prop_assert!(o.state != ToiState::Overlapped);
        }
    }

    /// Sweeps that stay far apart (B moves parallel to A's side, outside a clearance band) are
    /// separated, with t = tMax.
    #[test]
    fn toi_separated_sweeps(a in polygon(), b in polygon(), y in 7.0f32..10.0, x0 in -5.0f32..5.0, dx in -10.0f32..10.0,
        (a1, b1, b2) in (angle(), angle(), -0.78f32..0.78), max_fraction in prop_oneof![Just(1.0f32), 0.1f32..1.0]) {
        // Every shape here fits in a disc of radius 3.2 about its centroid.
        let sa = sweep(a.centroid, Vec2::ZERO, Vec2::ZERO, a1, a1);
        let sb = sweep(b.centroid, Vec2::new(x0, y), Vec2::new(x0 + dx, y), b1, b1 + b2);
        let o = check_toi(&a, &b, &sa, &sb, max_fraction, 50)?;
        prop_assert_eq!(o.state, ToiState::Separated);
        prop_assert_eq!(o.fraction, max_fraction);
    }

    /// Shapes that start overlapped report `Overlapped` at t = 0.
    #[test]
    fn toi_initial_overlap(a in polygon(), b in polygon(), off in (-0.02f32..0.02, -0.02f32..0.02), db in (-3.0f32..3.0, -3.0f32..3.0), (a1, b1) in (angle(), angle())) {
        // B's centroid placed on A's centroid: the cores overlap.
        let sa = sweep(a.centroid, Vec2::ZERO, Vec2::ZERO, a1, a1);
        let c = Vec2::new(off.0, off.1);
        let sb = sweep(b.centroid, c, c + Vec2::new(db.0, db.1), b1, b1);
        prop_assume!(sat(&swept(&a, &sa, 0.0), &swept(&b, &sb, 0.0)) < -1e-4);
        let o = toi(&a, &b, sa, sb, 1.0);
        prop_assert_eq!(o.state, ToiState::Overlapped);
        prop_assert_eq!(o.fraction, 0.0);
    }

    /// Rotation only: a long bar turning about its centre swings its end into a box.
    ///
    /// The turn always reaches angle 0 (`a1 + turn >= 0`), where the bar's centre line passes
    /// through the block's centre, so a hit exists. (A turn ending short of 0 may miss: the
    /// bar at -0.043 rad passes 0.03 below a block of half-size 0.05.)
    #[test]
    fn toi_rotation_only(len in 1.5f32..3.0, thick in 0.02f32..0.1, a1 in -0.8f32..-0.5, turn in 0.8f32..1.4, bx in 0.5f32..0.95, hb in 0.05f32..0.2) {
        let bar = Polygon::make_box(len, thick);
        let block = Polygon::make_box(hb, hb);
        // The block sits on the bar's swept circle at angle 0, beyond the bar's half-thickness.
        let r = bx * len;
        let sa = sweep(Vec2::ZERO, Vec2::ZERO, Vec2::ZERO, a1, a1 + turn);
        let sb = sweep(Vec2::ZERO, Vec2::new(r, 0.0), Vec2::new(r, 0.0), 0.0, 0.0);
        prop_assume!(sat(&swept(&bar, &sa, 0.0), &swept(&block, &sb, 0.0)) > 0.05);
        let o = check_toi(&bar, &block, &sa, &sb, 1.0, 2000)?;
        prop_assert_eq!(o.state, ToiState::Hit);
        prop_assert!(o.fraction > 0.0);
    }

    /// Fast thin shapes never tunnel: a small box (0.02–0.3) crossing a thin wall (half-thickness
    /// 0.005–0.1) at 1–100 units per step hits it, and before the hit no sample overlaps; for pure
    /// translation the hit is at most the exact first-contact time, and not earlier than the
    /// target gap allows.
    #[test]
    fn toi_no_tunnelling(half_thick in 0.005f32..0.1, wall_len in 0.5f32..3.0, size in 0.01f32..0.15,
        speed in 1.0f32..100.0, y in -0.25f32..0.25, tilt in -0.5f32..0.5, spin in prop_oneof![Just(0.0f32), -0.78f32..0.78],
        wall_r in prop_oneof![Just(0.0f32), 0.0f32..0.05], swap in any::<bool>()) {
        let wall = Polygon { radius: wall_r, ..Polygon::make_box(half_thick, wall_len) };
        let bullet = Polygon::make_box(size, size);
        let start = -0.5 * speed;
        let sw = sweep(Vec2::ZERO, Vec2::ZERO, Vec2::ZERO, 0.0, 0.0);
        let dir = Vec2::new(tilt.cos(), tilt.sin());
        let sb = sweep(Vec2::ZERO, Vec2::new(0.0, y) + dir * start, Vec2::new(0.0, y) - dir * start, 0.3, 0.3 + spin);
        let samples = ((4.0 * speed / (half_thick + size)) as usize).clamp(500, 40_000);
        let o = if swap {
            check_toi(&bullet, &wall, &sb, &sw, 1.0, samples)?
        } else {
            check_toi(&wall, &bullet, &sw, &sb, 1.0, samples)?
        };
        prop_assert_eq!(o.state, ToiState::Hit, "tunnelled: {:?}", o);
        if spin == 0.0 {
            // Exact first contact of the translating cores: the first t where the SAT gap is 0.
            let gap = |t: f64| sat(&swept(&wall, &sw, t), &swept(&bullet, &sb, t));
            let (mut lo, mut hi) = (0.0f64, 0.5f64);
            for _ in 0..60 {
                let mid = 0.5 * (lo + hi);
                if gap(mid) > 0.0 { lo = mid } else { hi = mid }
            }
            let target = d2::toi_target(wall.radius, bullet.radius) as f64;
            let t = o.fraction as f64;
            prop_assert!(t <= hi, "TOI {} after first contact {}", t, hi);
            prop_assert!(t * speed as f64 >= lo * speed as f64 - 2.0 * target - 1e-4, "TOI {} far before contact {}", t, lo);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Ray casts and rotations.

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    /// `raycast_aabb` against the f64 slab definition, away from grazing ties.
    #[test]
    fn raycast_aabb_definition(lx in -5.0f32..5.0, ly in -5.0f32..5.0, w in 0.05f32..4.0, h in 0.05f32..4.0,
        p1 in (-8.0f32..8.0, -8.0f32..8.0), p2 in (-8.0f32..8.0, -8.0f32..8.0)) {
        let b = Aabb2::new(Vec2::new(lx, ly), Vec2::new(lx + w, ly + h));
        let (p1, p2) = (Vec2::new(p1.0, p1.1), Vec2::new(p2.0, p2.1));
        let dv = d(p2) - d(p1);
        prop_assume!(dv.x.abs() > 1e-3 && dv.y.abs() > 1e-3);
        let slab = |a: usize| {
            let (t1, t2) = ((d(b.min)[a] - d(p1)[a]) / dv[a], (d(b.max)[a] - d(p1)[a]) / dv[a]);
            (t1.min(t2), t1.max(t2))
        };
        let ((nx, fx), (ny, fy)) = (slab(0), slab(1));
        let axis = if ny > nx { 1 } else { 0 };
        let t = [nx.max(ny), fx.min(fy)];
        let hit = t[0] <= t[1] && (0.0..=1.0).contains(&t[0]);
        prop_assume!((t[0] - t[1]).abs() > 1e-5 && t[0].abs() > 1e-5 && (t[0] - 1.0).abs() > 1e-5 && (nx - ny).abs() > 1e-5);
        let o = d2::raycast_aabb(&b, p1, p2);
        prop_assert_eq!(o.is_some(), hit);
        if let Some(o) = o {
            prop_assert!((o.fraction as f64 - t[0]).abs() < 1e-5);
            let mut n = DVec2::ZERO;
            n[axis] = -dv[axis].signum();
            prop_assert_eq!(d(o.normal), n);
        }
    }

    /// `raycast_polygon`: sharp polygons against f64 Cyrus–Beck clipping; rounded ones stop at the
    /// rounded surface (within the cast's target band).
    #[test]
    fn raycast_polygon_definition(p in polygon(), o in (-4.0f32..4.0, -4.0f32..4.0), tr in (-8.0f32..8.0, -8.0f32..8.0), max_fraction in 0.2f32..1.5) {
        let input = RayCastInput { origin: Vec2::new(o.0, o.1), translation: Vec2::new(tr.0, tr.1), max_fraction };
        let out = d2::raycast_polygon(&p, &input);
        let w = world(&p, Transform::IDENTITY);
        let (org, dv) = (d(input.origin), d(input.translation));
        if p.radius == 0.0 {
            let (mut lo, mut hi) = (0.0f64, max_fraction as f64);
            for (n, v) in normals(&w).iter().zip(&w) {
                let (num, den) = (n.dot(*v - org), n.dot(dv));
                if den.abs() < 1e-9 { if num < 0.0 { hi = -1.0 } continue }
                if den < 0.0 { lo = lo.max(num / den) } else { hi = hi.min(num / den) }
            }
            prop_assume!((lo - hi).abs() > 1e-5);
            prop_assert_eq!(out.hit, lo <= hi);
            if out.hit {
                prop_assert!((out.fraction as f64 - lo).abs() < 1e-5);
            }
        } else if out.hit && out.fraction > 0.0 {
            let q = org + dv * out.fraction as f64;
            let core = distance(&w, &[q]);
            let target = d2::toi_target(p.radius, 0.0) as f64;
            prop_assert!((core - target).abs() <= TOI_TOLERANCE as f64 + 1e-5, "core distance {} target {}", core, target);
        }
    }

    /// `Rot::from_angle` (Box2D's `b2MakeRot`) is a unit rotation within 0.002 rad of the angle.
    #[test]
    fn make_rot_accuracy(a in -10.0f32..10.0) {
        let q = Rot::from_angle(a);
        prop_assert!(((q.c as f64).hypot(q.s as f64) - 1.0).abs() < 1e-6);
        let err = (q.s as f64).atan2(q.c as f64) - a as f64;
        let err = (err + std::f64::consts::PI).rem_euclid(2.0 * std::f64::consts::PI) - std::f64::consts::PI;
        prop_assert!(err.abs() < 2e-3, "angle error {}", err);
    }

    /// Hulls are convex, counter-clockwise, and hold every input point (up to the 2·slop of
    /// dropped near-collinear points plus the 4·slop welding).
    #[test]
    fn hull_contains_points(pts in prop::collection::vec((-1.0f32..1.0, -1.0f32..1.0), 3..=8)) {
        let pts: Vec<Vec2> = pts.into_iter().map(|(x, y)| Vec2::new(x, y)).collect();
        let hull = d2::compute_hull(&pts);
        prop_assume!(hull.count >= 3);
        let h: Vec<DVec2> = hull.points().iter().map(|&p| d(p)).collect();
        for i in 0..h.len() {
            let (a, b, c) = (h[i], h[(i + 1) % h.len()], h[(i + 2) % h.len()]);
            prop_assert!((b - a).perp_dot(c - b) > 0.0, "not strictly convex CCW at {}", i);
        }
        for p in &pts {
            let outside = normals(&h).iter().zip(&h).map(|(n, v)| n.dot(d(*p) - *v)).fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(outside <= 6.0 * LINEAR_SLOP as f64 + 1e-6, "{} outside the hull by {}", p, outside);
        }
    }
}
