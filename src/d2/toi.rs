//! Time of impact by conservative advancement: Box2D v3's `b2TimeOfImpact` (`distance.c`), the
//! local separating axis method of Erin Catto's "Continuous Collision" (GDC 2013), ported
//! operation for operation.
//!
//! Each outer iteration measures the distance at `t1` with GJK ([`shape_distance`]). Within
//! `target ± tolerance` it is a hit at `t1`. Otherwise the GJK simplex defines a separation
//! function — between two points, or between a face of A or of B and a point of the other — and
//! the time where its deepest point reaches `target` is found by a root finder mixing bisection and
//! false position. The sweeps advance to that time and the outer loop repeats. Because the
//! separation function bounds the true distance from below, advancing never passes the first
//! contact: thin, fast shapes do not tunnel. For pure translations every separation function is
//! concave in time, so nothing comes closer than `target − tolerance` before the result. With
//! rotation, as Box2D documents, the method "may miss some intermediate, non-tunneling
//! collisions": two shapes that approach and separate again within the interval can be reported
//! `Separated`. A shape that ends beyond the separating axis (tunnelling) is caught.
//!
//! Box2D's constants: `target = max(slop, rA + rB − slop)` (this snapshot of Box2D v3 — older
//! versions used `rA + rB − 3·slop`), `tolerance = slop / 4`, at most 20 distance iterations,
//! 50 root-finder iterations and 8 push-back iterations.

use glam::Vec2;

use super::distance::{DistanceInput, ShapeProxy, SimplexCache, shape_distance};
use super::math::{Rot, Transform, abs_f, add_scaled, cross_vs, dot, lerp, max_f, neg, normalize, sub};
use super::{LINEAR_SLOP, MAX_POLYGON_VERTICES};

/// The motion of a body over a step (Box2D's `b2Sweep`): the centre of mass moves linearly from
/// `c1` to `c2` and the rotation is normalised-lerped from `q1` to `q2`, about the centre.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sweep {
    /// The centre of mass in the body's local frame (for a polygon, its centroid).
    pub local_center: Vec2,
    /// The world centre of mass at the start.
    pub c1: Vec2,
    /// The world centre of mass at the end.
    pub c2: Vec2,
    /// The rotation at the start.
    pub q1: Rot,
    /// The rotation at the end.
    pub q2: Rot,
}

impl Sweep {
    /// A body that does not move, with its origin at `xf.p` and its centre at the origin.
    pub fn fixed(xf: Transform) -> Sweep {
        Sweep { local_center: Vec2::ZERO, c1: xf.p, c2: xf.p, q1: xf.q, q2: xf.q }
    }

    /// The body's transform at fraction `time` (`b2GetSweepTransform`): centre lerped, rotation
    /// nlerped, then shifted so that `local_center` lands on the centre.
    pub fn transform_at(&self, time: f32) -> Transform {
        let p = Vec2::new((1.0 - time) * self.c1.x + time * self.c2.x, (1.0 - time) * self.c1.y + time * self.c2.y);
        let q = Rot { c: (1.0 - time) * self.q1.c + time * self.q2.c, s: (1.0 - time) * self.q1.s + time * self.q2.s }
            .normalize();
        // Shift to origin
        Transform { p: sub(p, q.rotate(self.local_center)), q }
    }
}

/// The input of [`time_of_impact`] (Box2D's `b2TOIInput`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ToiInput {
    /// Shape A in its body's frame.
    pub proxy_a: ShapeProxy,
    /// Shape B in its body's frame.
    pub proxy_b: ShapeProxy,
    /// The motion of body A.
    pub sweep_a: Sweep,
    /// The motion of body B.
    pub sweep_b: Sweep,
    /// The end of the time interval, at most 1.
    pub max_fraction: f32,
}

/// The outcome of [`time_of_impact`] (Box2D's `b2TOIState`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ToiState {
    /// Not computed (never returned).
    #[default]
    Unknown,
    /// The root finder ran out of iterations; `fraction` is the last safe time.
    Failed,
    /// The shapes overlap at the start: no continuous answer (`fraction` 0).
    Overlapped,
    /// The shapes come within `target ± tolerance` at `fraction` (possibly 0: touching).
    Hit,
    /// The shapes stay apart over the whole interval (`fraction` = `max_fraction`).
    Separated,
}

/// The result of [`time_of_impact`] (Box2D's `b2TOIOutput`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ToiOutput {
    /// The outcome.
    pub state: ToiState,
    /// The time of impact in `[0, max_fraction]`.
    pub fraction: f32,
    /// For `Hit` (and `Failed`): the world point midway between the surfaces.
    pub point: Vec2,
    /// For `Hit` (and `Failed`): the world unit normal from A to B.
    pub normal: Vec2,
}

