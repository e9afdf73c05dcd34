//! One library over one scene and ray kind, for callgrind (`MESH_PROFILE`).

use std::path::Path;
use std::time::Duration;

use embree::{Device, SceneFlags};
use slabtree::TriangleTest;

use crate::builds::{build_slab, embree_build_time, embree_commit, embree_scene, pool};
use crate::libraries::{Embree, Passes};
use crate::rays::load_rays;
use crate::report::mrays;
use crate::{KINDS, SCENES};

/// `MESH_PROFILE`: one library, one scene, one ray set, `passes` passes (see the module docs).
pub(crate) fn profile(dir: &Path, spec: &str) -> Result<(), String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let [lib, scene, kind, rest @ ..] = parts.as_slice() else {
        return Err(format!("MESH_PROFILE={spec}: expected LIB:SCENE:KIND[:PASSES]"));
    };
    let passes: usize = rest.first().map_or(Ok(1), |p| p.parse()).map_err(|e| format!("passes: {e}"))?;
    let (scene, file) = SCENES.iter().find(|(s, _)| s == scene).ok_or_else(|| format!("unknown scene {scene}"))?;
    let mesh = slabtree::load_mesh(dir.join(file)).map_err(|e| e.to_string())?;
    if *kind == "build" {
        // Builds only, on one thread, `passes` times: the build's instructions under callgrind
        // (the difference of two counts over the difference of their builds). slabtree's saved
        // form is hashed, so that a change meant to leave the tree alone can show that it does.
        let mut digest = String::new();
        // One pool for every build, so that its threads' start-up is not counted per build.
        let one = pool(1)?;
        for _ in 0..passes {
            match *lib {
                "slabtree" | "slabtree-wt" => {
                    let test = if *lib == "slabtree" { TriangleTest::MollerTrumbore } else { TriangleTest::Watertight };
                    let (bvh, _) = one.install(|| build_slab(&mesh, test));
                    let mut h = std::hash::DefaultHasher::new();
                    std::hash::Hash::hash(&bvh.0.to_bytes(), &mut h);
                    digest = format!(", saved BVH hash {:016x}", std::hash::Hasher::finish(&h));
                }
                "embree" => drop(embree_build_time(&mesh, 1, false)),
                other => return Err(format!("unknown library {other} for builds")),
            }
        }
        println!("{lib} {scene}: {passes} builds{digest}");
        return Ok(());
    }
    let kind: &'static str = KINDS.into_iter().find(|k| k == kind).ok_or("unknown kind")?;
    let set = load_rays(dir, scene, kind)?;
    let run = |t: &dyn Passes| {
        let (mut hits, mut best) = (0, Duration::MAX);
        for _ in 0..passes {
            let (h, d) = t.pass(&set.rays, &set.coherent, set.shadow);
            hits += h;
            best = best.min(d);
        }
        println!(
            "{lib} {scene}.{kind}: {} rays x {passes} passes, {hits} hits, best pass {:.3} Mrays/s",
            set.rays.len(),
            mrays(set.rays.len(), best)
        );
    };
    match *lib {
        "slabtree" => run(&build_slab(&mesh, TriangleTest::MollerTrumbore).0),
        "slabtree-wt" => run(&build_slab(&mesh, TriangleTest::Watertight).0),
        "embree" | "embree-robust" => {
            // With MESH_EMBREE_VERBOSE, Embree prints its build's statistics (node counts, SAH).
            let device =
                if std::env::var_os("MESH_EMBREE_VERBOSE").is_some() { Device::debug() } else { Device::new() };
            let flags = if *lib == "embree" { SceneFlags::NONE } else { SceneFlags::ROBUST };
            let s = embree_scene(&device, &mesh, flags);
            let (committed, _, _) = embree_commit(&s);
            run(&Embree(committed));
        }
        other => return Err(format!("unknown library {other}")),
    }
    Ok(())
}
