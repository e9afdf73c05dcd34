//! An 8-wide, read-only copy of the tree for ray casts (Wald, Benthin and Boulos, "Getting Rid of
//! Packets", 2008; Embree's BVH8), collapsed from the binary tree in one pass.
//!
//! A binary ray cast pays one dependent node load and one hard-to-predict branch per level: about
//! 27 levels to reach 1.6 instances per cursor ray in a 1000-instance scene, which made the instance
//! tree, not the meshes, 80% of a pick (measured with callgrind). Eight children per node cut the
//! levels to a third and test them with one set of `f32x8` operations, as the mesh BVH does. The
//! copy is only worth its O(n) collapse when enough rays follow before the next change, so the
//! [`crate::Scene`] builds it lazily (see `Scene::wide_view`).
//!
//! Each wide node takes the binary subtree three levels below a binary node: its up to 8
//! descendants at that depth, or shallower leaves. (Opening the child of largest area first, as
//! `mesh::collapse` does, made slightly better nodes but cost 4x as much, and the collapse is
//! paid again after every change.) Leaf lanes hold proxy indices, with the same fat boxes as the
//! binary tree, so a ray reaches exactly the proxies it reaches there, only in another order.

use glam::Vec3A;

use super::queries::{RayLeaf, RayPolicy};
use super::traverse::QueryStats;
use super::{Dbvt, DbvtError};
use crate::math::{Aabb, Ray, ray_aabb2};
use crate::mesh::collapse::{LEAF, Node8, Ray8};

/// The 8-wide copy of a [`Dbvt`] at one moment: valid until the tree next changes.
#[derive(Clone, Debug)]
pub(crate) struct WideView {
    /// Node 0 is the root; empty when the tree is.
    nodes: Vec<Node8>,
    root_bounds: Aabb,
}

impl<T> Dbvt<T> {
    /// Collapses the tree into 8-wide nodes, reusing the allocation of `nodes` (a previous
    /// view's, from [`WideView::into_nodes`]: a fresh 64 KB per frame at 1000 instances cost
    /// page faults). Fails while refits are pending, as queries do.
    pub(crate) fn wide_view(&self, mut nodes: Vec<Node8>) -> Result<WideView, DbvtError> {
        self.check_refitted()?;
        nodes.clear();
        let Some(root) = self.root else {
            return Ok(WideView { nodes, root_bounds: self.root_bounds });
        };
        nodes.push(Node8::EMPTY);
        if root.is_leaf() {
            nodes[0].set(0, LEAF | root.index(), &self.root_bounds);
            return Ok(WideView { nodes, root_bounds: self.root_bounds });
        }
        // (wide node to fill, binary node whose subtree it covers); iterative, so a deep binary
        // tree cannot overflow the call stack.
        let mut work = vec![(0u32, root.index())];
        while let Some((w, b)) = work.pop() {
            // The binary subtree three levels down from `b`: up to 8 lanes, in depth-first order.
            let mut open = [(b, 0u32); 4];
            let mut n_open = 1;
            let mut lane = 0;
            while n_open > 0 {
                n_open -= 1;
                let (at, depth) = open[n_open];
                let node = &self.nodes[at as usize];
                for s in (0..2).rev() {
                    let c = node.child[s];
                    if !c.is_leaf() && depth < 2 {
                        open[n_open] = (c.index(), depth + 1);
                        n_open += 1;
                        continue;
                    }
                    let r = if c.is_leaf() {
                        LEAF | c.index()
                    } else {
                        nodes.push(Node8::EMPTY);
                        work.push((nodes.len() as u32 - 1, c.index()));
                        nodes.len() as u32 - 1
                    };
                    nodes[w as usize].set(lane, r, &node.bounds(s));
                    lane += 1;
                }
            }
        }
        Ok(WideView { nodes, root_bounds: self.root_bounds })
    }

    /// [`Dbvt::ray_cast`] over `view`, which must have been made from this tree since its last
    /// change. The same proxies reach `policy`, nearest entry first among those waiting, so
    /// closest-hit policies get the same answer (up to which of two equal distances is kept).
    /// `stack` is scratch, kept by the caller so that queries allocate nothing once it has grown.
    pub(crate) fn ray_cast_wide<P: RayPolicy<T>>(
        &self,
        view: &WideView,
        ray: &Ray,
        stack: &mut Vec<(u32, f32)>,
        policy: &mut P,
    ) -> Result<QueryStats, DbvtError> {
        self.check_refitted()?;
        ray.validate()?;
        let mut stats = QueryStats::default();
        if view.nodes.is_empty() || ray_aabb2(ray, &view.root_bounds).is_none() {
            return Ok(stats);
        }
        let lanes = Ray8::new(ray, Vec3A::ZERO);
        let mut tmax = ray.tmax;
        stack.clear();
        let mut cur = (0u32, ray.tmin);
        loop {
            let (c, key) = cur;
            if key <= tmax {
                if c & LEAF != 0 {
                    let p = c & !LEAF;
                    stats.leaves_visited += 1;
                    let data = self.slots[p as usize].data.as_ref().expect("leaf proxies are live");
                    if !policy.visit(RayLeaf { id: self.id_of(p), data, t: key, tmax }).apply(&mut tmax) {
                        break;
                    }
                } else {
                    stats.nodes_visited += 1;
                    let node = &view.nodes[c as usize];
                    let (mut mask, near) = lanes.test::<false>(node, tmax);
                    if mask != 0 {
                        let d = near.to_array();
                        if mask & (mask - 1) == 0 {
                            let l = mask.trailing_zeros() as usize;
                            cur = (node.child[l], d[l]);
                            continue;
                        }
                        // Several: push them far to near, so the nearest is popped first.
                        let base = stack.len();
                        while mask != 0 {
                            let l = mask.trailing_zeros() as usize;
                            mask &= mask - 1;
                            let e = (node.child[l], d[l]);
                            self.prefetch_wide(view, e.0);
                            stack.push(e);
                            // Insertion into the descending run stack[base..].
                            let mut j = stack.len() - 1;
                            while j > base && stack[j - 1].1 < e.1 {
                                stack[j] = stack[j - 1];
                                j -= 1;
                            }
                            stack[j] = e;
                        }
                    }
                }
            }
            match stack.pop() {
                Some(e) => cur = e,
                None => break,
            }
        }
        Ok(stats)
    }

