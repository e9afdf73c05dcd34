//! What the renderer traces its rays against: one BVH over the whole mesh, or the library's
//! two-level [`slabtree::Scene`] with one instance per object of the scene (a generated object, a
//! glTF mesh instance). Both give the same surfaces, named by their triangle in the scene's mesh.

use std::collections::HashMap;
use std::sync::Arc;

use glam::{Affine3A, Vec3};
use rayon::prelude::*;
use slabtree::{BatchOptions, BuildOptions, MeshBvh, Ray, Threads, TriMesh};

use super::scene::Scene;

/// Why the renderer's batches are never refused: the camera is checked when it is made (a finite
/// eye, a view direction and field of view that make finite rays), and shadow and
/// ambient-occlusion rays start at finite hit points and go to a finite light or along a unit
/// direction.
const VALID: &str = "the renderer's rays are valid";

/// A ray's hit as the renderer uses it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Surface {
    /// Ray parameter of the hit.
    pub t: f32,
    /// The triangle, in the scene's mesh.
    pub triangle: u32,
    /// Unit geometric normal, in world space.
    pub normal: Vec3,
}

/// The structure rays are traced against.
pub enum Tracer {
    /// One [`MeshBvh`] over every triangle.
    Flat(Box<MeshBvh>),
    /// One instance per object, each over its own [`MeshBvh`].
    Instances {
        /// The scene; an instance's user id is its object's index.
        scene: Box<slabtree::Scene>,
        /// Each object's first triangle in the scene's mesh.
        first: Vec<u32>,
    },
}

impl Tracer {
    /// A single BVH over the scene's whole mesh.
    pub fn flat(scene: &Scene, options: &BuildOptions) -> Tracer {
        Tracer::Flat(Box::new(MeshBvh::build(&scene.mesh, options)))
    }

    /// One instance per object (see [`Scene::objects`]): each object's triangles become a mesh of
    /// their own, built in parallel, under the identity transform.
    pub fn instances(scene: &Scene, options: &BuildOptions) -> Tracer {
        let meshes: Vec<MeshBvh> =
            scene.objects.par_iter().map(|r| MeshBvh::build(&sub_mesh(&scene.mesh, r.clone()), options)).collect();
        let mut instances = slabtree::Scene::new();
        for (i, bvh) in meshes.into_iter().enumerate() {
            instances
                .add(Arc::new(bvh), Affine3A::IDENTITY, i as u64, slabtree::Scene::ALL)
                .expect("the identity is a valid transform and the objects are few");
        }
        instances.rebuild();
        Tracer::Instances { scene: Box::new(instances), first: scene.objects.iter().map(|r| r.start).collect() }
    }

    /// A line for the command's output: what was built.
    pub fn describe(&self) -> String {
        match self {
            Tracer::Flat(bvh) => {
                let s = bvh.stats();
                format!("{} nodes, depth {}, SAH cost {:.1}", s.nodes, s.depth, s.sah_cost)
            }
            Tracer::Instances { scene, .. } => format!("{} instances in a two-level scene", scene.len()),
        }
    }

    /// The closest hit of every ray, on rayon's threads, as packets ([`PACKETS`]): a block of
    /// camera rays in scan-line order goes as tiled packets.
    pub fn intersect_batch(&self, rays: &[Ray]) -> Vec<Option<Surface>> {
        match self {
            Tracer::Flat(bvh) => {
                batch(|out| bvh.intersect_batch(rays, out, PACKETS)).into_iter().map(|h| h.map(flat_surface)).collect()
            }
            Tracer::Instances { scene, first } => {
                batch(|out| scene.intersect_batch(rays, slabtree::Scene::ALL, out, PACKETS))
                    .into_iter()
                    .map(|h| h.map(|h| instance_surface(first, h)))
                    .collect()
            }
        }
    }

    /// Whether each ray hits anything, on rayon's threads, as packets (shadow rays to one light
    /// are coherent).
    pub fn occluded_batch(&self, rays: &[Ray]) -> Vec<bool> {
        match self {
            Tracer::Flat(bvh) => batch(|out| bvh.occluded_batch(rays, out, PACKETS)),
            Tracer::Instances { scene, .. } => {
                batch(|out| scene.occluded_batch(rays, slabtree::Scene::ALL, out, PACKETS))
            }
        }
    }

    /// The closest hit and the nodes visited (for the two-level scene, of both levels), for the
    /// heat map.
    pub fn intersect_counting(&self, ray: &Ray) -> (Option<Surface>, u32) {
        let (hit, stats) = match self {
            Tracer::Flat(bvh) => {
                let (h, stats) = bvh.intersect_counting(ray).expect(VALID);
                (h.map(flat_surface), stats)
            }
            Tracer::Instances { scene, first } => {
                let (h, stats) = scene.intersect_counting(ray, slabtree::Scene::ALL).expect(VALID);
                (h.map(|h| instance_surface(first, h)), stats)
            }
        };
        (hit, u32::try_from(stats.nodes).unwrap_or(u32::MAX))
    }
}

/// The triangles `range` of `mesh` as a mesh of their own, with only the vertices they use, in
/// order of first use.
fn sub_mesh(mesh: &TriMesh, range: std::ops::Range<u32>) -> TriMesh {
    let mut index: HashMap<u32, u32> = HashMap::new();
    let mut positions = Vec::new();
    let triangles = mesh.triangles()[range.start as usize..range.end as usize]
        .iter()
        .map(|t| {
            t.map(|v| {
                *index.entry(v).or_insert_with(|| {
                    positions.push(mesh.positions()[v as usize]);
                    positions.len() as u32 - 1
                })
            })
        })
        .collect();
    TriMesh::new(positions, triangles).expect("a part of a valid mesh is valid")
}

/// The surface a hit on the flat BVH names.
fn flat_surface(h: slabtree::Hit) -> Surface {
    Surface { t: h.t, triangle: h.triangle, normal: h.normal }
}

/// The surface a hit on the two-level scene names: its triangle numbered in the whole scene's
/// mesh, whose object `o` starts at triangle `first[o]` (the instance's user id is its object).
fn instance_surface(first: &[u32], h: slabtree::SceneHit) -> Surface {
    Surface { t: h.t, triangle: first[h.user_id as usize] + h.triangle, normal: h.normal }
}

/// The renderer's batches: on rayon's threads, as packets (camera rays in scan-line order and
/// shadow rays to one light are coherent).
pub const PACKETS: BatchOptions = BatchOptions { threads: Threads::Pool, packets: true, count_visits: false };

/// The answers `query` writes into a new vector, for rays the renderer made (always valid).
fn batch<T>(query: impl FnOnce(&mut Vec<T>) -> Result<slabtree::QueryStats, slabtree::BatchError>) -> Vec<T> {
    let mut out = Vec::new();
    query(&mut out).expect(VALID);
    out
}
