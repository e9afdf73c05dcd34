//! Collapsing a binary BVH into 8-wide nodes (Wald, Benthin and Boulos, "Getting Rid of Packets",
//! 2008; Embree's BVH8): each wide node takes a binary node's children and repeatedly opens the
//! internal child of largest surface area until it has 8 children or only leaves remain.
//!
//! Child bounds are stored as SoA planes, `bounds[side][axis][lane]`, so one ray is tested against
//! all 8 children with `f32x8` and its sign bits pick the near planes. Unused lanes hold the empty
//! box (`+inf` min, `-inf` max), which no ray can hit and which cannot make a NaN. [`Ray8`] is
//! that test, shared by the mesh BVH and the dynamic tree's 8-wide copy (`dbvt::wide`).

use glam::Vec3A;
use wide::f32x8;

use crate::math::{FAR_PAD, Ray};

use super::triangle::TriPack;
use crate::Aabb;
use crate::build::{BuildItem, BuildNode};

/// Marks a child reference as a leaf (a triangle pack index).
pub(crate) const LEAF: u32 = 1 << 31;
/// An unused child slot.
pub(crate) const EMPTY: u32 = u32::MAX;

/// One 8-wide node: child bounds as SoA planes and child references. 256 bytes, four cache lines.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(64))]
pub(crate) struct Node8 {
    pub bounds: [[[f32; 8]; 3]; 2],
    pub child: [u32; 8],
}

const _: () = assert!(std::mem::size_of::<Node8>() == 256);

impl Node8 {
    pub(crate) const EMPTY: Node8 =
        Node8 { bounds: [[[f32::INFINITY; 8]; 3], [[f32::NEG_INFINITY; 8]; 3]], child: [EMPTY; 8] };

    pub(crate) fn set(&mut self, lane: usize, child: u32, b: &Aabb) {
        self.child[lane] = child;
        self.set_bounds(lane, b);
    }

    /// Replaces one lane's box.
    #[inline]
    pub(crate) fn set_bounds(&mut self, lane: usize, b: &Aabb) {
        for a in 0..3 {
            self.bounds[0][a][lane] = b.min[a];
            self.bounds[1][a][lane] = b.max[a];
        }
    }

    pub(crate) fn lane_bounds(&self, lane: usize) -> Aabb {
        let b = &self.bounds;
        Aabb {
            min: Vec3A::new(b[0][0][lane], b[0][1][lane], b[0][2][lane]),
            max: Vec3A::new(b[1][0][lane], b[1][1][lane], b[1][2][lane]),
        }
    }

    /// Union of the used lanes.
    pub(crate) fn union(&self) -> Aabb {
        (0..8).filter(|&l| self.child[l] != EMPTY).fold(Aabb::EMPTY, |b, l| b.union(&self.lane_bounds(l)))
    }
}

/// One ray, or the centre ray of a swept box, splatted once for testing the 8 children of
/// [`Node8`]s: the slab test of `dbvt::node::RayLanes::test_pair`, eight lanes at a time, in the
/// same operation order as [`crate::math::slab_interval`].
pub(crate) struct Ray8 {
    origin: [f32x8; 3],
    inv_dir: [f32x8; 3],
    /// Added to the near plane and subtracted from the far plane of each axis: `∓ half_extent`
    /// for a box sweep (the near plane moves out against the direction, the far one with it).
    near_offset: [f32x8; 3],
    sign: [usize; 3],
    tmin: f32x8,
}

impl Ray8 {
    /// `inflate` is the half-extent of a swept box (zero for rays; only read by
    /// [`Ray8::test`]`::<true>`).
    #[inline]
    pub(crate) fn new(ray: &Ray, inflate: Vec3A) -> Ray8 {
        let (o, inv) = (ray.origin(), ray.inv_dir());
        let sign = ray.sign().map(usize::from);
        let near_off = |a: usize| f32x8::splat(if sign[a] == 1 { inflate[a] } else { -inflate[a] });
        Ray8 {
            origin: [f32x8::splat(o.x), f32x8::splat(o.y), f32x8::splat(o.z)],
            inv_dir: [f32x8::splat(inv.x), f32x8::splat(inv.y), f32x8::splat(inv.z)],
            near_offset: [near_off(0), near_off(1), near_off(2)],
            sign,
            tmin: f32x8::splat(ray.tmin),
        }
    }

