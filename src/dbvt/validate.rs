//! `validate()`: every structural invariant, as Box2D's `b2DynamicTree_Validate`; and `stats()`.

use std::fmt;

use super::node::{ChildRef, FREE_SLOT, NULL, Node};
use super::{Dbvt, Proxy, Slot};

/// The first broken invariant found by [`Dbvt::validate`].
#[derive(Clone, Debug, PartialEq)]
pub enum ValidationError {
    /// A child's parent link (or slot) does not point back to where it is stored.
    ParentLink {
        /// Internal node index, or proxy index for a leaf.
        index: u32,
        /// Whether `index` is a proxy.
        leaf: bool,
    },
    /// A child's stored bounds do not contain its children (internal) or differ from the proxy's
    /// fat box (leaf).
    Containment {
        /// Internal node or proxy index.
        index: u32,
        /// Whether `index` is a proxy.
        leaf: bool,
    },
    /// A node not marked for refit stores bounds (in its parent) other than exactly the union
    /// of its children's: `refit`, which only visits marked nodes, would leave them wrong.
    StaleBounds {
        /// Internal node index.
        node: u32,
    },
    /// A node or proxy is reachable twice, or a free node is reachable from the root.
    Reachability {
        /// Internal node or proxy index.
        index: u32,
        /// Whether `index` is a proxy.
        leaf: bool,
    },
    /// The free list of nodes is broken or its count disagrees with the arena.
    FreeList {
        /// What disagrees.
        detail: String,
    },
    /// The tree claims a depth-first pre-order arena (which `refit` sweeps and
    /// `optimize_incremental` cuts into ranges), but node `node` is not where pre-order puts it.
    Layout {
        /// Internal node index.
        node: u32,
    },
    /// The number of leaves disagrees with the number of live proxies.
    LeafCount {
        /// Leaves reachable from the root.
        leaves: u32,
        /// Live proxies.
        live: u32,
    },
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = |leaf: &bool| if *leaf { "proxy" } else { "node" };
        match self {
            ValidationError::ParentLink { index, leaf } => write!(f, "parent link broken at {} {index}", kind(leaf)),
            ValidationError::Containment { index, leaf } => {
                write!(f, "bounds of {} {index} do not contain its contents", kind(leaf))
            }
            ValidationError::StaleBounds { node } => {
                write!(f, "bounds of node {node} are not its children's union and it is not marked for refit")
            }
            ValidationError::Layout { node } => write!(f, "node {node} is out of depth-first pre-order"),
            ValidationError::Reachability { index, leaf } => {
                write!(f, "{} {index} reached twice or while free", kind(leaf))
            }
            ValidationError::FreeList { detail } => write!(f, "free list: {detail}"),
            ValidationError::LeafCount { leaves, live } => write!(f, "{leaves} leaves but {live} live proxies"),
        }
    }
}

impl std::error::Error for ValidationError {}

/// Size and quality figures of a tree, from [`Dbvt::stats`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TreeStats {
    /// Live proxies (leaves).
    pub leaves: usize,
    /// Internal nodes in use.
    pub internal_nodes: usize,
    /// Height of the root (0 for a single leaf, 0 for an empty tree).
    pub height: u32,
    /// SAH cost with unit traversal and intersection costs: the summed surface area of internal
    /// nodes (cost 1 each) and leaves (cost 1 each), over the root's area (MacDonald and Booth).
    pub sah_cost: f32,
    /// Bytes held by the node and proxy arenas (capacity, not length).
    pub memory_bytes: usize,
}

impl<T> Dbvt<T> {
    /// Checks every invariant: parent and child links, containment of bounds, reachability, the free list and the leaf count. Returns the first violation. While
    /// [`Dbvt::update_proxy`] changes await a refit, ancestors may not contain the moved leaves
    /// yet, so containment of internal nodes is not checked then (a leaf's slot must still equal
    /// its proxy's box).
    pub fn validate(&self) -> Result<(), ValidationError> {
        let mut seen_nodes = vec![false; self.nodes.len()];
        let mut seen_proxies = vec![false; self.proxies.len()];
        let mut leaves = 0u32;
        if let Some(root) = self.root {
            let (parent, _) = self.parent_of(root);
            if parent != NULL {
                return Err(ValidationError::ParentLink { index: root.index(), leaf: root.is_leaf() });
            }
            let mut stack = vec![(root, self.root_bounds)];
            while let Some((c, bounds)) = stack.pop() {
                let i = c.index();
                if c.is_leaf() {
                    let live = self.slots.get(i as usize).is_some_and(|s| s.data.is_some());
                    let Some(p) = self.proxies.get(i as usize).filter(|_| live) else {
                        return Err(ValidationError::Reachability { index: i, leaf: true });
                    };
                    if std::mem::replace(&mut seen_proxies[i as usize], true) {
                        return Err(ValidationError::Reachability { index: i, leaf: true });
                    }
                    if p.fat() != bounds {
                        return Err(ValidationError::Containment { index: i, leaf: true });
                    }
                    leaves += 1;
                    continue;
                }
                let Some(node) = self.nodes.get(i as usize) else {
                    return Err(ValidationError::Reachability { index: i, leaf: false });
                };
                if node.slot == FREE_SLOT || std::mem::replace(&mut seen_nodes[i as usize], true) {
                    return Err(ValidationError::Reachability { index: i, leaf: false });
                }
                // Containment is suspended while `update_proxy` changes await a refit.
                if !self.refit_pending && !bounds.contains(&node.union()) {
                    return Err(ValidationError::Containment { index: i, leaf: false });
                }
                if !node.stale && bounds != node.union() {
                    return Err(ValidationError::StaleBounds { node: i });
                }
                for s in 0..2 {
                    let child = node.child[s];
                    let (cp, cs) = self
                        .checked_parent_of(child)
                        .ok_or(ValidationError::ParentLink { index: child.index(), leaf: child.is_leaf() })?;
                    if cp != i || cs as usize != s {
                        return Err(ValidationError::ParentLink { index: child.index(), leaf: child.is_leaf() });
                    }
                    stack.push((child, node.bounds(s)));
                }
            }
        }
        if leaves != self.proxy_count {
            return Err(ValidationError::LeafCount { leaves, live: self.proxy_count });
        }
        self.validate_free_lists(&seen_nodes)?;
        self.validate_layout()
    }

