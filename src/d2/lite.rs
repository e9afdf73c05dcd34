//! Box–box contact manifolds by the separating axis test and reference-face clipping: Erin
//! Catto's Box2D-Lite `Collide` (`Collide.cpp`, GDC 2006), ported operation for operation.
//!
//! 1. SAT on the four face axes (two per box). Any positive face separation means no contact.
//! 2. The reference face is the axis of largest separation, with hysteresis: a later candidate
//!    (order A.x, A.y, B.x, B.y) replaces the current one only when
//!    `sep > 0.95 · current + 0.01 · half-extent` — so that the choice does not flicker between
//!    nearly equal axes from frame to frame (Box2D-Lite's `relativeTol`, `absoluteTol`).
//! 3. The incident edge is the other box's edge most anti-parallel to the reference normal. It is
//!    clipped (Sutherland–Hodgman) against the reference box's two side planes, and each clipped
//!    point below the reference face becomes a contact, slid onto that face.
//!
//! Feature ids follow Box2D-Lite's numbering (see [`FeaturePair`]) and are flipped when B's face
//! is the reference, so that `*1` edges always belong to box A.

use glam::Vec2;

use super::math::Rot;

/// Box2D-Lite's edge numbering in a box's local frame: [`EDGE1`] is the +y face, [`EDGE2`] −x,
/// [`EDGE3`] −y and [`EDGE4`] +x; [`NO_EDGE`] is 0.
pub const NO_EDGE: u8 = 0;
/// The +y face.
pub const EDGE1: u8 = 1;
/// The −x face.
pub const EDGE2: u8 = 2;
/// The −y face.
pub const EDGE3: u8 = 3;
/// The +x face.
pub const EDGE4: u8 = 4;

/// An oriented box: Box2D-Lite's `Body` as `Collide` sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrientedBox {
    /// The centre.
    pub center: Vec2,
    /// Half the width and half the height (Box2D-Lite stores the full `width` and halves it).
    pub half_extents: Vec2,
    /// The orientation: local x axis `(c, s)`, local y axis `(-s, c)`.
    pub rot: Rot,
}

impl OrientedBox {
    /// A box from its centre, half-extents and angle (cosine and sine from `f32::cos`/`sin`, as
    /// Box2D-Lite's `Mat22(angle)`; use [`OrientedBox::with_rot`] to supply exact values).
    pub fn new(center: Vec2, half_extents: Vec2, angle: f32) -> OrientedBox {
        OrientedBox { center, half_extents, rot: Rot::from_cos_sin(angle.cos(), angle.sin()) }
    }

    /// A box from its centre, half-extents and rotation.
    pub const fn with_rot(center: Vec2, half_extents: Vec2, rot: Rot) -> OrientedBox {
        OrientedBox { center, half_extents, rot }
    }
}

/// The features that made a contact: the edges clipping it in and out, on each box. Box2D-Lite's
/// `FeaturePair` (a union of four `char`s and an `int`). Suffix 1 is box A, suffix 2 box B.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FeaturePair {
    /// The edge of A whose side plane clipped the point in, or `NO_EDGE`.
    pub in_edge1: u8,
    /// The edge of A whose side plane clipped the point out, or `NO_EDGE`.
    pub out_edge1: u8,
    /// The incoming edge of B's incident vertex, or `NO_EDGE`.
    pub in_edge2: u8,
    /// The outgoing edge of B's incident vertex, or `NO_EDGE`.
    pub out_edge2: u8,
}

impl FeaturePair {
    /// The union's `int` on a little-endian machine:
    /// `in1 | out1 << 8 | in2 << 16 | out2 << 24`. Stable across frames, so it keys warm starting.
    #[inline]
    pub fn key(self) -> u32 {
        u32::from_le_bytes([self.in_edge1, self.out_edge1, self.in_edge2, self.out_edge2])
    }

    /// Box2D-Lite's `Flip`: swaps the roles of the two boxes.
    #[inline]
    #[must_use]
    pub fn flipped(self) -> FeaturePair {
        FeaturePair {
            in_edge1: self.in_edge2,
            out_edge1: self.out_edge2,
            in_edge2: self.in_edge1,
            out_edge2: self.out_edge1,
        }
    }
}