    /// The lanes of `node` the ray enters within `[tmin, tmax]` at a finite distance (as
    /// `SlabInterval::is_hit`), as a bit mask, and every lane's entry distance. Empty lanes enter
    /// at `+inf` and are never in the mask. `INFLATE` grows the planes by the swept box.
    #[inline(always)]
    pub(crate) fn test<const INFLATE: bool>(&self, node: &Node8, tmax: f32) -> (u32, f32x8) {
        let mut near = self.tmin;
        let mut far = f32x8::splat(tmax);
        let pad = f32x8::splat(FAR_PAD);
        for a in 0..3 {
            let s = self.sign[a] & 1;
            let (mut np, mut fp) = (f32x8::new(node.bounds[s][a]), f32x8::new(node.bounds[s ^ 1][a]));
            if INFLATE {
                np += self.near_offset[a];
                fp -= self.near_offset[a];
            }
            let tn = (np - self.origin[a]) * self.inv_dir[a];
            let tf = (fp - self.origin[a]) * self.inv_dir[a] * pad;
            near = tn.fast_max(near);
            far = tf.fast_min(far);
        }
        ((near.simd_le(far) & near.simd_lt(f32x8::splat(f32::INFINITY))).to_bitmask(), near)
    }
}

/// The collapsed tree: nodes in depth-first pre-order (node 0 is the root) and the triangle packs.
pub(crate) struct Collapsed {
    pub nodes: Vec<Node8>,
    pub packs: Vec<TriPack>,
    pub depth: u32,
}

/// Collapses `build` (over `items`, whose `index` is the triangle) into 8-wide nodes. `tri` gives
/// a triangle's corners. Leaves of the binary tree must hold at most 4 items.
pub(crate) fn collapse(build: &[BuildNode], items: &[BuildItem], tri: &dyn Fn(u32) -> [glam::Vec3; 3]) -> Collapsed {
    let mut out = Collapsed {
        nodes: Vec::with_capacity(build.len() / 4 + 1),
        packs: Vec::with_capacity(build.len() / 2 + 1),
        depth: 0,
    };
    if build.is_empty() {
        return out;
    }
    // The root is always a wide node, even over a single leaf, so traversal has one entry point;
    // `emit` opens a single internal child first.
    emit(build, items, tri, vec![0], &mut out, 1);
    out
}

/// Opens internal children (largest area first) until there are 8, writes a wide node for them,
/// and recurses. Returns the node's index. Recursion depth is the binary depth, which the builder
/// bounds.
fn emit(
    build: &[BuildNode],
    items: &[BuildItem],
    tri: &dyn Fn(u32) -> [glam::Vec3; 3],
    mut children: Vec<u32>,
    out: &mut Collapsed,
    depth: u32,
) -> u32 {
    out.depth = out.depth.max(depth);
    // A node given a single internal child (the root case) opens it first.
    if children.len() == 1
        && let BuildNode::Inner { left, right, .. } = build[children[0] as usize]
    {
        children = vec![left, right];
    }
    while children.len() < 8 {
        let best =
            children.iter().enumerate().filter(|(_, c)| matches!(build[**c as usize], BuildNode::Inner { .. })).max_by(
                |a, b| build[*a.1 as usize].bounds().half_area().total_cmp(&build[*b.1 as usize].bounds().half_area()),
            );
        let Some((i, &c)) = best else { break };
        let BuildNode::Inner { left, right, .. } = build[c as usize] else { unreachable!() };
        children[i] = left;
        children.insert(i + 1, right);
    }
    let me = out.nodes.len() as u32;
    out.nodes.push(Node8::EMPTY);
    for (lane, &c) in children.iter().enumerate() {
        let node = &build[c as usize];
        let r = match *node {
            BuildNode::Leaf { first, count, .. } => {
                let tris: Vec<(u32, [glam::Vec3; 3])> = items[first as usize..(first + count) as usize]
                    .iter()
                    .map(|it| (it.index, tri(it.index)))
                    .collect();
                out.packs.push(TriPack::new(&tris));
                (out.packs.len() as u32 - 1) | LEAF
            }
            BuildNode::Inner { left, right, .. } => emit(build, items, tri, vec![left, right], out, depth + 1),
        };
        out.nodes[me as usize].set(lane, r, node.bounds());
    }
    me
}
