//! Tree rotations on a built binary BVH (Kensler, "Tree Rotations for Improving Bounding Volume
//! Hierarchies", 2008): at each internal node, swap a child with a grandchild when that reduces
//! the surface area of the child that is rebuilt. Children are visited before parents, and a few
//! passes run until nothing improves. It never changes which primitives a leaf holds, only how
//! leaves are grouped, so it is safe after any builder.

use super::BuildNode;
use crate::math::Aabb;

/// Runs up to `passes` rotation passes over `nodes` (node 0 is the root) and returns the number of
/// rotations applied. Node indices stay valid; the pre-order of the array may no longer hold.
pub fn rotate_passes(nodes: &mut [BuildNode], passes: usize) -> usize {
    if nodes.is_empty() {
        return 0;
    }
    // Post-order by an explicit stack: children before parents.
    let mut order = Vec::with_capacity(nodes.len());
    let mut stack = vec![(0u32, false)];
    while let Some((n, done)) = stack.pop() {
        if let BuildNode::Inner { left, right, .. } = nodes[n as usize] {
            if done {
                order.push(n);
            } else {
                stack.push((n, true));
                stack.push((right, false));
                stack.push((left, false));
            }
        }
    }
    let mut total = 0;
    for _ in 0..passes {
        let mut applied = 0;
        for &n in &order {
            applied += usize::from(rotate_at(nodes, n));
        }
        total += applied;
        if applied == 0 {
            break;
        }
    }
    total
}

fn children(nodes: &[BuildNode], n: u32) -> Option<[u32; 2]> {
    match nodes[n as usize] {
        BuildNode::Inner { left, right, .. } => Some([left, right]),
        BuildNode::Leaf { .. } => None,
    }
}

fn set_children(nodes: &mut [BuildNode], n: u32, c: [u32; 2]) {
    let bounds = nodes[c[0] as usize].bounds().union(nodes[c[1] as usize].bounds());
    nodes[n as usize] = BuildNode::Inner { bounds, left: c[0], right: c[1] };
}

/// Applies the best rotation at `n`, if one reduces area; returns whether it did.
fn rotate_at(nodes: &mut [BuildNode], n: u32) -> bool {
    let Some(c) = children(nodes, n) else { return false };
    let area = |b: &Aabb| b.half_area();
    // (child moving down, its sibling whose child moves up, which grandchild, gain)
    let mut best: Option<(usize, usize, f32)> = None;
    for down in 0..2 {
        let other = c[1 - down];
        let Some(g) = children(nodes, other) else { continue };
        let old = area(nodes[other as usize].bounds());
        for up in 0..2 {
            // `other` would hold c[down] and g[1 - up]; g[up] moves up beside it.
            let new = area(&nodes[c[down] as usize].bounds().union(nodes[g[1 - up] as usize].bounds()));
            let gain = old - new;
            if gain > 1e-6 * old && best.is_none_or(|b| gain > b.2) {
                best = Some((down, up, gain));
            }
        }
    }
    let Some((down, up, _)) = best else { return false };
    let other = c[1 - down];
    let g = children(nodes, other).expect("checked internal");
    set_children(nodes, other, [c[down], g[1 - up]]);
    let mut nc = c;
    nc[down] = g[up];
    set_children(nodes, n, nc);
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
        let applied = rotate_passes(&mut nodes, 4);
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
