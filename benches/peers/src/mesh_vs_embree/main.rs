//! slabtree's `MeshBvh` against Embree 3, obvhs, parry3d and the `bvh` crate: the same meshes and
//! the same ray files, in one run.
//!
//! Data: the meshes `bunny.obj`, `dragon.ply` and `sponza.obj` and the ray files
//! `rays/<scene>.<kind>.rays` of the shared scenes folder (see its README), with the Embree 4
//! reference answers `rays/<scene>.<kind>.hits` / `.occluded` for the cross-check. The folder is
//! the first argument if given, else `$SLABTREE_SCENES`, else `../shared/scenes` beside the repository. Further
//! arguments pick scenes (default: all three). Kinds `primary`, `random` and `diffuse` are
//! closest-hit queries; `shadow` rays (finite `tmax`) are any-hit (occlusion) queries.
//!
//! Libraries, each as its users would call it, one ray at a time. The two libraries that take a
//! hint of how alike consecutive rays are get the same one: each run of 256 rays of a file is
//! judged coherent or not once, outside the timed passes, by `RayCoherence::of_rays` (the judgement
//! slabtree's batch queries make themselves), and every ray of the run is traced with it.
//! * slabtree: `MeshBvh::intersect_with` / `occluded_with` with `AcceptAll` and that judgement, default build
//!   (Möller–Trumbore), and a second BVH built with `TriangleTest::Watertight` ("slabtree WT").
//! * Embree 3 (system `libembree3` through the `embree` crate): `rtcIntersect1` / `rtcOccluded1`
//!   with a coherent or incoherent intersect context by that judgement, once with the default
//!   scene flags (non-robust) and once with `RTC_SCENE_FLAG_ROBUST` (set through
//!   `embree::sys::rtcSetSceneFlags`), default build quality.
//! * obvhs: a CWBVH from `build_cwbvh_from_tris` (`BvhBuildParams::medium_build()`), triangles
//!   reordered to the BVH's primitive order as its examples do, `Triangle::intersect`;
//!   `ray_traverse` for closest hit and `ray_traverse_miss` (early exit) for occlusion.
//! * parry3d: `TriMesh::new` (its built-in BVH); `cast_ray_and_get_normal` for closest hit and
//!   `intersects_ray` with the shadow ray's `tmax` as max time of impact for occlusion.
//! * bvh (crate): `Bvh::build_par` over one shape per triangle; `traverse_iterator` yields the
//!   triangles whose boxes the ray hits, tested here with a plain Möller–Trumbore (no culling, no
//!   epsilon): nearest hit over all candidates, or the first hit within `tmax` for occlusion.
//!
//! Builds: wall time of each library's build from its input already in memory (slabtree
//! `MeshBvh::build`; Embree `rtcCommitScene` after its buffers are filled; obvhs build plus the
//! triangle reorder; parry3d `TriMesh::new`; bvh `Bvh::build_par`), each with its own default
//! threading (all of them parallel on this machine's cores except parry3d's; Embree uses TBB),
//! best of 3 (two interleaved rounds of throw-away builds, then the kept one). Bytes per triangle,
//! roughly "what a query reads": slabtree `stats().bytes_per_triangle` (nodes + triangle packs);
//! Embree the net bytes its memory monitor saw allocated during `rtcCommitScene` (BVH and leaf
//! triangles, not the vertex and index buffers); obvhs nodes + primitive indices + reordered
//! triangles; parry3d `TriMesh::heap_memory_size` (BVH + vertices + indices); bvh nodes + shapes.
//!
//! Every single-thread pass runs over the whole ray file and starts from the raw f32 records, so
//! each library's ray set-up (inverse direction etc.) is included. slabtree's barycentrics and
//! normal are passed through `black_box` so nothing it computes is optimised away (Embree writes
//! them to its `RTCRayHit` anyway). Passes are interleaved: in round r the libraries run in an
//! order rotated by r, and the best of the rounds is kept. A library whose first (untimed, recording) pass is slow gets fewer timed passes so the
//! run stays short; the table marks those with the pass count in brackets.
//!
//! Two threads: slabtree's `intersect_batch` / `occluded_batch` and Embree's
//! `rtcIntersect1` / `rtcOccluded1` under rayon's `par_chunks`, a task per run of 256 rays with the
//! run's coherence as its context flag (`CommittedScene` is `Sync` in the `embree` crate; Embree
//! documents scene queries as thread-safe), each on prebuilt rays and into answer vectors kept
//! across passes, in a 1-thread and a 2-thread rayon pool, with three times as many rounds as the
//! single-thread passes (they are short);
//! a timed pass traces the file several times in a row when it has fewer than `BATCH_RAYS` rays.
//!
//! Noise: while each ray set runs, /proc/stat tells how much CPU time other processes took; it is
//! printed per set ("other load") with a WARNING above 5%, since a busy machine skews the timings.
//!
//! Profiling: `MESH_PROFILE=LIB:SCENE:KIND[:PASSES]` (LIB one of `slabtree`, `slabtree-wt`,
//! `embree`, `embree-robust`; KIND one of `primary`, `random`, `diffuse`, `shadow`) builds that
//! one library over that one scene and traces its ray file PASSES times (default 1), printing the
//! hit count and nothing else, so that `valgrind --tool=callgrind` counts one library's
//! instructions per ray (run with 1 and 3 passes and divide the difference by twice the ray
//! count); it also prints the best pass's rate, for comparing two builds of slabtree by
//! alternating their runs. Build the profiled binary with `RUSTFLAGS="-C target-cpu=x86-64-v3"`.
//! KIND `build` builds that library's BVH of the scene PASSES times on one thread and traces
//! nothing (LIB `slabtree`, `slabtree-wt` or `embree`).
//!
//! Build times: `MESH_BUILD=ROUNDS` times only the builds of slabtree and Embree 3 with one and
//! with two threads (a rayon pool of that size; an Embree device with `threads=N`), interleaved
//! for ROUNDS rounds, and prints best, median and the SAH cost of both trees per scene.
//!
//! Environment: `MESH_LIBS=embree` (only slabtree and Embree: obvhs, parry3d and bvh are neither
//! built nor timed, and their cells read `-`; for quick before/after runs), `MESH_PASSES` (timed rounds, default 7), `MESH_BUDGET_S` (seconds of timed passes
//! per library and ray set before passes are cut, default 4), `MESH_EMBREE_VERBOSE` (set: print
//! Embree's configuration and selected ISA first), `MESH_FTZ` (set: turn on flush-to-zero and
//! denormals-are-zero, as Embree recommends, on the main thread and the rayon pools' threads; the
//! default leaves MXCSR as it is, like the Embree 4 reference timings in the scenes README).

