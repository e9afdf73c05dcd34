//! The mesh BVH: a binary tree over the triangles (binned SAH, or a linear BVH for
//! [`BuildQuality::Low`]), collapsed to 8-wide SoA nodes with 4-triangle SoA leaves; its build,
//! statistics and refit. Its queries are in `super::query`.

use std::time::{Duration, Instant};

use glam::Vec3;

use super::TriMesh;
use super::collapse::{Collapsed, TriangleRows, collapse};
use super::contents::{MeshRows, write_contents};
use super::layout::Blocks;
use super::linear::Plan;
use super::triangle::{NO_PRIM, PackRows};
use super::triangle_set::TriangleSet;
use crate::build::{BinnedSah, BuildItem, Fetch, SpatialSplits};
use crate::math::Aabb;
use crate::mesh::MeshError;
use crate::pages::{PagedSlice, Spare};

/// Which ray–triangle test a mesh uses.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TriangleTest {
    /// Möller–Trumbore: fastest; a ray passing within f32 rounding of a shared edge (about 1e-5 in
    /// barycentric terms on small, distant triangles) may slip between the two triangles and hit
    /// what lies behind.
    #[default]
    MollerTrumbore,
    /// Woop–Benthin–Wald watertight test: no ray passes between triangles that share an edge or a
    /// vertex.
    Watertight,
}

impl TriangleTest {
    /// What this test's packs store.
    pub(crate) fn pack_rows(self) -> PackRows {
        match self {
            TriangleTest::MollerTrumbore => PackRows::Edges,
            TriangleTest::Watertight => PackRows::Corners,
        }
    }
}

/// How much work a build puts into the tree, as Embree's build qualities: a better tree answers
/// rays faster and takes longer to build.
///
/// ```
/// use slabtree::{BuildOptions, BuildQuality, MeshBvh, TriMesh};
/// let mesh = TriMesh::uv_sphere(1.0, 64, 32);
/// // A mesh that deforms every frame: the fastest build.
/// let fast = MeshBvh::build(&mesh, &BuildOptions { quality: BuildQuality::Low, ..Default::default() });
/// assert_eq!(fast.options().quality, BuildQuality::Low);
/// assert_eq!(fast.mesh().len(), mesh.len());
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BuildQuality {
    /// A linear BVH: the triangles sorted along a Morton curve and the tree cut on its octree
    /// cells (Lauterbach et al. 2009), as Embree's low quality builds. About twice as fast to
    /// build as `Medium`, for a tree whose rays take longer: for meshes rebuilt every frame,
    /// where the build is most of the frame's cost. Neither `bins` nor `rotation_passes` is
    /// used.
    Low,
    /// A binned SAH build (Wald 2007) over all three axes, then rotated
    /// ([`BuildOptions::rotation_passes`]): the default, for meshes built once and traced many
    /// times.
    #[default]
    Medium,
    /// `Medium` with spatial splits (Stich, Friedrich and Dietrich 2009), as Embree's high
    /// quality builds: where the two halves of an object split overlap much, space is cut at a
    /// plane instead, and a triangle crossing it is referenced from both sides with the box of
    /// its part on each. For static scenes traced many times, above all interiors and
    /// architecture (long thin triangles, large walls); on scanned objects it gives the same
    /// tree as `Medium`, nearly. It takes longer to build, and a triangle can sit in several
    /// leaves (every query still reports it once). Its BVH cannot be refitted
    /// ([`MeshError::RefitSpatialSplits`]).
    High,
}

/// How to build a [`MeshBvh`].
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BuildOptions {
    /// The triangle test used by every query on this mesh.
    pub triangle_test: TriangleTest,
    /// How much work the build puts into the tree ([`BuildQuality`]).
    #[cfg_attr(feature = "serde", serde(default))]
    pub quality: BuildQuality,
    /// Centroid bins per axis for the binned SAH. Default 32, as Embree's builder: against 16,
    /// an interior's rays test fewer triangle packs and visit fewer nodes, for a little more
    /// build time (`docs/performance.md`).
    pub bins: usize,
    /// Meshes with more triangles than this build their subtrees in parallel on rayon.
    pub parallel_threshold: usize,
    /// Passes of tree rotations (Kensler 2008) over the binary tree before it is collapsed to 8
    /// wide; 0 turns the optimisation off. Default 3: lowers an interior's SAH cost for no
    /// noticeable build time (`docs/performance.md`).
    pub rotation_passes: usize,
}