/// One contact point of a box–box manifold.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BoxContact {
    /// The clipped incident point slid onto the reference face.
    pub position: Vec2,
    /// The unit normal from A to B (± a column of the reference box's rotation).
    pub normal: Vec2,
    /// The separation along the normal: ≤ 0, negative when penetrating.
    pub separation: f32,
    /// The feature pair identifying the contact.
    pub feature: FeaturePair,
}

/// The contacts between two boxes: 0, 1 or 2.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BoxManifold {
    /// The contacts; the first `count` are valid.
    pub contacts: [BoxContact; 2],
    /// The number of contacts.
    pub count: usize,
}

impl BoxManifold {
    /// The valid contacts.
    #[inline]
    pub fn contacts(&self) -> &[BoxContact] {
        &self.contacts[..self.count]
    }
}

/// Box2D-Lite's `Mat22`, with its operators in the same operation order.
#[derive(Clone, Copy)]
struct Mat22 {
    col1: Vec2,
    col2: Vec2,
}

impl Mat22 {
    fn from_rot(q: Rot) -> Mat22 {
        Mat22 { col1: Vec2::new(q.c, q.s), col2: Vec2::new(-q.s, q.c) }
    }
    fn transpose(self) -> Mat22 {
        Mat22 { col1: Vec2::new(self.col1.x, self.col2.x), col2: Vec2::new(self.col1.y, self.col2.y) }
    }
    fn mul_v(self, v: Vec2) -> Vec2 {
        Vec2::new(self.col1.x * v.x + self.col2.x * v.y, self.col1.y * v.x + self.col2.y * v.y)
    }
    fn mul_m(self, b: Mat22) -> Mat22 {
        Mat22 { col1: self.mul_v(b.col1), col2: self.mul_v(b.col2) }
    }
    fn abs(self) -> Mat22 {
        Mat22 { col1: self.col1.abs(), col2: self.col2.abs() }
    }
}

#[inline(always)]
fn dot(a: Vec2, b: Vec2) -> f32 {
    a.x * b.x + a.y * b.y
}

#[derive(Clone, Copy, Default)]
struct ClipVertex {
    v: Vec2,
    fp: FeaturePair,
}

/// Sutherland–Hodgman clipping of a segment against the half-plane `dot(normal, v) <= offset`
/// (`ClipSegmentToLine`). A new point records `clip_edge` as its in or out edge on box 1.
fn clip_segment_to_line(
    v_out: &mut [ClipVertex; 2],
    v_in: &[ClipVertex; 2],
    normal: Vec2,
    offset: f32,
    clip_edge: u8,
) -> usize {
    let mut num_out = 0;

    // Calculate the distance of end points to the line
    let distance0 = dot(normal, v_in[0].v) - offset;
    let distance1 = dot(normal, v_in[1].v) - offset;

    // If the points are behind the plane
    if distance0 <= 0.0 {
        v_out[num_out] = v_in[0];
        num_out += 1;
    }
    if distance1 <= 0.0 {
        v_out[num_out] = v_in[1];
        num_out += 1;
    }

    // If the points are on different sides of the plane
    if distance0 * distance1 < 0.0 {
        // Find intersection point of edge and plane
        let interp = distance0 / (distance0 - distance1);
        let d = v_in[1].v - v_in[0].v;
        v_out[num_out].v = Vec2::new(v_in[0].v.x + interp * d.x, v_in[0].v.y + interp * d.y);
        if distance0 > 0.0 {
            v_out[num_out].fp = v_in[0].fp;
            v_out[num_out].fp.in_edge1 = clip_edge;
            v_out[num_out].fp.in_edge2 = NO_EDGE;
        } else {
            v_out[num_out].fp = v_in[1].fp;
            v_out[num_out].fp.out_edge1 = clip_edge;
            v_out[num_out].fp.out_edge2 = NO_EDGE;
        }
        num_out += 1;
    }
    num_out
}

