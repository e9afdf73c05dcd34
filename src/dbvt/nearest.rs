//! The nearest proxy to a point: a best-first descent keyed by squared box distance, with the
//! caller's own distance at each leaf (the object's, which its fat box bounds from below).

use glam::Vec3A;

use super::node::Node;
use super::traverse::{QueryWorkspace, Visitor};
use super::{Dbvt, DbvtError, ProxyId};
use crate::math::{Aabb, InputError};

/// The proxy nearest to a point, and its distance as the caller's callback measured it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NearestProxy {
    /// The proxy.
    pub id: ProxyId,
    /// Its distance from the point.
    pub distance: f32,
}

/// Squared distance from `p` to box `b` (0 inside).
#[inline(always)]
fn box_distance2(b: &Aabb, p: Vec3A) -> f32 {
    let d = (b.min - p).max(p - b.max).max(Vec3A::ZERO);
    d.length_squared()
}

struct NearestVisitor<'f, F> {
    point: Vec3A,
    /// The best distance so far, squared (or the limit's, before any).
    bound2: f32,
    best: Option<NearestProxy>,
    distance: &'f mut F,
}

impl<T, F: FnMut(ProxyId, &T, f32) -> Option<f32>> Visitor<T> for NearestVisitor<'_, F> {
    const ORDERED: bool = true;

    fn enter_root(&mut self, bounds: &Aabb) -> Option<f32> {
        let d2 = box_distance2(bounds, self.point);
        (d2 <= self.bound2).then_some(d2)
    }

    fn test_children(&mut self, node: &Node, _: f32) -> (u32, [f32; 2]) {
        let d = [0, 1].map(|s| box_distance2(&node.bounds(s), self.point));
        (u32::from(d[0] <= self.bound2) | u32::from(d[1] <= self.bound2) << 1, d)
    }

    fn visit_leaf(&mut self, id: ProxyId, data: &T, key: f32) -> bool {
        if let Some(d) = (self.distance)(id, data, key.sqrt())
            && d * d <= self.bound2
            && self.best.is_none_or(|b| d < b.distance || (d == b.distance && id.index() < b.id.index()))
        {
            self.best = Some(NearestProxy { id, distance: d });
            self.bound2 = d * d;
        }
        true
    }

    fn keep(&self, key: f32) -> bool {
        key <= self.bound2
    }
}

impl<T> Dbvt<T> {
    /// The proxy nearest to `point` within `max_distance` (inclusive; `f32::INFINITY` for no
    /// limit), by the distance `distance(id, data, box_distance)` returns for each proxy it is
    /// asked about: the distance from `point` to the proxy's object, which must be at least
    /// `box_distance` (the object lies in its fat box), or `None` to pass over the proxy.
    /// Proxies are asked nearest box first, and only while their box could still beat the best
    /// distance so far, so most are never asked. Of equal distances, the lowest
    /// [`ProxyId::index`] wins. Refuses a NaN or infinite point, or a NaN or negative limit.
    ///
    /// ```
    /// use slabtree::{Aabb, Dbvt, QueryWorkspace};
    /// use glam::Vec3A;
    /// // Spheres: centre and radius as data, their boxes in the tree.
    /// let spheres = [(Vec3A::new(0.0, 0.0, 0.0), 1.0), (Vec3A::new(5.0, 0.0, 0.0), 3.0)];
    /// let (tree, ids) =
    ///     Dbvt::build(spheres.iter().map(|&(c, r)| (Aabb::from_center_half_extents(c, Vec3A::splat(r)), (c, r))))?;
    /// let mut ws = QueryWorkspace::new();
    /// let p = Vec3A::new(2.5, 0.0, 0.0);
    /// let near = tree.nearest(p, f32::INFINITY, &mut ws, |_, &(c, r), _| Some((p.distance(c) - r).max(0.0)))?;
    /// assert_eq!(near.map(|n| (n.id, n.distance)), Some((ids[1], 0.0)));
    /// # Ok::<(), slabtree::DbvtError>(())
    /// ```
    pub fn nearest<F>(
        &self,
        point: Vec3A,
        max_distance: f32,
        ws: &mut QueryWorkspace,
        mut distance: F,
    ) -> Result<Option<NearestProxy>, DbvtError>
    where
        F: FnMut(ProxyId, &T, f32) -> Option<f32>,
    {
        if !point.is_finite() || max_distance.is_nan() || max_distance < 0.0 {
            return Err(InputError::InvalidPointQuery { point: point.into(), max_distance }.into());
        }
        self.check_refitted()?;
        let mut v = NearestVisitor { point, bound2: max_distance * max_distance, best: None, distance: &mut distance };
        self.traverse(&mut ws.stack, &mut v);
        Ok(v.best)
    }
}