impl BuildOptions {
    /// Whether a build of `triangles` triangles goes parallel at all
    /// ([`BuildOptions::parallel_threshold`]).
    fn in_parallel(&self, triangles: usize) -> bool {
        triangles > self.parallel_threshold
    }
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            triangle_test: TriangleTest::default(),
            quality: BuildQuality::default(),
            bins: 32,
            parallel_threshold: 16_384,
            rotation_passes: 3,
        }
    }
}

/// The closest hit of a ray on a mesh.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Ray parameter of the hit.
    pub t: f32,
    /// Index of the triangle in the mesh's input order.
    pub triangle: u32,
    /// Barycentric weight of the triangle's second vertex: the hit point is
    /// `(1 - u - v)·v0 + u·v1 + v·v2` (Embree's convention).
    pub u: f32,
    /// Barycentric weight of the third vertex.
    pub v: f32,
    /// Unit geometric normal, `normalize((v1 - v0) × (v2 - v0))`.
    pub normal: Vec3,
}

/// Size and quality of a [`MeshBvh`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeshStats {
    /// Triangles.
    pub triangles: usize,
    /// Triangle references in the leaves: the triangles, and one more for each further leaf a
    /// spatial split put a triangle in ([`BuildQuality::High`]).
    pub references: usize,
    /// 8-wide nodes.
    pub nodes: usize,
    /// Leaves (triangle packs of up to 4).
    pub leaves: usize,
    /// Depth in wide nodes.
    pub depth: u32,
    /// SAH cost of the wide tree: node and leaf-block areas over the root's (unit costs).
    pub sah_cost: f32,
    /// Bytes of nodes and packs per triangle.
    pub bytes_per_triangle: f32,
    /// Wall time of the build, collapse included.
    pub build_time: Duration,
    /// Where the build's time went; all zero for a BVH read back from bytes.
    pub build_phases: BuildPhases,
}

/// The wall time of each phase of [`MeshBvh::build`], as [`MeshStats::build_phases`] reports it
/// (and `slabtree info` prints it): what to look at before tuning a build.
///
/// ```
/// use std::time::Duration;
/// use slabtree::{BuildOptions, BuildPhases, MeshBvh, TriMesh};
/// let bvh = MeshBvh::build(&TriMesh::uv_sphere(1.0, 64, 32), &BuildOptions::default());
/// let s = bvh.stats();
/// let p = s.build_phases;
/// assert!(p.binary_build > Duration::ZERO && p.collapse > Duration::ZERO);
/// assert!(p.triangle_bounds + p.binary_build + p.rotations + p.collapse <= s.build_time);
/// // A BVH read back from bytes was not built here.
/// let read = MeshBvh::from_bytes(&bvh.to_bytes())?;
/// assert_eq!(read.stats().build_phases, BuildPhases::default());
/// # Ok::<(), slabtree::SavedBvhError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BuildPhases {
    /// The triangles' boxes and centroids (zero for [`BuildQuality::Low`], which makes them
    /// within its sort, in the order of its tree).
    pub triangle_bounds: Duration,
    /// The binary tree: binned SAH (Wald 2007), or for [`BuildQuality::Low`], which makes no
    /// binary tree, the sort along the Morton curve and the plan of the wide nodes.
    pub binary_build: Duration,
    /// The tree rotations ([`BuildOptions::rotation_passes`]).
    pub rotations: Duration,
    /// The collapse to 8-wide nodes, with the triangle packs written (for
    /// [`BuildQuality::Low`], the planned nodes written).
    pub collapse: Duration,
}