    /// Starts loading what a stacked entry will read: a wide node's first lines, or a proxy slot.
    #[inline(always)]
    fn prefetch_wide(&self, view: &WideView, child: u32) {
        if child & LEAF != 0 {
            crate::hint::prefetch(self.slots.as_ptr().wrapping_add((child & !LEAF) as usize));
        } else {
            crate::hint::prefetch_wide(view.nodes.as_ptr().wrapping_add(child as usize));
        }
    }
}

impl WideView {
    /// The node storage, for the next [`Dbvt::wide_view`] to reuse.
    pub(crate) fn into_nodes(self) -> Vec<Node8> {
        self.nodes
    }

    /// Wide nodes in the copy.
    #[cfg(test)]
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Every lane's bounds contain the bounds of the wide node it points to (for the tests).
    #[cfg(test)]
    fn nested(&self) -> bool {
        self.nodes.iter().all(|n| {
            (0..8).all(|l| {
                let c = n.child[l];
                c == crate::mesh::collapse::EMPTY
                    || c & LEAF != 0
                    || n.lane_bounds(l).contains(&self.nodes[c as usize].union())
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::RayControl;
    use super::*;

    fn boxes(n: usize, seed: u64) -> Vec<Aabb> {
        let mut s = seed;
        let mut f = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        };
        (0..n)
            .map(|_| Aabb::from_center_half_extents(Vec3A::new(f(), f(), f()) * 40.0, Vec3A::splat(0.2 + f())))
            .collect()
    }

    /// The wide cast reaches exactly the proxies the binary cast reaches, with the same entry
    /// distances; with clipping, both closest-hit answers are the brute-force one.
    #[test]
    fn wide_cast_matches_the_binary_cast_and_brute_force() {
        for (n, seed) in [(1, 1u64), (2, 2), (9, 3), (300, 4), (3000, 5)] {
            let bx = boxes(n, seed);
            let mut tree = Dbvt::new();
            for (i, b) in bx.iter().enumerate() {
                tree.insert(*b, i).unwrap();
            }
            let view = tree.wide_view(Vec::new()).unwrap();
            assert!(view.nested());
            // Every wide node but the root consumes at least one binary internal node.
            assert!(view.node_count() <= n.max(1), "{} wide nodes for {n} leaves", view.node_count());
            let mut ws = super::super::QueryWorkspace::new();
            let mut stack = Vec::new();
            let targets = boxes(200, seed + 100);
            for (k, target) in targets.iter().enumerate() {
                let origin = Vec3A::new(-10.0, (k % 7) as f32 * 6.0, (k % 5) as f32 * 8.0);
                let ray = Ray::new(origin, target.center() - origin);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                tree.ray_cast(&ray, &mut ws, &mut |l: RayLeaf<'_, usize>| {
                    a.push((*l.data, l.t.to_bits()));
                    RayControl::Continue
                })
                .unwrap();
                tree.ray_cast_wide(&view, &ray, &mut stack, &mut |l: RayLeaf<'_, usize>| {
                    b.push((*l.data, l.t.to_bits()));
                    RayControl::Continue
                })
                .unwrap();
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b, "n={n} ray {k}");
                // Closest box entry, clipping as it goes, against brute force over every box.
                let brute = bx.iter().filter_map(|b| ray_aabb2(&ray, b)).min_by(f32::total_cmp);
                let mut best: Option<f32> = None;
                tree.ray_cast_wide(&view, &ray, &mut stack, &mut |l: RayLeaf<'_, usize>| {
                    let t = ray_aabb2(&ray, &bx[*l.data]);
                    if let Some(t) = t
                        && best.is_none_or(|b| t < b)
                    {
                        best = Some(t);
                        return RayControl::Clip(t);
                    }
                    RayControl::Continue
                })
                .unwrap();
                assert_eq!(best, brute, "n={n} ray {k}");
            }
        }
    }

    #[test]
    fn empty_tree_and_pending_refit() {
        let mut tree: Dbvt<u32> = Dbvt::new();
        let view = tree.wide_view(Vec::new()).unwrap();
        let mut hits = 0;
        tree.ray_cast_wide(&view, &Ray::new(Vec3A::ZERO, Vec3A::X), &mut Vec::new(), &mut |_: RayLeaf<'_, u32>| {
            hits += 1;
            RayControl::Continue
        })
        .unwrap();
        assert_eq!(hits, 0);
        let id = tree.insert(Aabb::new(Vec3A::ZERO, Vec3A::ONE), 0).unwrap();
        tree.insert(Aabb::new(Vec3A::splat(3.0), Vec3A::splat(4.0)), 1).unwrap();
        tree.update_proxy(id, Aabb::new(Vec3A::splat(9.0), Vec3A::splat(10.0)), Vec3A::ZERO).unwrap();
        assert!(tree.wide_view(Vec::new()).is_err());
    }
}