mod builds;
#[path = "../embree_geometry.rs"]
mod embree_geometry;
mod libraries;
mod profile;
mod rays;
mod report;
mod run;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use embree::{Device, sys};

use crate::builds::{build_only, embree_build_time, embree_setup, ftz_wanted, set_ftz_daz};
use crate::profile::profile;
use crate::report::{LIBS, mrays};
use crate::run::run_scene;

pub(crate) const SCENES: [(&str, &str); 3] =
    [("bunny", "bunny.obj"), ("dragon", "dragon.ply"), ("sponza", "sponza.obj")];
pub(crate) const KINDS: [&str; 4] = ["primary", "random", "diffuse", "shadow"];
/// Builds per library and scene; the best is reported.
pub(crate) const BUILDS: usize = 3;
/// Relative hit-count difference to Embree above which a WARNING is printed.
pub(crate) const COUNT_TOLERANCE: f64 = 1e-3;
/// Relative `t` tolerance of the per-ray check (the reference README's).
pub(crate) const T_TOLERANCE: f32 = 1e-4;
/// Ray ids listed per disagreement class.
pub(crate) const LIST_IDS: usize = 12;
/// The two-thread passes are short, so they get this many times the single-thread rounds.
pub(crate) const MT_ROUNDS_FACTOR: usize = 3;