/// A BVH over a triangle mesh, for closest-hit, any-hit and swept-box queries.
///
/// # When to use
///
/// Triangles that do not move relative to each other: a model, a level, a scanned object. Many
/// copies of one mesh, or meshes that move as a whole, belong in a [`crate::Scene`] of instances
/// of one shared `MeshBvh`; a mesh that deforms can be [`MeshBvh::refit`].
///
/// # Cost
///
/// The build is a binned SAH over the triangles (on rayon's threads above
/// [`BuildOptions::parallel_threshold`]), about 60 bytes per triangle (Embree 3: 67–70). A query allocates
/// nothing; [`MeshBvh::intersect_batch`] spreads rays over rayon's threads. The numbers against
/// Embree and the other peers are in `docs/performance.md`.
///
/// ```
/// use slabtree::{BuildOptions, MeshBvh, Ray, TriMesh};
/// use glam::{Vec3, Vec3A};
/// // Two triangles forming the unit square in the plane z = 0.
/// let mesh = TriMesh::new(
///     vec![Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y],
///     vec![[0, 1, 2], [0, 2, 3]],
/// )?;
/// let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
/// let ray = Ray::new(Vec3A::new(0.25, 0.75, 1.0), -Vec3A::Z);
/// let hit = bvh.intersect(&ray)?.unwrap();
/// assert_eq!((hit.triangle, hit.t), (1, 1.0));
/// assert!(bvh.occluded(&ray)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct MeshBvh {
    /// Nodes and triangle packs, addressed by position (see `super::layout`).
    pub(crate) blocks: Blocks,
    pub(crate) mesh: TriMesh,
    pub(crate) options: BuildOptions,
    pub(crate) bounds: Aabb,
    /// The triangles referenced from more than one leaf (spatial splits, [`BuildQuality::High`]),
    /// or `None` when every triangle is in one leaf: the queries that list triangles report
    /// these once (`super::triangle_set`).
    pub(crate) shared: Option<Box<TriangleSet>>,
    pub(crate) depth: u32,
    /// The build's time, or a saved BVH's reading time (`super::saved`).
    pub(crate) build_time: Duration,
    /// The build's phases (zero for a saved BVH).
    pub(crate) build_phases: BuildPhases,
}

/// A summary, not every node: triangles, nodes, leaves, depth, bounds, SAH cost and the triangle
/// test.
impl std::fmt::Debug for MeshBvh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.stats();
        f.debug_struct("MeshBvh")
            .field("triangles", &s.triangles)
            .field("nodes", &s.nodes)
            .field("leaves", &s.leaves)
            .field("depth", &s.depth)
            .field("bounds", &self.bounds())
            .field("sah_cost", &s.sah_cost)
            .field("triangle_test", &self.options.triangle_test)
            .finish_non_exhaustive()
    }
}

/// Stich's α for `BuildQuality::High`: spatial splits are tried where an object split's two
/// halves overlap by more than this share of the root's surface area (ten times the paper's
/// 10⁻⁵: the same trees, nearly, for less build time; `docs/performance.md`).
const SPATIAL_ALPHA: f32 = 1e-4;

/// References a `BuildQuality::High` build may add, as a share of the triangles.
const SPATIAL_BUDGET: f32 = 0.25;

/// Traversal stack capacity. The builder bounds the binary depth by 48 + log2(n) (median splits
/// below depth 48), a wide node has at most 7 siblings on the stack per level, and
/// 7 · (48 + 32 + 2) < 1024, so the fixed stack cannot overflow for any mesh of up to 2^32
/// triangles.
pub(super) const STACK: usize = 1024;

/// BVHs of at least this many bytes (nodes and packs) are read mostly from memory rather than
/// from cache, and traced accordingly: their batches keep several rays in flight
/// ([`MeshBvh::intersect_batch`]), and their walks start loading every child of a node before
/// the node test picks among them. Both pay only there: BVHs read from cache lose to the rays'
/// switching and to the extra loads (`docs/performance.md`, "Batches of rays in flight" and
/// "Early child loads and coherence hints").
#[doc(hidden)]
pub const LARGE_BVH_BYTES: usize = 32 << 20;

/// Rays of a batch judged coherent or not together
/// ([`RayCoherence::of_rays`](crate::RayCoherence::of_rays)): a few scan lines of a camera's
/// image.
pub(super) const HINT_RUN: usize = 256;