/// The distance both shapes are kept apart at a hit (Box2D's TOI `target`):
/// `max(slop, radius_a + radius_b − slop)`.
#[inline]
pub fn toi_target(radius_a: f32, radius_b: f32) -> f32 {
    let total_radius = radius_a + radius_b;
    max_f(LINEAR_SLOP, total_radius - LINEAR_SLOP)
}

/// The half-width of the accepted band around the target (Box2D's `0.25 · slop`).
pub const TOI_TOLERANCE: f32 = 0.25 * LINEAR_SLOP;
/// Box2D's limit on the outer (distance) iterations.
pub const TOI_MAX_ITERATIONS: u32 = 20;
/// Box2D's limit on root-finder iterations per push-back.
pub const TOI_MAX_ROOT_ITERATIONS: u32 = 50;

#[derive(Clone, Copy, PartialEq)]
enum SeparationType {
    Points,
    FaceA,
    FaceB,
}

/// Box2D's `b2SeparationFunction`: the signed distance along a fixed axis (in world space for
/// points, in A's or B's frame for a face) as a function of time.
struct SeparationFunction<'a> {
    proxy_a: &'a ShapeProxy,
    proxy_b: &'a ShapeProxy,
    sweep_a: Sweep,
    sweep_b: Sweep,
    local_point: Vec2,
    axis: Vec2,
    kind: SeparationType,
}

impl<'a> SeparationFunction<'a> {
    /// `b2MakeSeparationFunction` from the GJK simplex at `t1`.
    fn new(
        cache: &SimplexCache,
        proxy_a: &'a ShapeProxy,
        sweep_a: &Sweep,
        proxy_b: &'a ShapeProxy,
        sweep_b: &Sweep,
        t1: f32,
    ) -> Self {
        let xf_a = sweep_a.transform_at(t1);
        let xf_b = sweep_b.transform_at(t1);
        let base = |kind, axis, local_point| SeparationFunction {
            proxy_a,
            proxy_b,
            sweep_a: *sweep_a,
            sweep_b: *sweep_b,
            local_point,
            axis,
            kind,
        };

        if cache.count == 1 {
            let point_a = xf_a.apply(proxy_a.points[cache.index_a[0] as usize]);
            let point_b = xf_b.apply(proxy_b.points[cache.index_b[0] as usize]);
            return base(SeparationType::Points, normalize(sub(point_b, point_a)), Vec2::ZERO);
        }

        if cache.index_a[0] == cache.index_a[1] {
            // Two points on B and one on A.
            let local_point_b1 = proxy_b.points[cache.index_b[0] as usize];
            let local_point_b2 = proxy_b.points[cache.index_b[1] as usize];
            let mut axis = normalize(cross_vs(sub(local_point_b2, local_point_b1), 1.0));
            let normal = xf_b.q.rotate(axis);
            let local_point =
                Vec2::new(0.5 * (local_point_b1.x + local_point_b2.x), 0.5 * (local_point_b1.y + local_point_b2.y));
            let point_b = xf_b.apply(local_point);
            let point_a = xf_a.apply(proxy_a.points[cache.index_a[0] as usize]);
            if dot(sub(point_a, point_b), normal) < 0.0 {
                axis = neg(axis);
            }
            return base(SeparationType::FaceB, axis, local_point);
        }

        // Two points on A and one or two points on B.
        let local_point_a1 = proxy_a.points[cache.index_a[0] as usize];
        let local_point_a2 = proxy_a.points[cache.index_a[1] as usize];
        let mut axis = normalize(cross_vs(sub(local_point_a2, local_point_a1), 1.0));
        let normal = xf_a.q.rotate(axis);
        let local_point =
            Vec2::new(0.5 * (local_point_a1.x + local_point_a2.x), 0.5 * (local_point_a1.y + local_point_a2.y));
        let point_a = xf_a.apply(local_point);
        let point_b = xf_b.apply(proxy_b.points[cache.index_b[0] as usize]);
        if dot(sub(point_b, point_a), normal) < 0.0 {
            axis = neg(axis);
        }
        base(SeparationType::FaceA, axis, local_point)
    }

