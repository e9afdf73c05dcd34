//! One scene: every library built, every ray set timed and checked.

use std::path::Path;
use std::time::{Duration, Instant};

use embree::{Device, SceneFlags};
use rayon::prelude::*;
use slabtree::{BatchOptions, TriangleTest};

use crate::builds::{
    build_bvh_crate, build_obvhs, build_parry, build_slab, embree_commit, embree_scene, obvhs_tris, pool,
};
use crate::libraries::{Embree, HINT_RUN, Outcome, Passes, Skipped, VALID, embree_ray, rust_peers, slab_ray};
use crate::rays::load_rays;
use crate::report::{BuildResult, CpuSnapshot, LIBS, SetResult, Timing, compare, ids};
use crate::{BATCH_RAYS, BUILDS, COUNT_TOLERANCE, FOREIGN_WARN, KINDS, MT_ROUNDS_FACTOR, T_TOLERANCE};

pub(crate) fn run_scene(
    dir: &Path,
    scene: &'static str,
    file: &str,
    device: &Device,
    rounds: usize,
    budget: f64,
) -> Result<(BuildResult, Vec<SetResult>), String> {
    let path = dir.join(file);
    let mesh = slabtree::load_mesh(&path).map_err(|e| e.to_string())?;
    let ntri = mesh.len();
    println!("\n## {scene}: {} triangles, {} vertices ({})", ntri, mesh.positions().len(), path.display());

    // Builds: BUILDS - 1 interleaved rounds of throw-away builds, then the kept ones.
    let peers = rust_peers();
    let active: [bool; 7] = [true, true, true, peers, peers, peers, true];
    let tris_ob = if peers { obvhs_tris(&mesh) } else { Vec::new() };
    let mut build_times = [Duration::MAX; 7];
    let mut keep = |lib: usize, t: Duration| build_times[lib] = build_times[lib].min(t);
    for round in 0..BUILDS - 1 {
        for k in 0..LIBS.len() {
            let lib = (round + k) % LIBS.len();
            if !active[lib] {
                continue;
            }
            match lib {
                0 => keep(0, build_slab(&mesh, TriangleTest::MollerTrumbore).1),
                1 | 2 => {
                    let flags = if lib == 1 { SceneFlags::NONE } else { SceneFlags::ROBUST };
                    // The scene (and its BVH) is released at the end of this block.
                    let s = embree_scene(device, &mesh, flags);
                    keep(lib, embree_commit(&s).1);
                }
                3 => keep(3, build_obvhs(&tris_ob).1),
                4 => keep(4, build_parry(&mesh).1),
                5 => keep(5, build_bvh_crate(&mesh).1),
                _ => keep(6, build_slab(&mesh, TriangleTest::Watertight).1),
            }
        }
    }
    let (slab, t) = build_slab(&mesh, TriangleTest::MollerTrumbore);
    keep(0, t);
    let fast_scene = embree_scene(device, &mesh, SceneFlags::NONE);
    let (fast, t, fast_bytes) = embree_commit(&fast_scene);
    keep(1, t);
    let robust_scene = embree_scene(device, &mesh, SceneFlags::ROBUST);
    let (robust, t, robust_bytes) = embree_commit(&robust_scene);
    keep(2, t);
    let (ob, pa, bv) = if peers {
        let (ob, t) = build_obvhs(&tris_ob);
        keep(3, t);
        let (pa, t) = build_parry(&mesh);
        keep(4, t);
        let (bv, t) = build_bvh_crate(&mesh);
        keep(5, t);
        (Some(ob), Some(pa), Some(bv))
    } else {
        (None, None, None)
    };
    let (slab_wt, t) = build_slab(&mesh, TriangleTest::Watertight);
    keep(6, t);
    drop(tris_ob);

    let per_tri = |bytes: usize| Some(bytes as f64 / ntri as f64);
    let ob_bytes = ob.as_ref().map(|ob| {
        std::mem::size_of_val(&ob.bvh.nodes[..])
            + std::mem::size_of_val(&ob.bvh.primitive_indices[..])
            + std::mem::size_of_val(&ob.tris[..])
    });
    let bv_bytes =
        bv.as_ref().map(|bv| std::mem::size_of_val(&bv.bvh.nodes[..]) + std::mem::size_of_val(&bv.shapes[..]));
    let bytes = [
        Some(slab.0.stats().bytes_per_triangle as f64),
        (fast_bytes > 0).then(|| fast_bytes as f64 / ntri as f64),
        (robust_bytes > 0).then(|| robust_bytes as f64 / ntri as f64),
        ob_bytes.and_then(per_tri),
        pa.as_ref().and_then(|pa| per_tri(pa.0.heap_memory_size())),
        bv_bytes.and_then(per_tri),
        Some(slab_wt.0.stats().bytes_per_triangle as f64),
    ];
    let build = BuildResult { scene, triangles: ntri, builds: build_times.iter().copied().zip(bytes).collect() };
    print!("build ms (best of {BUILDS}):");
    for (name, (t, _)) in LIBS.iter().zip(&build.builds) {
        if *t != Duration::MAX {
            print!(" {name} {:.1};", t.as_secs_f64() * 1e3);
        }
    }
    println!();

    let emb_fast = Embree(fast);
    let emb_robust = Embree(robust);
    let libs: [&dyn Passes; 7] = [
        &slab,
        &emb_fast,
        &emb_robust,
        ob.as_ref().map_or(&Skipped as &dyn Passes, |x| x),
        pa.as_ref().map_or(&Skipped as &dyn Passes, |x| x),
        bv.as_ref().map_or(&Skipped as &dyn Passes, |x| x),
        &slab_wt,
    ];

    let pool1 = pool(1)?;
    let pool2 = pool(2)?;

    let mut results = Vec::new();
    for kind in KINDS {
        let set = load_rays(dir, scene, kind)?;
        let n = set.rays.len();
        let t0 = Instant::now();
        let cpu0 = CpuSnapshot::take();

        // Recording pass (also the warm-up); its time sets how many timed passes a library gets.
        let mut outcomes = Vec::new();
        let mut allowed = [rounds; 7];
        for (l, lib) in libs.iter().enumerate() {
            if !active[l] {
                allowed[l] = 0;
                outcomes.push(lib.record(&[], &[], set.shadow));
                continue;
            }
            let start = Instant::now();
            outcomes.push(lib.record(&set.rays, &set.coherent, set.shadow));
            let secs = start.elapsed().as_secs_f64();
            allowed[l] = ((budget / secs).floor() as usize).clamp(1, rounds);
        }
        let counts: Vec<usize> = outcomes.iter().map(Outcome::count).collect();

        // Interleaved single-thread passes.
        let mut best = [Duration::MAX; 7];
        let mut done = [0usize; 7];
        for round in 0..rounds {
            for k in 0..libs.len() {
                let l = (round + k) % libs.len();
                if done[l] >= allowed[l] {
                    continue;
                }
                let (c, t) = libs[l].pass(&set.rays, &set.coherent, set.shadow);
                assert_eq!(c, counts[l], "{} gave a different count on a repeated pass", LIBS[l]);
                best[l] = best[l].min(t);
                done[l] += 1;
            }
        }

        // Two threads: slabtree batch vs Embree under rayon, 1- and 2-thread pools, prebuilt rays.
        let srays: Vec<slabtree::Ray> = set.rays.iter().map(slab_ray).collect();
        let erays: Vec<embree::Ray> = set.rays.iter().map(embree_ray).collect();
        // A timed pass traces the file `batches` times (see `BATCH_RAYS`); the time is per batch.
        let batches = BATCH_RAYS.div_ceil(n.max(1)).max(1);
        // Each library writes its answers into vectors kept across passes, as a renderer keeps
        // its frame's buffers: slabtree through its `_into` batches, Embree in place from tasks
        // of 256 rays, each free to be stolen, as slabtree's batches split their rays.
        let (mut slab_hits, mut slab_occluded) = (Vec::new(), Vec::new());
        let mut slab_batch = |pool: &rayon::ThreadPool| -> (usize, Duration) {
            let start = Instant::now();
            let c = pool.install(|| {
                (0..batches).fold(0, |_, _| {
                    if set.shadow {
                        slab.0.occluded_batch(&srays, &mut slab_occluded, BatchOptions::default()).expect(VALID);
                        slab_occluded.iter().filter(|&&o| o).count()
                    } else {
                        slab.0.intersect_batch(&srays, &mut slab_hits, BatchOptions::default()).expect(VALID);
                        slab_hits.iter().filter(|h| h.is_some()).count()
                    }
                })
            });
            (c, start.elapsed() / batches as u32)
        };
        let (mut emb_hits, mut emb_occluded) = (vec![None; erays.len()], vec![false; erays.len()]);
        let mut embree_batch_once = |e: &Embree, pool: &rayon::ThreadPool| -> usize {
            pool.install(|| {
                // Each task is one run of `HINT_RUN` rays, traced with the run's judgement as
                // the single-thread passes give it (slabtree's batches judge their runs alike).
                let runs = || erays.par_chunks(HINT_RUN).zip(set.coherent.par_iter());
                if set.shadow {
                    runs().zip(emb_occluded.par_chunks_mut(HINT_RUN)).with_max_len(1).for_each(|((c, &coh), o)| {
                        for (r, o) in c.iter().zip(o) {
                            *o = e.occlude(*r, coh);
                        }
                    });
                    emb_occluded.iter().filter(|&&o| o).count()
                } else {
                    runs().zip(emb_hits.par_chunks_mut(HINT_RUN)).with_max_len(1).for_each(|((c, &coh), o)| {
                        for (r, o) in c.iter().zip(o) {
                            *o = e.intersect(*r, coh);
                        }
                    });
                    emb_hits.iter().filter(|h: &&Option<(f32, u32)>| h.is_some()).count()
                }
            })
        };
        let mut embree_batch = |e: &Embree, pool: &rayon::ThreadPool| -> (usize, Duration) {
            let start = Instant::now();
            let c = (0..batches).fold(0, |_, _| embree_batch_once(e, pool));
            (c, start.elapsed() / batches as u32)
        };
        let mut mt = vec![Duration::MAX; 6];
        let mt_counts = [counts[0], counts[0], counts[1], counts[1], counts[2], counts[2]];
        for round in 0..MT_ROUNDS_FACTOR * rounds {
            for k in 0..6 {
                let j = (round + k) % 6;
                let pool = if j % 2 == 0 { &pool1 } else { &pool2 };
                let (c, t) = match j / 2 {
                    0 => slab_batch(pool),
                    1 => embree_batch(&emb_fast, pool),
                    _ => embree_batch(&emb_robust, pool),
                };
                assert_eq!(c, mt_counts[j], "a batch pass gave a different count");
                mt[j] = mt[j].min(t);
            }
        }

        // Report this set.
        let foreign = cpu0.foreign_load(t0.elapsed());
        let reference = set.reference.as_ref().map(Outcome::count);
        if let Some(f) = foreign.filter(|&f| f > FOREIGN_WARN) {
            println!(
                "WARNING: {scene}.{kind}: other processes used {:.0}% of the machine while this set was timed",
                100.0 * f
            );
        }
        println!(
            "{scene}.{kind}: {n} rays, {:.1} s; counts{}: {}",
            t0.elapsed().as_secs_f64(),
            if set.shadow { " (occluded)" } else { " (hits)" },
            LIBS.iter().zip(&counts).map(|(l, c)| format!("{l} {c}")).collect::<Vec<_>>().join(", ")
        );
        let embree_count = counts[1] as f64;
        for (l, &c) in counts.iter().enumerate() {
            let diff = (c as f64 - embree_count).abs();
            if l != 1 && active[l] && diff > COUNT_TOLERANCE * embree_count.max(1.0) {
                println!(
                    "WARNING: {scene}.{kind}: {} count {c} differs from Embree's {} by {:.3}%",
                    LIBS[l],
                    counts[1],
                    100.0 * diff / embree_count.max(1.0)
                );
            }
        }
        // Per-ray check of the slabtree variants against the Embree 4 reference files and against
        // Embree 3 (both flag sets).
        for (l, name) in [(0, "slabtree"), (6, "slabtree WT")] {
            let against: [(&str, Option<&Outcome>); 3] = [
                ("reference", set.reference.as_ref()),
                ("Embree", Some(&outcomes[1])),
                ("Embree robust", Some(&outcomes[2])),
            ];
            for (wname, want) in against {
                let Some(want) = want else { continue };
                let (extra, missing, t_off) = compare(&outcomes[l], want);
                if extra.is_empty() && missing.is_empty() && t_off.is_empty() {
                    continue;
                }
                println!(
                    "  {name} vs {wname}: {} hit where it missed {}, {} missed where it hit {}, {} with t off by > {T_TOLERANCE:e} rel {}",
                    extra.len(),
                    ids(&extra),
                    missing.len(),
                    ids(&missing),
                    t_off.len(),
                    ids(&t_off)
                );
                if wname == "reference" {
                    for &i in extra.iter().chain(&missing).chain(&t_off).take(6) {
                        println!(
                            "    ray {i}: {name} {} | reference {} | Embree {} | Embree robust {}",
                            outcomes[l].describe(i),
                            want.describe(i),
                            outcomes[1].describe(i),
                            outcomes[2].describe(i)
                        );
                    }
                }
            }
        }
        // Other libraries: hit/miss disagreements with the reference, counted only.
        if let Some(want) = &set.reference {
            let line: Vec<String> = (1..6)
                .filter(|&l| active[l])
                .map(|l| {
                    let (e, m, t) = compare(&outcomes[l], want);
                    let mut s = format!("{} +{}/-{}/t{}", LIBS[l], e.len(), m.len(), t.len());
                    if !(e.is_empty() && m.is_empty() && t.is_empty()) {
                        s += &format!(" (+{} -{} t{})", ids(&e), ids(&m), ids(&t));
                    }
                    s
                })
                .collect();
            println!("  vs reference (extra hits / missed hits / t off): {}", line.join(", "));
        }

        results.push(SetResult {
            scene,
            kind: set.kind,
            n,
            reference,
            st: (0..7)
                .map(|l| Timing { best: best[l], passes: done[l], count: counts[l], active: active[l] })
                .collect(),
            mt,
            foreign,
            coherent_runs: (set.coherent.iter().filter(|&&c| c).count(), set.coherent.len()),
        });
    }
    Ok((build, results))
}