/// What a build makes of a mesh before the BVH takes the mesh: the nodes and packs, and what
/// is known of them.
struct Built {
    bounds: Aabb,
    collapsed: Collapsed,
    phases: BuildPhases,
    shared: Option<TriangleSet>,
}

impl Built {
    /// The build of `mesh`, its items in the memory of `spare` where that has room (a
    /// rebuild's old tree, [`MeshBvh::rebuild`]).
    fn new(mesh: &TriMesh, options: &BuildOptions, start: Instant, spare: Option<Spare>) -> Built {
        let rebuild = spare.is_some();
        let item = |i: u32| BuildItem::new(Aabb::from_points(mesh.triangle(i as usize)), i);
        // On one thread (a pool of one, or without the `parallel` feature) the parallel paths
        // would only cost: each right subtree built into a vector of its own and copied into
        // place, every page of both faulted in. The tree is the same either way.
        let parallel = options.in_parallel(mesh.len()) && crate::par::threads() > 1;
        let threshold = if parallel { options.parallel_threshold } else { usize::MAX };
        let builder = BinnedSah {
            bins: options.bins,
            max_leaf: 4,
            traversal_cost: 1.0,
            parallel_threshold: threshold,
            block: 4,
            longest_axis_only: false,
        };
        // Each arm gives the leaves' triangles in order (the items' indices: the items' boxes are
        // done with, and freed before the collapse allocates its output), and where it can, the
        // items' memory for the BVH to reuse.
        let index_order = |items: &[BuildItem]| -> Vec<u32> {
            if !parallel {
                return items.iter().map(BuildItem::index).collect();
            }
            let mut order = vec![0; items.len()];
            crate::par::fill(&mut order, 1 << 16, |k| items[k as usize].index());
            order
        };
        let (prims, spare, mut build, bounded) = match options.quality {
            BuildQuality::Low => return Built::low(mesh, options, start, spare, parallel),
            BuildQuality::Medium => {
                // The items and the partitions' scratch in one array, whose memory the BVH's
                // blocks then take (`pages::Spare`): they are written over pages the build has
                // already faulted in, not fresh ones (`docs/performance.md`, "Scale").
                let n = mesh.len();
                // SAFETY: an item is plain float data, for which zero bytes are valid.
                let mut memory = unsafe { PagedSlice::<BuildItem>::zeroed_in(2 * n, spare) };
                let (items, scratch) = memory.split_at_mut(n);
                crate::par::fill(items, 4096, item);
                let bounded = Instant::now();
                let build = builder.build_with_scratch(items, scratch);
                (index_order(items), memory.into_spare(), build, bounded)
            }
            BuildQuality::High => {
                // Its references are not known before the build; the old tree's memory goes.
                drop(spare);
                let spatial = SpatialSplits { object: builder, alpha: SPATIAL_ALPHA, budget: SPATIAL_BUDGET };
                let (items, build) = spatial.build(mesh.len() as u32, item, |i| mesh.triangle(i as usize));
                (index_order(&items), None, build, start)
            }
        };
        let built = Instant::now();
        // The linear BVH's point is its build time, which rotations would add to for a tree that
        // Low trades away anyway (`docs/performance.md`, "Build qualities").
        if options.quality != BuildQuality::Low {
            crate::build::rotate_passes(&mut build, options.rotation_passes, parallel);
        }
        let rotated = Instant::now();
        let rows = MeshRows { mesh, rows: options.triangle_test.pack_rows() };
        // Only where segments were made (and trimming the heap is worth its walk over it), and
        // not in a rebuild: a mesh rebuilt every frame would fault their pages in again each
        // time, where the allocator's freed memory serves the next rebuild's segments.
        if parallel && !rebuild {
            crate::pages::release_freed_memory();
        }
        let collapsed = collapse(&build, &prims, &rows, parallel, spare);
        // Only spatial splits add references.
        let shared = (prims.len() > mesh.len()).then(|| TriangleSet::repeated(mesh.len(), prims.iter().copied()));
        let phases = BuildPhases {
            triangle_bounds: bounded - start,
            binary_build: built - bounded,
            rotations: rotated - built,
            collapse: rotated.elapsed(),
        };
        let bounds = build.first().map_or(Aabb::EMPTY, |n| *n.bounds());
        Built { bounds, collapsed, phases, shared: shared.flatten() }
    }

