//! Tree rotations on a built binary BVH (Kensler, "Tree Rotations for Improving Bounding Volume
//! Hierarchies", 2008): at each internal node, swap a child with a grandchild when that reduces
//! the surface area of the child that is rebuilt. Children are visited before parents, and a few
//! passes run until nothing improves. It never changes which primitives a leaf holds, only how
//! leaves are grouped, so it is safe after any builder.

use super::BuildNode;
use crate::math::Aabb;

/// Runs up to `passes` rotation passes over `nodes` (node 0 is the root, as the builder writes
/// them: every subtree in one contiguous range, its root first and its left child next) and
/// returns the number of rotations applied. Node indices stay valid; the pre-order of the array
/// may no longer hold.
///
/// The subtrees [`SPLIT_LEVELS`] levels down are rotated first, each on its own (on rayon's
/// threads with `parallel`: a rotation never reaches outside the subtree of the node it is made
/// at), then the nodes above them. The schedule is the same with or without `parallel`, so the
/// tree is too.
pub fn rotate_passes(nodes: &mut [BuildNode], passes: usize, parallel: bool) -> usize {
    if nodes.is_empty() {
        return 0;
    }
    // Then the nodes above the subtrees, and the subtrees' own roots and their children, whose
    // rotations the nodes above can enable (without these two levels, the tree came out worse
    // than rotating the whole tree at once; with them, the same tree).
    rotate_split(nodes, 0, passes, parallel, SPLIT_LEVELS) + rotate_range(nodes, 0, passes, SPLIT_LEVELS + 1)
}

/// Levels of the tree above the subtrees that are rotated independently: up to 8 subtrees.
const SPLIT_LEVELS: u32 = 3;

/// Rotates the subtrees `levels` down from the root of `nodes` (its first node), `offset` being
/// the index of `nodes[0]` in the whole array; the nodes above them are left to the caller.
fn rotate_split(nodes: &mut [BuildNode], offset: u32, passes: usize, parallel: bool, levels: u32) -> usize {
    let split = match nodes[0] {
        // The builder's layout: the left subtree right after its parent, the right one after it.
        BuildNode::Inner { left, right, .. }
            if levels > 0 && left == offset + 1 && right > left && ((right - offset) as usize) < nodes.len() =>
        {
            Some((right - offset) as usize)
        }
        _ => None,
    };
    let Some(right_at) = split else {
        // At the split depth, or above it where the layout is not the builder's: the whole
        // subtree here.
        return rotate_range(nodes, offset, passes, u32::MAX);
    };
    let (_, children) = nodes.split_at_mut(1);
    let (l, r) = children.split_at_mut(right_at - 1);
    let (a, b) = if parallel {
        crate::par::join(
            || rotate_split(l, offset + 1, passes, parallel, levels - 1),
            || rotate_split(r, offset + right_at as u32, passes, parallel, levels - 1),
        )
    } else {
        (
            rotate_split(l, offset + 1, passes, parallel, levels - 1),
            rotate_split(r, offset + right_at as u32, passes, parallel, levels - 1),
        )
    };
    a + b
}

/// Up to `passes` passes over the subtree at `nodes[0]` (index `offset` in the whole array),
/// children before parents, down to `max_depth` levels below it (0: the root alone).
fn rotate_range(nodes: &mut [BuildNode], offset: u32, passes: usize, max_depth: u32) -> usize {
    // Post-order by an explicit stack: children before parents.
    let mut order = Vec::new();
    let mut stack = vec![(offset, 0u32, false)];
    while let Some((n, depth, done)) = stack.pop() {
        if let BuildNode::Inner { left, right, .. } = nodes[(n - offset) as usize] {
            if done || depth == max_depth {
                order.push(n);
            } else {
                stack.push((n, depth, true));
                stack.push((right, depth + 1, false));
                stack.push((left, depth + 1, false));
            }
        }
    }
    let mut total = 0;
    for _ in 0..passes {
        let mut applied = 0;
        for &n in &order {
            applied += usize::from(rotate_at(nodes, offset, n));
        }
        total += applied;
        if applied == 0 {
            break;
        }
    }
    total
}