/// The edge of the incident box (half-extents `h`, at `pos`, rotated by `rot`) most anti-parallel
/// to the reference `normal`, in world space, with its vertices' feature ids.
fn compute_incident_edge(h: Vec2, pos: Vec2, rot: Mat22, normal: Vec2) -> [ClipVertex; 2] {
    // The normal is from the reference box. Convert it to the incident box's frame and flip sign.
    let n = -rot.transpose().mul_v(normal);
    let n_abs = n.abs();
    // Box2D-Lite's `Sign`: -1 for x < 0, else 1 (so +1 for ±0).
    let sign = |x: f32| if x < 0.0 { -1.0f32 } else { 1.0 };

    let mut c = [ClipVertex::default(); 2];
    let fp = |in2, out2| FeaturePair { in_edge2: in2, out_edge2: out2, ..FeaturePair::default() };
    if n_abs.x > n_abs.y {
        if sign(n.x) > 0.0 {
            c[0] = ClipVertex { v: Vec2::new(h.x, -h.y), fp: fp(EDGE3, EDGE4) };
            c[1] = ClipVertex { v: Vec2::new(h.x, h.y), fp: fp(EDGE4, EDGE1) };
        } else {
            c[0] = ClipVertex { v: Vec2::new(-h.x, h.y), fp: fp(EDGE1, EDGE2) };
            c[1] = ClipVertex { v: Vec2::new(-h.x, -h.y), fp: fp(EDGE2, EDGE3) };
        }
    } else if sign(n.y) > 0.0 {
        c[0] = ClipVertex { v: Vec2::new(h.x, h.y), fp: fp(EDGE4, EDGE1) };
        c[1] = ClipVertex { v: Vec2::new(-h.x, h.y), fp: fp(EDGE1, EDGE2) };
    } else {
        c[0] = ClipVertex { v: Vec2::new(-h.x, -h.y), fp: fp(EDGE2, EDGE3) };
        c[1] = ClipVertex { v: Vec2::new(h.x, -h.y), fp: fp(EDGE3, EDGE4) };
    }

    c[0].v = pos + rot.mul_v(c[0].v);
    c[1].v = pos + rot.mul_v(c[1].v);
    c
}

#[derive(Clone, Copy, PartialEq)]
enum Axis {
    FaceAX,
    FaceAY,
    FaceBX,
    FaceBY,
}

/// Box2D-Lite's relative tolerance of the reference-face hysteresis.
pub const RELATIVE_TOL: f32 = 0.95;
/// Box2D-Lite's absolute tolerance of the reference-face hysteresis, times the half-extent.
pub const ABSOLUTE_TOL: f32 = 0.01;