    /// When the arena claims pre-order: visiting the tree depth-first, child 0 first, meets the
    /// nodes at indices 0, 1, 2, ... and no node is left over. (Run after the link checks, so the
    /// walk is over a sound tree.)
    fn validate_layout(&self) -> Result<(), ValidationError> {
        if !self.ordered {
            return Ok(());
        }
        let mut expected = 0u32;
        let mut stack: Vec<ChildRef> = self.root.into_iter().collect();
        while let Some(c) = stack.pop() {
            if c.is_leaf() {
                continue;
            }
            if c.index() != expected {
                return Err(ValidationError::Layout { node: c.index() });
            }
            expected += 1;
            let node = &self.nodes[c.index() as usize];
            stack.push(node.child[1]);
            stack.push(node.child[0]);
        }
        if expected as usize != self.nodes.len() {
            return Err(ValidationError::Layout { node: expected });
        }
        Ok(())
    }

    fn checked_parent_of(&self, c: ChildRef) -> Option<(u32, u8)> {
        if c.is_leaf() {
            self.proxies.get(c.index() as usize).map(|p: &Proxy| (p.parent, p.slot))
        } else {
            self.nodes.get(c.index() as usize).map(|n: &Node| (n.parent, n.slot))
        }
    }

    fn validate_free_lists(&self, seen_nodes: &[bool]) -> Result<(), ValidationError> {
        let fail = |detail: String| Err(ValidationError::FreeList { detail });
        if self.proxies.len() != self.slots.len() {
            return fail(format!("{} proxy links but {} proxy slots", self.proxies.len(), self.slots.len()));
        }
        let mut count = 0u32;
        let mut n = self.free_node;
        while n != NULL {
            let Some(node) = self.nodes.get(n as usize) else { return fail(format!("free node {n} out of range")) };
            if node.slot != FREE_SLOT || seen_nodes[n as usize] {
                return fail(format!("node {n} on the free list is in use"));
            }
            count += 1;
            if count > self.nodes.len() as u32 {
                return fail("cycle in the node free list".into());
            }
            n = node.parent;
        }
        let used = seen_nodes.iter().filter(|&&s| s).count() as u32;
        if count != self.free_node_count || count + used != self.nodes.len() as u32 {
            return fail(format!(
                "{count} free + {used} used nodes, arena holds {} (count says {})",
                self.nodes.len(),
                self.free_node_count
            ));
        }
        let mut free_proxies = 0u32;
        let mut p = self.free_proxy;
        while p != NULL {
            let (Some(proxy), Some(slot)) = (self.proxies.get(p as usize), self.slots.get(p as usize)) else {
                return fail(format!("free proxy {p} out of range"));
            };
            if slot.data.is_some() {
                return fail(format!("proxy {p} on the free list is live"));
            }
            free_proxies += 1;
            if free_proxies > self.proxies.len() as u32 {
                return fail("cycle in the proxy free list".into());
            }
            p = proxy.parent;
        }
        if free_proxies + self.proxy_count != self.proxies.len() as u32 {
            return fail(format!(
                "{free_proxies} free + {} live proxies, arena holds {}",
                self.proxy_count,
                self.proxies.len()
            ));
        }
        Ok(())
    }

    /// The height of the root, measured by one walk of the tree (nodes keep no heights; see
    /// `Node`): 0 for an empty tree or a single leaf.
    fn height(&self) -> u32 {
        let mut height = 0;
        let mut stack: Vec<(ChildRef, u32)> = self.root.map(|r| (r, 0)).into_iter().collect();
        while let Some((c, depth)) = stack.pop() {
            height = height.max(depth);
            if !c.is_leaf() {
                let node = &self.nodes[c.index() as usize];
                stack.extend(node.child.map(|child| (child, depth + 1)));
            }
        }
        height
    }

    /// Node count, height, SAH cost and memory.
    pub fn stats(&self) -> TreeStats {
        let internal_nodes = self.nodes.len() - self.free_node_count as usize;
        let height = self.height();
        TreeStats {
            leaves: self.proxy_count as usize,
            internal_nodes,
            height,
            sah_cost: self.sah_cost(),
            memory_bytes: (self.nodes.capacity() + self.spare_nodes.capacity()) * std::mem::size_of::<Node>()
                + self.proxies.capacity() * std::mem::size_of::<Proxy>()
                + self.slots.capacity() * std::mem::size_of::<Slot<T>>()
                + self.relayout_map.capacity() * std::mem::size_of::<u32>()
                + self.morton.memory_bytes(),
        }
    }
}

/// A summary, not every node: proxies, nodes, height, bounds and SAH cost (one pass over the
/// arena).
impl<T> std::fmt::Debug for Dbvt<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.stats();
        f.debug_struct("Dbvt")
            .field("proxies", &s.leaves)
            .field("internal_nodes", &s.internal_nodes)
            .field("height", &s.height)
            .field("bounds", &self.root_bounds())
            .field("sah_cost", &s.sah_cost)
            .field("refit_pending", &self.refit_pending)
            .finish_non_exhaustive()
    }
}