/// Rays a two-thread timed pass traces at least: the file is traced as many times in a row as
/// that takes, and the pass's time is divided by them. A file traced once is a 2–4 ms batch on two
/// threads (the bunny's camera and shadow rays), too short for the best of the passes to settle
/// on this kind of host: the bunny's camera rays ranged 1.59–2.03× one thread over three runs.
pub(crate) const BATCH_RAYS: usize = 250_000;
/// Share of the machine used by other processes above which a set's timings get a WARNING.
pub(crate) const FOREIGN_WARN: f64 = 0.05;

/// One ray record: origin, tmin, direction, tmax.
pub(crate) type RawRay = [f32; 8];

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let dir = match args.peek() {
        Some(a) if Path::new(a).is_dir() => PathBuf::from(args.next().unwrap()),
        // The shared scenes sit beside the repository: `../shared/scenes` from its root.
        _ => std::env::var_os("SLABTREE_SCENES")
            .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/scenes"), PathBuf::from),
    };
    let picked: Vec<String> = args.collect();
    if let Some(bad) = picked.iter().find(|p| !SCENES.iter().any(|(s, _)| s == p)) {
        eprintln!("error: `{bad}` is neither a directory nor one of the scenes bunny, dragon, sponza");
        std::process::exit(2);
    }
    if ftz_wanted() {
        set_ftz_daz();
    }
    if let Ok(scene) = std::env::var("MESH_EMBREE_SAH") {
        // The child of `embree_sah`: one verbose Embree build, whose statistics go to stdout.
        let Some((_, file)) = SCENES.iter().find(|(s, _)| *s == scene) else {
            eprintln!("error: unknown scene {scene}");
            std::process::exit(2);
        };
        match slabtree::load_mesh(dir.join(file)) {
            Ok(mesh) => drop(embree_build_time(&mesh, 1, true)),
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(2);
            }
        }
        return;
    }
    if let Some(rounds) = std::env::var("MESH_BUILD").ok().and_then(|r| r.parse().ok()) {
        if let Err(e) = build_only(&dir, &picked, rounds) {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
        return;
    }
    if let Ok(spec) = std::env::var("MESH_PROFILE") {
        if let Err(e) = profile(&dir, &spec) {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
        return;
    }
    let rounds = env_usize("MESH_PASSES", 7).max(1);
    let budget = env_f64("MESH_BUDGET_S", 4.0);
    let start = Instant::now();

    if std::env::var_os("MESH_EMBREE_VERBOSE").is_some() {
        // Embree prints its build configuration and the ISA it selected for a verbose device.
        // SAFETY: a C string config; the device is released at once.
        unsafe { sys::rtcReleaseDevice(sys::rtcNewDevice(c"verbose=1".as_ptr())) };
    }
    let device = Device::new();
    let version = embree_setup(&device);
    println!(
        "# mesh_vs_embree: slabtree MeshBvh vs Embree {}.{}.{}, obvhs, parry3d, bvh",
        version / 10000,
        version / 100 % 100,
        version % 100
    );
    println!(
        "scenes: {}; {rounds} interleaved single-thread rounds (order rotated per round), best kept; \
         rayon threads for builds: {}; FTZ/DAZ {}",
        dir.display(),
        rayon::current_num_threads(),
        if ftz_wanted() { "on" } else { "off" }
    );

    let mut builds = Vec::new();
    let mut sets = Vec::new();
    for (scene, file) in SCENES {
        if !picked.is_empty() && !picked.iter().any(|p| p == scene) {
            continue;
        }
        match run_scene(&dir, scene, file, &device, rounds, budget) {
            Ok((b, s)) => {
                builds.push(b);
                sets.extend(s);
            }
            Err(e) => {
                eprintln!("error: {scene}: {e}");
                std::process::exit(1);
            }
        }
    }

    // Tables.
    println!("\n### Build time (ms, best of {BUILDS}) and bytes per triangle\n");
    println!("| scene | triangles | {} |", LIBS.join(" | "));
    println!("|---|---:|{}", "---:|".repeat(LIBS.len()));
    for b in &builds {
        let cells: Vec<String> = b
            .builds
            .iter()
            .map(|(t, _)| if *t == Duration::MAX { "-".to_string() } else { format!("{:.1}", t.as_secs_f64() * 1e3) })
            .collect();
        println!("| {} | {} | {} |", b.scene, b.triangles, cells.join(" | "));
    }
    println!();
    println!("| scene | bytes/tri: {} |", LIBS.join(" | "));
    println!("|---|{}", "---:|".repeat(LIBS.len()));
    for b in &builds {
        let cells: Vec<String> =
            b.builds.iter().map(|(_, bpt)| bpt.map_or_else(|| "n/a".to_string(), |v| format!("{v:.1}"))).collect();
        println!("| {} | {} |", b.scene, cells.join(" | "));
    }

    println!(
        "\n### Single thread, Mrays/s (best of {rounds} interleaved passes; (k) = only k passes; other load = \
         share of the machine's CPU time that other processes used while the set ran; coherent = \
         runs of 256 rays judged coherent, the hint both slabtree and Embree were given)\n"
    );
    println!(
        "| scene | kind | slabtree | Embree | Embree robust | obvhs | parry3d | bvh | ratio slabtree/Embree | slabtree WT | ratio WT/Embree robust | other load | coherent |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for s in &sets {
        let cell = |l: usize| {
            let t = &s.st[l];
            if !t.active {
                return "-".to_string();
            }
            let v = mrays(s.n, t.best);
            if t.passes < rounds { format!("{v:.3} ({})", t.passes) } else { format!("{v:.3}") }
        };
        let ratio = |a: usize, b: usize| mrays(s.n, s.st[a].best) / mrays(s.n, s.st[b].best);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {} | {:.2} | {} | {}/{} |",
            s.scene,
            s.kind,
            cell(0),
            cell(1),
            cell(2),
            cell(3),
            cell(4),
            cell(5),
            ratio(0, 1),
            cell(6),
            ratio(6, 2),
            s.foreign.map_or_else(|| "n/a".to_string(), |f| format!("{:.0}%", 100.0 * f)),
            s.coherent_runs.0,
            s.coherent_runs.1
        );
    }

    println!("\n### Hit counts (occluded counts for shadow); reference = Embree 4 robust files\n");
    println!("| scene | kind | rays | reference | {} |", LIBS.join(" | "));
    println!("|---|---|---:|---:|{}", "---:|".repeat(LIBS.len()));
    for s in &sets {
        let cells: Vec<String> =
            s.st.iter().map(|t| if t.active { t.count.to_string() } else { "-".to_string() }).collect();
        let r = s.reference.map_or_else(|| "n/a".to_string(), |c| c.to_string());
        println!("| {} | {} | {} | {} | {} |", s.scene, s.kind, s.n, r, cells.join(" | "));
    }

    println!(
        "\n### Two threads (rayon), Mrays/s, prebuilt rays (best of {} interleaved passes)\n",
        MT_ROUNDS_FACTOR * rounds
    );
    println!(
        "| scene | kind | slabtree 1T | slabtree 2T | speed-up | Embree 1T | Embree 2T | speed-up | Embree robust 1T | Embree robust 2T | ratio slabtree/Embree 2T |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for s in &sets {
        let m: Vec<f64> = s.mt.iter().map(|&d| mrays(s.n, d)).collect();
        println!(
            "| {} | {} | {:.3} | {:.3} | {:.2} | {:.3} | {:.3} | {:.2} | {:.3} | {:.3} | {:.2} |",
            s.scene,
            s.kind,
            m[0],
            m[1],
            m[1] / m[0],
            m[2],
            m[3],
            m[3] / m[2],
            m[4],
            m[5],
            m[1] / m[3]
        );
    }
    println!("\ntotal run time: {:.1} s", start.elapsed().as_secs_f64());
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}