    /// The [`BuildQuality::Low`] build of `mesh`: its triangles laid along the Morton curve, and
    /// the 8-wide tree planned and written straight from them (`super::linear`), with no binary
    /// tree between. The items and the sort's keys go in the memory of `spare` where that has
    /// room (a rebuild's old tree), and the tree then in theirs.
    fn low(mesh: &TriMesh, options: &BuildOptions, start: Instant, spare: Option<Spare>, parallel: bool) -> Built {
        let item = |i: u32| BuildItem::new(Aabb::from_points(mesh.triangle(i as usize)), i);
        let centroid = |i: u32| Aabb::from_points(mesh.triangle(i as usize)).center();
        let n = mesh.len();
        // Every item and key is written before it is read.
        // SAFETY: an item is plain float data, for which any bytes are valid.
        let mut memory = unsafe { PagedSlice::<BuildItem>::reused_in(2 * n, spare) };
        let (items, rest) = memory.split_at_mut(n);
        // SAFETY: as above, any bytes are valid.
        let scratch = unsafe { crate::pages::as_words(rest) };
        // The triangle's reads as the packs ask for them: indices, then corners.
        let rows = MeshRows { mesh, rows: options.triangle_test.pack_rows() };
        let prefetch = |i: u32, fetch: Fetch| match fetch {
            Fetch::First => rows.prefetch(i),
            Fetch::Rest => rows.prefetch_rest(i),
        };
        let bounds = mesh.bounds().unwrap_or(Aabb::EMPTY);
        let parallel_sort = parallel && n > options.parallel_threshold;
        let order = crate::build::sort_along_curve(items, scratch, &bounds, centroid, item, prefetch, parallel_sort);
        let plan = Plan::new(&order, items, parallel);
        let sorted = Instant::now();
        // The tree is written from the triangles alone, so the items' memory, already backed,
        // takes it, as it takes Medium's.
        let mut prims = vec![0; n];
        crate::par::fill(&mut prims, 1 << 16, |k| crate::build::curve_key_index(order.keys[k as usize]));
        let (collapsed, bounds) = plan.write(&prims, &rows, memory.into_spare());
        let phases = BuildPhases {
            triangle_bounds: Duration::ZERO,
            binary_build: sorted - start,
            rotations: Duration::ZERO,
            collapse: sorted.elapsed(),
        };
        Built { bounds, collapsed, phases, shared: None }
    }

    fn into_bvh(self, mesh: TriMesh, options: &BuildOptions, start: Instant) -> MeshBvh {
        let Built { bounds, collapsed, phases, shared } = self;
        MeshBvh {
            blocks: collapsed.blocks,
            mesh,
            options: *options,
            bounds,
            shared: shared.map(Box::new),
            depth: collapsed.depth,
            build_time: start.elapsed(),
            build_phases: phases,
        }
    }
}