fn children(nodes: &[BuildNode], offset: u32, n: u32) -> Option<[u32; 2]> {
    match nodes[(n - offset) as usize] {
        BuildNode::Inner { left, right, .. } => Some([left, right]),
        BuildNode::Leaf { .. } => None,
    }
}

fn bounds(nodes: &[BuildNode], offset: u32, n: u32) -> &Aabb {
    nodes[(n - offset) as usize].bounds()
}

fn set_children(nodes: &mut [BuildNode], offset: u32, n: u32, c: [u32; 2]) {
    let bounds = bounds(nodes, offset, c[0]).union(bounds(nodes, offset, c[1]));
    nodes[(n - offset) as usize] = BuildNode::Inner { bounds, left: c[0], right: c[1] };
}

/// Applies the best rotation at `n`, if one reduces area; returns whether it did. It changes
/// `n`'s children and one grandchild's parent, all inside `n`'s subtree.
fn rotate_at(nodes: &mut [BuildNode], offset: u32, n: u32) -> bool {
    let Some(c) = children(nodes, offset, n) else { return false };
    let area = |b: &Aabb| b.half_area();
    // (child moving down, its sibling whose child moves up, which grandchild, gain)
    let mut best: Option<(usize, usize, f32)> = None;
    for down in 0..2 {
        let other = c[1 - down];
        let Some(g) = children(nodes, offset, other) else { continue };
        let old = area(bounds(nodes, offset, other));
        for up in 0..2 {
            // `other` would hold c[down] and g[1 - up]; g[up] moves up beside it.
            let new = area(&bounds(nodes, offset, c[down]).union(bounds(nodes, offset, g[1 - up])));
            let gain = old - new;
            if gain > 1e-6 * old && best.is_none_or(|b| gain > b.2) {
                best = Some((down, up, gain));
            }
        }
    }
    let Some((down, up, _)) = best else { return false };
    let other = c[1 - down];
    let g = children(nodes, offset, other).expect("checked internal");
    set_children(nodes, offset, other, [c[down], g[1 - up]]);
    let mut nc = c;
    nc[down] = g[up];
    set_children(nodes, offset, n, nc);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{BinnedSah, BuildItem};
    use glam::Vec3A;

    fn sah(nodes: &[BuildNode]) -> f32 {
        nodes.iter().map(|n| n.bounds().half_area()).sum::<f32>() / nodes[0].bounds().half_area()
    }

    #[test]
    fn rotations_keep_every_item_and_never_worsen_sah() {
        let mut items: Vec<BuildItem> = (0..3000u32)
            .map(|i| {
                let f = |k: u32| ((i.wrapping_mul(2654435761).wrapping_add(k * 97)) % 1000) as f32 / 10.0;
                BuildItem::new(
                    Aabb::from_center_half_extents(Vec3A::new(f(1), f(2), f(3)), Vec3A::splat(0.5 + f(4) / 50.0)),
                    i,
                )
            })
            .collect();
        let mut nodes = BinnedSah { bins: 4, max_leaf: 4, ..Default::default() }.build(&mut items);
        let before = sah(&nodes);
        let mut serial = nodes.clone();
        let applied = rotate_passes(&mut nodes, 4, true);
        // The schedule does not depend on threads.
        assert_eq!(rotate_passes(&mut serial, 4, false), applied);
        assert_eq!(serial, nodes);
        let after = sah(&nodes);
        assert!(applied > 0 && after < before, "{applied} rotations, SAH {before} -> {after}");
        // Every item is still under exactly one leaf reachable from the root, and bounds contain.
        let mut seen = vec![0; items.len()];
        let mut stack = vec![0u32];
        while let Some(n) = stack.pop() {
            match nodes[n as usize] {
                BuildNode::Leaf { bounds, first, count } => {
                    for it in &items[first as usize..(first + count) as usize] {
                        seen[it.index() as usize] += 1;
                        assert!(bounds.contains(&it.bounds()));
                    }
                }
                BuildNode::Inner { bounds, left, right } => {
                    assert!(
                        bounds.contains(nodes[left as usize].bounds())
                            && bounds.contains(nodes[right as usize].bounds())
                    );
                    stack.extend([left, right]);
                }
            }
        }
        assert!(seen.iter().all(|&s| s == 1));
    }
}