/// The contact manifold of two oriented boxes (Box2D-Lite's `Collide`): up to two points, normal
/// from A to B, touching faces included (separation exactly 0), separated boxes give none.
///
/// ```
/// use glam::Vec2;
/// use slabtree::d2::{collide_boxes, OrientedBox};
/// let ground = OrientedBox::new(Vec2::new(0.0, -0.5), Vec2::new(5.0, 0.5), 0.0);
/// let crate_ = OrientedBox::new(Vec2::new(0.0, 0.45), Vec2::new(0.5, 0.5), 0.0);
/// let m = collide_boxes(&ground, &crate_);
/// assert_eq!(m.count, 2);
/// for c in m.contacts() {
///     assert_eq!(c.normal, Vec2::Y);
///     assert!((c.separation + 0.05).abs() < 1e-6);
///     assert!((c.position.y - 0.0).abs() < 1e-6); // on the ground's top face
/// }
/// ```
pub fn collide_boxes(a: &OrientedBox, b: &OrientedBox) -> BoxManifold {
    let mut manifold = BoxManifold::default();

    // Setup
    let h_a = a.half_extents;
    let h_b = b.half_extents;
    let pos_a = a.center;
    let pos_b = b.center;
    let rot_a = Mat22::from_rot(a.rot);
    let rot_b = Mat22::from_rot(b.rot);
    let rot_at = rot_a.transpose();
    let rot_bt = rot_b.transpose();

    let dp = pos_b - pos_a;
    let d_a = rot_at.mul_v(dp);
    let d_b = rot_bt.mul_v(dp);

    let c = rot_at.mul_m(rot_b);
    let abs_c = c.abs();
    let abs_ct = abs_c.transpose();

    // Box A faces
    let face_a = d_a.abs() - h_a - abs_c.mul_v(h_b);
    if face_a.x > 0.0 || face_a.y > 0.0 {
        return manifold;
    }

    // Box B faces
    let face_b = d_b.abs() - abs_ct.mul_v(h_a) - h_b;
    if face_b.x > 0.0 || face_b.y > 0.0 {
        return manifold;
    }

    // Find best axis, with hysteresis
    let mut axis = Axis::FaceAX;
    let mut separation = face_a.x;
    let mut normal = if d_a.x > 0.0 { rot_a.col1 } else { -rot_a.col1 };

    if face_a.y > RELATIVE_TOL * separation + ABSOLUTE_TOL * h_a.y {
        axis = Axis::FaceAY;
        separation = face_a.y;
        normal = if d_a.y > 0.0 { rot_a.col2 } else { -rot_a.col2 };
    }

    // Box B faces
    if face_b.x > RELATIVE_TOL * separation + ABSOLUTE_TOL * h_b.x {
        axis = Axis::FaceBX;
        separation = face_b.x;
        normal = if d_b.x > 0.0 { rot_b.col1 } else { -rot_b.col1 };
    }

    if face_b.y > RELATIVE_TOL * separation + ABSOLUTE_TOL * h_b.y {
        axis = Axis::FaceBY;
        normal = if d_b.y > 0.0 { rot_b.col2 } else { -rot_b.col2 };
    }

    // Setup clipping plane data based on the separating axis
    let (front_normal, front, side_normal, neg_side, pos_side, neg_edge, pos_edge, incident_edge) = match axis {
        Axis::FaceAX => {
            let front_normal = normal;
            let front = dot(pos_a, front_normal) + h_a.x;
            let side_normal = rot_a.col2;
            let side = dot(pos_a, side_normal);
            let inc = compute_incident_edge(h_b, pos_b, rot_b, front_normal);
            (front_normal, front, side_normal, -side + h_a.y, side + h_a.y, EDGE3, EDGE1, inc)
        }
        Axis::FaceAY => {
            let front_normal = normal;
            let front = dot(pos_a, front_normal) + h_a.y;
            let side_normal = rot_a.col1;
            let side = dot(pos_a, side_normal);
            let inc = compute_incident_edge(h_b, pos_b, rot_b, front_normal);
            (front_normal, front, side_normal, -side + h_a.x, side + h_a.x, EDGE2, EDGE4, inc)
        }
        Axis::FaceBX => {
            let front_normal = -normal;
            let front = dot(pos_b, front_normal) + h_b.x;
            let side_normal = rot_b.col2;
            let side = dot(pos_b, side_normal);
            let inc = compute_incident_edge(h_a, pos_a, rot_a, front_normal);
            (front_normal, front, side_normal, -side + h_b.y, side + h_b.y, EDGE3, EDGE1, inc)
        }
        Axis::FaceBY => {
            let front_normal = -normal;
            let front = dot(pos_b, front_normal) + h_b.y;
            let side_normal = rot_b.col1;
            let side = dot(pos_b, side_normal);
            let inc = compute_incident_edge(h_a, pos_a, rot_a, front_normal);
            (front_normal, front, side_normal, -side + h_b.x, side + h_b.x, EDGE2, EDGE4, inc)
        }
    };

    // Clip the incident edge to the reference box's side planes.
    let mut clip_points1 = [ClipVertex::default(); 2];
    let mut clip_points2 = [ClipVertex::default(); 2];

    // Clip to box side 1
    if clip_segment_to_line(&mut clip_points1, &incident_edge, -side_normal, neg_side, neg_edge) < 2 {
        return manifold;
    }
    // Clip to negative box side 1
    if clip_segment_to_line(&mut clip_points2, &clip_points1, side_normal, pos_side, pos_edge) < 2 {
        return manifold;
    }

    // Now clip_points2 contains the clipping points. Due to roundoff, it is possible that
    // clipping removes all points.
    let flip = matches!(axis, Axis::FaceBX | Axis::FaceBY);
    for cp in &clip_points2 {
        let separation = dot(front_normal, cp.v) - front;
        if separation <= 0.0 {
            let k = manifold.count;
            manifold.contacts[k] = BoxContact {
                position: Vec2::new(cp.v.x - separation * front_normal.x, cp.v.y - separation * front_normal.y),
                normal,
                separation,
                feature: if flip { cp.fp.flipped() } else { cp.fp },
            };
            manifold.count += 1;
        }
    }
    manifold
}