impl MeshBvh {
    /// Builds the BVH of `mesh` (which it keeps a copy of; [`MeshBvh::build_owned`] keeps the
    /// mesh itself instead).
    ///
    /// ```
    /// use slabtree::{BuildOptions, MeshBvh, Ray, TriMesh};
    /// use glam::Vec3A;
    /// let mesh = TriMesh::uv_sphere(1.0, 32, 16);
    /// let bvh = MeshBvh::build(&mesh, &BuildOptions::default());
    /// let hit = bvh.intersect(&Ray::new(Vec3A::new(0.0, 0.0, -5.0), Vec3A::Z))?.unwrap();
    /// assert!((hit.t - 4.0).abs() < 1e-3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(mesh: &TriMesh, options: &BuildOptions) -> MeshBvh {
        let start = Instant::now();
        // The copy is made on another thread meanwhile rather than after the build, where the
        // build is large enough to go parallel at all.
        let parallel = options.in_parallel(mesh.len());
        let (built, copy) = crate::par::join_if(parallel, || Built::new(mesh, options, start, None), || mesh.clone());
        built.into_bvh(copy, options, start)
    }

    /// [`MeshBvh::build`], keeping `mesh` itself rather than a copy: for a mesh made only to be
    /// traced, such as one just loaded from a file. A large mesh is then in memory once during
    /// the build, not twice.
    ///
    /// ```
    /// use slabtree::{BuildOptions, MeshBvh, TriMesh};
    /// let bvh = MeshBvh::build_owned(TriMesh::cuboid(glam::Vec3::ONE), &BuildOptions::default());
    /// assert_eq!(bvh.mesh().len(), 12);
    /// ```
    pub fn build_owned(mesh: TriMesh, options: &BuildOptions) -> MeshBvh {
        let start = Instant::now();
        let built = Built::new(&mesh, options, start, None);
        built.into_bvh(mesh, options, start)
    }

    /// The mesh this BVH was built over.
    pub fn mesh(&self) -> &TriMesh {
        &self.mesh
    }

    /// The options it was built with. A BVH read from bytes ([`MeshBvh::from_bytes`]) keeps its
    /// triangle test; its other options read as the defaults, since the saved tree is what it
    /// is whatever built it.
    pub fn options(&self) -> &BuildOptions {
        &self.options
    }

    /// Bounds of the mesh (`None` when empty).
    pub fn bounds(&self) -> Option<Aabb> {
        (!self.mesh.is_empty()).then_some(self.bounds)
    }

    /// Moves the vertices (same count and triangles) and refits every bound bottom-up, keeping
    /// the tree's structure: for deforming meshes. Quality degrades with large deformations;
    /// [`MeshBvh::rebuild`] then. A BVH with a triangle in several leaves (spatial splits,
    /// [`BuildQuality::High`]) is refused with [`MeshError::RefitSpatialSplits`]: its boxes hold
    /// parts of triangles cut at planes, and refitted to whole triangles they would overlap as
    /// an object split's do, for the duplicates' cost and none of the gain.
    pub fn refit(&mut self, new_positions: &[Vec3]) -> Result<(), MeshError> {
        if self.shared.is_some() {
            return Err(MeshError::RefitSpatialSplits);
        }
        self.mesh.copy_positions(new_positions)?;
        let (mesh, blocks) = (&self.mesh, &mut self.blocks);
        let (mut node_at, pack_at) = blocks.walk();
        // Pre-order: reversed, children come before their parents.
        node_at.reverse();
        write_contents(mesh, blocks, self.options.triangle_test.pack_rows(), &node_at, &pack_at);
        self.bounds = if blocks.is_empty() { Aabb::EMPTY } else { blocks.node(0).union() };
        Ok(())
    }

    /// Moves the vertices (same count and triangles) and builds the tree again, with the options
    /// this BVH was built with ([`MeshBvh::options`]): for meshes that deform too much for
    /// [`MeshBvh::refit`] to keep their trees good, rebuilt every frame, usually at
    /// [`BuildQuality::Low`]. The new tree is the one [`MeshBvh::build`] makes of the moved
    /// mesh, byte for byte, but a Low or Medium rebuild works in the memory the old tree held
    /// (and the mesh's own), where a new build takes fresh pages, each first written through a
    /// fault and the kernel's zeroing (`docs/performance.md`, "The memory a build writes"); on
    /// several threads it also leaves the memory its parallel parts freed to the allocator, for
    /// the next rebuild's, where a build hands it back to the kernel. On bad
    /// positions (a count other than the mesh's, or a coordinate that is not finite) it returns
    /// the error and leaves the BVH as it was.
    ///
    /// ```
    /// use glam::{Vec3, Vec3A};
    /// use slabtree::{BuildOptions, BuildQuality, MeshBvh, Ray, TriMesh};
    /// let mesh = TriMesh::uv_sphere(1.0, 32, 16);
    /// let options = BuildOptions { quality: BuildQuality::Low, ..Default::default() };
    /// let mut bvh = MeshBvh::build(&mesh, &options);
    /// // Each frame: the vertices move, and the tree is built again.
    /// let moved: Vec<Vec3> = mesh.positions().iter().map(|&p| p + Vec3::new(3.0, 0.0, 0.0)).collect();
    /// bvh.rebuild(&moved)?;
    /// let hit = bvh.intersect(&Ray::new(Vec3A::new(3.0, 0.0, -5.0), Vec3A::Z))?.unwrap();
    /// assert!((hit.t - 4.0).abs() < 1e-3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rebuild(&mut self, new_positions: &[Vec3]) -> Result<(), MeshError> {
        let start = Instant::now();
        self.mesh.copy_positions(new_positions)?;
        let old = std::mem::replace(&mut self.blocks, Blocks::zeroed(0));
        let options = self.options;
        let built = Built::new(&self.mesh, &options, start, old.into_spare());
        *self = built.into_bvh(std::mem::take(&mut self.mesh), &options, start);
        Ok(())
    }

    /// The bytes of the BVH's nodes and triangle packs (not of the mesh it was built from), at
    /// once: what [`LARGE_BVH_BYTES`] is compared with.
    pub fn bvh_bytes(&self) -> usize {
        self.blocks.bytes()
    }

    /// Whether the BVH is [`LARGE_BVH_BYTES`] or more.
    pub(super) fn is_large(&self) -> bool {
        self.bvh_bytes() >= LARGE_BVH_BYTES
    }

    /// Whether a ray of this coherence walks with the early child loads: through a large BVH,
    /// whose nodes come from memory, or when it is incoherent (`docs/performance.md`, "Early child
    /// loads and coherence hints"). The one rule for every single-ray walk, fixed or with a policy.
    pub(super) fn loads_early(&self, hint: crate::math::RayCoherence) -> bool {
        self.is_large() || hint == crate::math::RayCoherence::Incoherent
    }

    /// Size and quality figures.
    pub fn stats(&self) -> MeshStats {
        let root_area = self.bounds.half_area().max(f32::MIN_POSITIVE) as f64;
        let mut area = 0.0f64;
        let (node_at, pack_at) = self.blocks.walk();
        for &at in &node_at {
            let n = self.blocks.node(at);
            for lane in 0..8 {
                if !n.child[lane].is_empty() {
                    area += n.lane_bounds(lane).half_area() as f64;
                }
            }
        }
        let bytes = self.blocks.bytes();
        let references = pack_at
            .iter()
            .filter_map(|&at| self.blocks.pack(at))
            .map(|p| p.prim.iter().filter(|&&prim| prim != NO_PRIM).count())
            .sum();
        MeshStats {
            triangles: self.mesh.len(),
            references,
            nodes: node_at.len(),
            leaves: pack_at.len(),
            depth: self.depth,
            sah_cost: if self.mesh.is_empty() { 0.0 } else { (1.0 + area / root_area) as f32 },
            bytes_per_triangle: bytes as f32 / self.mesh.len().max(1) as f32,
            build_time: self.build_time,
            build_phases: self.build_phases,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{BuildOptions, BuildQuality, MeshBvh, TriMesh};

    /// A Low or Medium rebuild of a mesh whose items take huge pages writes its new tree where
    /// the old one was (the old blocks' memory takes the items, and the items' the new blocks),
    /// and the tree is a fresh build's.
    #[test]
    fn a_rebuild_reuses_the_old_trees_memory() {
        let mesh = TriMesh::uv_sphere(1.0, 256, 128);
        let moved: Vec<glam::Vec3> = mesh.positions().iter().map(|&p| p * 2.0 + glam::Vec3::X).collect();
        let deformed = TriMesh::new(moved.clone(), mesh.triangles().to_vec()).unwrap();
        for quality in [BuildQuality::Low, BuildQuality::Medium] {
            let options = BuildOptions { quality, ..Default::default() };
            let mut bvh = MeshBvh::build(&mesh, &options);
            let before = bvh.blocks.block_ptr(0);
            bvh.rebuild(&moved).unwrap();
            if cfg!(target_os = "linux") {
                assert_eq!(bvh.blocks.block_ptr(0), before, "{quality:?}: the rebuild took fresh memory");
            }
            assert!(bvh.to_bytes() == MeshBvh::build(&deformed, &options).to_bytes(), "{quality:?}");
        }
    }
}