    /// The deepest points at time `t` and their separation (`b2FindMinSeparation`).
    fn find_min_separation(&self, t: f32) -> (f32, usize, usize) {
        let xf_a = self.sweep_a.transform_at(t);
        let xf_b = self.sweep_b.transform_at(t);
        match self.kind {
            SeparationType::Points => {
                let axis_a = xf_a.q.inv_rotate(self.axis);
                let axis_b = xf_b.q.inv_rotate(neg(self.axis));
                let index_a = self.proxy_a.support(axis_a);
                let index_b = self.proxy_b.support(axis_b);
                let point_a = xf_a.apply(self.proxy_a.points[index_a]);
                let point_b = xf_b.apply(self.proxy_b.points[index_b]);
                (dot(sub(point_b, point_a), self.axis), index_a, index_b)
            }
            SeparationType::FaceA => {
                let normal = xf_a.q.rotate(self.axis);
                let point_a = xf_a.apply(self.local_point);
                let axis_b = xf_b.q.inv_rotate(neg(normal));
                let index_b = self.proxy_b.support(axis_b);
                let point_b = xf_b.apply(self.proxy_b.points[index_b]);
                (dot(sub(point_b, point_a), normal), usize::MAX, index_b)
            }
            SeparationType::FaceB => {
                let normal = xf_b.q.rotate(self.axis);
                let point_b = xf_b.apply(self.local_point);
                let axis_a = xf_a.q.inv_rotate(neg(normal));
                let index_a = self.proxy_a.support(axis_a);
                let point_a = xf_a.apply(self.proxy_a.points[index_a]);
                (dot(sub(point_a, point_b), normal), index_a, usize::MAX)
            }
        }
    }

    /// The separation of the given points at time `t` (`b2EvaluateSeparation`).
    fn evaluate(&self, index_a: usize, index_b: usize, t: f32) -> f32 {
        let xf_a = self.sweep_a.transform_at(t);
        let xf_b = self.sweep_b.transform_at(t);
        match self.kind {
            SeparationType::Points => {
                let point_a = xf_a.apply(self.proxy_a.points[index_a]);
                let point_b = xf_b.apply(self.proxy_b.points[index_b]);
                dot(sub(point_b, point_a), self.axis)
            }
            SeparationType::FaceA => {
                let normal = xf_a.q.rotate(self.axis);
                let point_a = xf_a.apply(self.local_point);
                let point_b = xf_b.apply(self.proxy_b.points[index_b]);
                dot(sub(point_b, point_a), normal)
            }
            SeparationType::FaceB => {
                let normal = xf_b.q.rotate(self.axis);
                let point_b = xf_b.apply(self.local_point);
                let point_a = xf_a.apply(self.proxy_a.points[index_a]);
                dot(sub(point_a, point_b), normal)
            }
        }
    }
}

