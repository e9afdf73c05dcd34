//! 2D collision on the shared math core: box–box and polygon contact manifolds (SAT and
//! clipping), GJK distance, time of impact by conservative advancement, and ray casts against
//! [`Aabb2`](crate::Aabb2) and polygons — Box2D's algorithms, ported operation for operation so
//! that the results are bit-for-bit Box2D's (see `tests/box2d_oracle.rs`).
//!
//! | function | Box2D original | what |
//! |---|---|---|
//! | [`collide_boxes`] | Box2D-Lite `Collide` | box–box SAT on 4 face axes, reference-face hysteresis (0.95, 0.01), incident-edge clipping, ≤ 2 contacts with feature pairs |
//! | [`collide_polygons`] | v3 `b2CollidePolygons` | convex (rounded) polygon manifolds in A's frame, speculative points |
//! | [`shape_distance`] | v3 `b2ShapeDistance` | GJK distance, closest points, normal, iterations, warm start from a [`SimplexCache`] |
//! | [`time_of_impact`] | v3 `b2TimeOfImpact` | conservative advancement with separation functions on [`Sweep`]s |
//! | [`raycast_aabb`] | v3 `b2AABB_RayCast` | segment against [`Aabb2`](crate::Aabb2): fraction, point, normal |
//! | [`raycast_polygon`], [`shape_cast`] | v3 `b2RayCastPolygon`, `b2ShapeCast` | rays and linear casts against (rounded) polygons |
//! | [`compute_hull`], [`Polygon`] | v3 `b2ComputeHull`, `b2MakePolygon`, `b2MakeOffsetBox` | shapes: up to 8 vertices, optional radius |
//! | [`Rot::from_angle`] | v3 `b2MakeRot` | Box2D's deterministic cosine and sine |
//!
//! References: Erin Catto, "Fast and Simple Physics using Sequential Impulses" (GDC 2006,
//! Box2D-Lite), "Computing Distance" (GDC 2010), "Continuous Collision" (GDC 2013) and Box2D v3
//! (`github.com/erincatto/box2d`, MIT); Christer Ericson, *Real-Time Collision Detection* (2005).
//!
//! # Exactness
//!
//! Every expression keeps Box2D's operation order, in `f32`, with no fused multiply-add (Box2D
//! builds with `-ffp-contract=off`; Rust never contracts on its own). Queries are plain functions
//! on small `Copy` structs and never allocate.
//!
//! # Example: two boxes colliding, and a fast box against a wall
//!
//! ```
//! use glam::Vec2;
//! use slabtree::d2::{collide_boxes, time_of_impact, OrientedBox, Polygon, Rot, Sweep, ToiInput, ToiState, Transform};
//!
//! // Two boxes: a 2×2 box, and a 1×1 box tilted by 0.1 rad sinking 0.1 into its top face.
//! let a = OrientedBox::new(Vec2::new(0.0, 0.0), Vec2::new(1.0, 1.0), 0.0);
//! let b = OrientedBox::new(Vec2::new(0.2, 1.4), Vec2::new(0.5, 0.5), 0.1);
//! let m = collide_boxes(&a, &b);
//! assert_eq!(m.count, 2);
//! for c in m.contacts() {
//!     assert_eq!(c.normal, Vec2::Y); // from A to B: A's top face is the reference
//!     assert!(c.separation <= 0.0);
//!     assert!((c.position.y - 1.0).abs() < 1e-6); // slid onto the reference face
//! }
//!
//! // A 0.2-wide box crossing 20 m in one step would pass through a 0.1-thick wall.
//! let wall = Polygon::make_box(0.05, 2.0);
//! let bullet = Polygon::make_box(0.1, 0.1);
//! let toi = time_of_impact(&ToiInput {
//!     proxy_a: wall.proxy(),
//!     proxy_b: bullet.proxy(),
//!     sweep_a: Sweep::fixed(Transform::IDENTITY),
//!     sweep_b: Sweep {
//!         local_center: Vec2::ZERO,
//!         c1: Vec2::new(-10.0, 0.3),
//!         c2: Vec2::new(10.0, 0.3),
//!         q1: Rot::IDENTITY,
//!         q2: Rot::from_angle(0.5), // spinning as it flies
//!     },
//!     max_fraction: 1.0,
//! });
//! assert_eq!(toi.state, ToiState::Hit);
//! // It stops at x ≈ -0.18: the spinning box's leading corner one slop (0.005) short of x = -0.05.
//! assert!(toi.fraction > 0.49 && toi.fraction < 0.5);
//! assert!((toi.normal - Vec2::NEG_X).length() < 1e-3); // the wall's face, from A (wall) to B
//! ```

mod distance;
mod hull;
mod lite;
mod manifold;
mod math;
mod polygon;
mod raycast;
mod toi;

pub use distance::{
    DistanceInput, DistanceOutput, GJK_MAX_ITERATIONS, SegmentDistance, ShapeProxy, SimplexCache, segment_distance,
    shape_distance,
};
pub use hull::{Hull, compute_hull};
pub use lite::{
    ABSOLUTE_TOL, BoxContact, BoxManifold, EDGE1, EDGE2, EDGE3, EDGE4, FeaturePair, NO_EDGE, OrientedBox, RELATIVE_TOL,
    collide_boxes,
};
pub use manifold::{LocalManifold, LocalManifoldPoint, collide_polygons};
pub use math::{PI, Rot, Transform, compute_cos_sin, unwind_angle};
pub use polygon::Polygon;
pub use raycast::{CastOutput, RayCastInput, ShapeCastInput, raycast_aabb, raycast_polygon, shape_cast};
pub use toi::{
    Sweep, TOI_MAX_ITERATIONS, TOI_MAX_ROOT_ITERATIONS, TOI_TOLERANCE, ToiInput, ToiOutput, ToiState, time_of_impact,
    toi_target,
};

/// The most vertices a polygon or shape proxy has (Box2D's `B2_MAX_POLYGON_VERTICES`).
pub const MAX_POLYGON_VERTICES: usize = 8;

/// Box2D's collision tolerance `B2_LINEAR_SLOP`, 0.005 m (length units per metre = 1).
pub const LINEAR_SLOP: f32 = 0.005;

/// How far apart polygon manifolds still report (speculative) points: `4 · slop` = 0.02 m
/// (Box2D's `B2_SPECULATIVE_DISTANCE`).
pub const SPECULATIVE_DISTANCE: f32 = 4.0 * LINEAR_SLOP;