/// The first time in `[0, max_fraction]` at which two moving convex shapes come within
/// [`toi_target`] ± [`TOI_TOLERANCE`] of each other, Box2D v3's `b2TimeOfImpact`.
///
/// The result is an upper bound on the time before the shapes penetrate; shapes that start
/// overlapped return [`ToiState::Overlapped`] at 0, and shapes that never come close return
/// [`ToiState::Separated`] at `max_fraction`. Rotations are handled (the swept shapes are not
/// convex hulls of the motion: the separation functions follow the rotation).
///
/// ```
/// use glam::Vec2;
/// use slabtree::d2::{time_of_impact, Polygon, Rot, Sweep, ToiInput, ToiState, Transform};
/// // A 0.1 × 2 wall at x = 0 and a 0.2 box moving from x = -5 to x = 5 in one step.
/// let wall = Polygon::make_box(0.05, 1.0);
/// let bullet = Polygon::make_box(0.1, 0.1);
/// let input = ToiInput {
///     proxy_a: wall.proxy(),
///     proxy_b: bullet.proxy(),
///     sweep_a: Sweep::fixed(Transform::IDENTITY),
///     sweep_b: Sweep {
///         local_center: Vec2::ZERO,
///         c1: Vec2::new(-5.0, 0.0),
///         c2: Vec2::new(5.0, 0.0),
///         q1: Rot::IDENTITY,
///         q2: Rot::IDENTITY,
///     },
///     max_fraction: 1.0,
/// };
/// let out = time_of_impact(&input);
/// assert_eq!(out.state, ToiState::Hit);
/// // It stops with a gap of about one linear slop (0.005) before the wall's face at x = -0.05.
/// let x = -5.0 + 10.0 * out.fraction;
/// assert!((x + 0.1 - (-0.05 - 0.005)).abs() < 0.00125 + 1e-5);
/// ```
pub fn time_of_impact(input: &ToiInput) -> ToiOutput {
    let mut output = ToiOutput { state: ToiState::Unknown, fraction: input.max_fraction, ..ToiOutput::default() };

    let sweep_a = input.sweep_a;
    let sweep_b = input.sweep_b;
    let proxy_a = &input.proxy_a;
    let proxy_b = &input.proxy_b;

    let t_max = input.max_fraction;

    // Setup target distance and tolerance
    let target = toi_target(proxy_a.radius, proxy_b.radius);
    let tolerance = TOI_TOLERANCE;

    let mut t1 = 0.0f32;
    let mut distance_iterations = 0;

    // Prepare input for distance query.
    let mut cache = SimplexCache::default();
    let mut distance_input =
        DistanceInput { proxy_a: *proxy_a, proxy_b: *proxy_b, transform: Transform::IDENTITY, use_radii: false };

    // The outer loop progressively attempts to compute new separating axes.
    // This loop terminates when an axis is repeated (no progress is made).
    loop {
        // Get the distance between shapes. We can also use the results to get a separating axis.
        let xf_a = sweep_a.transform_at(t1);
        let xf_b = sweep_b.transform_at(t1);
        distance_input.transform = xf_a.inv_mul(xf_b);
        let distance_output = shape_distance(&distance_input, &mut cache);

        // The distance query runs in frame A; its witness data back to world space.
        let world_normal = xf_a.q.rotate(distance_output.normal);
        let world_point_a = xf_a.apply(distance_output.point_a);
        let world_point_b = xf_a.apply(distance_output.point_b);
        let hit_point = || {
            // Averaged hit point
            let p_a = add_scaled(world_point_a, proxy_a.radius, world_normal);
            let p_b = add_scaled(world_point_b, -proxy_b.radius, world_normal);
            lerp(p_a, p_b, 0.5)
        };

        distance_iterations += 1;

        // If the shapes are overlapped, we give up on continuous collision.
        if distance_output.distance <= 0.0 {
            output.state = ToiState::Overlapped;
            output.fraction = 0.0;
            break;
        }

        if distance_output.distance <= target + tolerance {
            // Success!
            output = ToiOutput { state: ToiState::Hit, fraction: t1, point: hit_point(), normal: world_normal };
            break;
        }

        // Initialize the separating axis.
        let fcn = SeparationFunction::new(&cache, proxy_a, &sweep_a, proxy_b, &sweep_b, t1);

        // Compute the TOI on the separating axis. We do this by successively resolving the
        // deepest point. This loop is bounded by the number of vertices.
        let mut done = false;
        let mut t2 = t_max;
        let mut push_back_iterations = 0;
        loop {
            // Find the deepest point at t2. Store the witness point indices.
            let (mut s2, index_a, index_b) = fcn.find_min_separation(t2);

            // Is the final configuration separated?
            if s2 > target + tolerance {
                // Victory!
                output.state = ToiState::Separated;
                output.fraction = t_max;
                done = true;
                break;
            }

            // Has the separation reached tolerance?
            if s2 > target - tolerance {
                // Advance the sweeps
                t1 = t2;
                break;
            }

            // Compute the initial separation of the witness points.
            let mut s1 = fcn.evaluate(index_a, index_b, t1);

            // Check for initial overlap. This might happen if the root finder runs out of
            // iterations.
            if s1 < target - tolerance {
                output.state = ToiState::Failed;
                output.fraction = t1;
                done = true;
                break;
            }

            // Check for touching
            if s1 <= target + tolerance {
                // Success! t1 should hold the TOI (could be 0.0).
                output = ToiOutput { state: ToiState::Hit, fraction: t1, point: hit_point(), normal: world_normal };
                done = true;
                break;
            }

            // Compute 1D root of: f(x) - target = 0
            let mut root_iteration_count = 0;
            let (mut a1, mut a2) = (t1, t2);
            loop {
                // Use a mix of false position and bisection.
                let t = if root_iteration_count & 1 == 1 {
                    // False position to improve convergence.
                    a1 + (target - s1) * (a2 - a1) / (s2 - s1)
                } else {
                    // Bisection to guarantee progress.
                    0.5 * (a1 + a2)
                };
                root_iteration_count += 1;

                let s = fcn.evaluate(index_a, index_b, t);

                // Has the separation reached tolerance?
                if abs_f(s - target) < tolerance {
                    // t2 holds a tentative value for t1
                    t2 = t;
                    break;
                }

                // Ensure we continue to bracket the root.
                if s > target {
                    a1 = t;
                    s1 = s;
                } else {
                    a2 = t;
                    s2 = s;
                }

                if root_iteration_count == TOI_MAX_ROOT_ITERATIONS {
                    break;
                }
            }

            push_back_iterations += 1;
            if push_back_iterations == MAX_POLYGON_VERTICES {
                break;
            }
        }

        if done {
            break;
        }

        if distance_iterations == TOI_MAX_ITERATIONS {
            // Root finder got stuck. Semi-victory.
            output = ToiOutput { state: ToiState::Failed, fraction: t1, point: hit_point(), normal: world_normal };
            break;
        }
    }

    output
}
