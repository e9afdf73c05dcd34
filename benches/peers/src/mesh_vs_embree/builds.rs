//! Each library's build from a mesh in memory, Embree's device and memory monitor, the threads'
//! settings (flush-to-zero, rayon pools), and the build-only mode (`MESH_BUILD`).

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use embree::{CommittedScene, Device, Scene, SceneFlags, sys};
use nalgebra::Point3;
use slabtree::{BuildOptions, MeshBvh, TriMesh, TriangleTest};

use crate::SCENES;
use crate::libraries::{BvhCrate, BvhTri, Obvhs, Parry, Slab};

/// Net bytes Embree has allocated, from its memory monitor callback.
pub(crate) static EMBREE_BYTES: AtomicI64 = AtomicI64::new(0);

unsafe extern "C" fn embree_monitor(_user: *mut std::os::raw::c_void, bytes: sys::ssize_t, _post: bool) -> bool {
    EMBREE_BYTES.fetch_add(bytes as i64, Ordering::Relaxed);
    true
}

/// An uncommitted Embree scene with the mesh as its one triangle geometry.
pub(crate) fn embree_scene<'d>(device: &'d Device, mesh: &TriMesh, flags: SceneFlags) -> Scene<'d> {
    let geometry = crate::embree_geometry::triangle_geometry(device, mesh);
    let mut scene = Scene::new(device);
    // SAFETY: the handle is the live scene just created; the flags are a valid RTCSceneFlags.
    unsafe { sys::rtcSetSceneFlags(scene.handle(), flags) };
    scene.attach_geometry(geometry);
    scene
}

/// Commits (builds) the scene: the committed scene, the build time and the net bytes allocated.
pub(crate) fn embree_commit<'a>(scene: &'a Scene<'a>) -> (CommittedScene<'a>, Duration, i64) {
    let before = EMBREE_BYTES.load(Ordering::Relaxed);
    let start = Instant::now();
    let committed = scene.commit();
    let time = start.elapsed();
    (committed, time, EMBREE_BYTES.load(Ordering::Relaxed) - before)
}

/// Installs the memory monitor on the scene's device and returns Embree's version number.
pub(crate) fn embree_setup(device: &Device) -> i64 {
    let scene = Scene::new(device);
    // SAFETY: rtcGetSceneDevice returns the device with one more reference, released here; the
    // callback is a plain function that only touches an atomic.
    unsafe {
        let dev = sys::rtcGetSceneDevice(scene.handle());
        sys::rtcSetDeviceMemoryMonitorFunction(dev, Some(embree_monitor), std::ptr::null_mut());
        let version = sys::rtcGetDeviceProperty(dev, sys::RTCDeviceProperty::VERSION);
        sys::rtcReleaseDevice(dev);
        version as i64
    }
}

/// Turns on flush-to-zero and denormals-are-zero for the calling thread.
pub(crate) fn set_ftz_daz() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: only sets the FTZ (bit 15) and DAZ (bit 6) bits of this thread's MXCSR.
    #[allow(deprecated)]
    unsafe {
        use std::arch::x86_64::{_mm_getcsr, _mm_setcsr};
        _mm_setcsr(_mm_getcsr() | 0x8040);
    }
}

pub(crate) fn ftz_wanted() -> bool {
    std::env::var_os("MESH_FTZ").is_some()
}

pub(crate) fn pool(threads: usize) -> Result<rayon::ThreadPool, String> {
    let mut b = rayon::ThreadPoolBuilder::new().num_threads(threads);
    if ftz_wanted() {
        b = b.start_handler(|_| set_ftz_daz());
    }
    b.build().map_err(|e| e.to_string())
}

pub(crate) fn build_slab(mesh: &TriMesh, test: TriangleTest) -> (Slab, Duration) {
    let options = BuildOptions { triangle_test: test, ..BuildOptions::default() };
    let start = Instant::now();
    let bvh = MeshBvh::build(mesh, &options);
    let t = start.elapsed();
    (Slab(bvh), t)
}

pub(crate) fn obvhs_tris(mesh: &TriMesh) -> Vec<obvhs::triangle::Triangle> {
    (0..mesh.len())
        .map(|i| {
            let [a, b, c] = mesh.triangle(i);
            obvhs::triangle::Triangle { v0: a.to_array().into(), v1: b.to_array().into(), v2: c.to_array().into() }
        })
        .collect()
}

pub(crate) fn build_obvhs(tris: &[obvhs::triangle::Triangle]) -> (Obvhs, Duration) {
    let start = Instant::now();
    let bvh = obvhs::cwbvh::builder::build_cwbvh_from_tris(
        tris,
        obvhs::BvhBuildParams::medium_build(),
        &mut Duration::default(),
    );
    let ordered = bvh.primitive_indices.iter().map(|&i| tris[i as usize]).collect();
    let t = start.elapsed();
    (Obvhs { bvh, tris: ordered }, t)
}

pub(crate) fn build_parry(mesh: &TriMesh) -> (Parry, Duration) {
    let verts: Vec<parry3d::math::Vector> =
        mesh.positions().iter().map(|p| parry3d::math::Vector::new(p.x, p.y, p.z)).collect();
    let indices = mesh.triangles().to_vec();
    let start = Instant::now();
    let tm = parry3d::shape::TriMesh::new(verts, indices).expect("parry3d rejects the mesh");
    let t = start.elapsed();
    (Parry(tm), t)
}

pub(crate) fn build_bvh_crate(mesh: &TriMesh) -> (BvhCrate, Duration) {
    use bvh::bounding_hierarchy::BoundingHierarchy;
    let mut shapes: Vec<BvhTri> = (0..mesh.len())
        .map(|i| {
            let v = mesh.triangle(i).map(|p| Point3::new(p.x, p.y, p.z));
            BvhTri { v, index: i as u32, node: 0 }
        })
        .collect();
    let start = Instant::now();
    let bvh = bvh::bvh::Bvh::build_par(&mut shapes);
    let t = start.elapsed();
    (BvhCrate { bvh, shapes }, t)
}

/// An Embree 3 build with `threads` worker threads (device config `threads=N`), through the C API
/// (the `embree` crate's `Device` takes no configuration): the commit's wall time, from buffers
/// already filled, as `embree_commit` times it.
pub(crate) fn embree_build_time(mesh: &TriMesh, threads: usize, verbose: bool) -> Duration {
    let config = std::ffi::CString::new(format!("threads={threads}{}", if verbose { ",verbose=2" } else { "" }))
        .expect("no NUL in the config");
    // SAFETY: the C API used as documented: every handle is created here, checked, and released
    // before returning; the buffers are written within the item counts they were created with.
    unsafe {
        let device = sys::rtcNewDevice(config.as_ptr());
        assert!(!device.is_null(), "rtcNewDevice({config:?}) failed");
        let scene = sys::rtcNewScene(device);
        let geom = sys::rtcNewGeometry(device, sys::RTCGeometryType::TRIANGLE);
        let nv = mesh.positions().len();
        let verts = sys::rtcSetNewGeometryBuffer(geom, sys::RTCBufferType::VERTEX, 0, sys::RTCFormat::FLOAT3, 12, nv)
            .cast::<[f32; 3]>();
        for (i, p) in mesh.positions().iter().enumerate() {
            verts.add(i).write(p.to_array());
        }
        let nt = mesh.triangles().len();
        let idx = sys::rtcSetNewGeometryBuffer(geom, sys::RTCBufferType::INDEX, 0, sys::RTCFormat::UINT3, 12, nt)
            .cast::<[u32; 3]>();
        for (i, t) in mesh.triangles().iter().enumerate() {
            idx.add(i).write(*t);
        }
        sys::rtcCommitGeometry(geom);
        sys::rtcAttachGeometry(scene, geom);
        sys::rtcReleaseGeometry(geom);
        let start = Instant::now();
        sys::rtcCommitScene(scene);
        let t = start.elapsed();
        sys::rtcReleaseScene(scene);
        sys::rtcReleaseDevice(device);
        t
    }
}

/// `MESH_BUILD=ROUNDS`: build times only, slabtree (rayon pool of N threads) against Embree 3
/// (device with `threads=N`), N = 1 and 2, interleaved for ROUNDS rounds; best and median per
/// cell, and the SAH cost of both trees: `MeshBvh::stats().sah_cost`, and Embree's "total sah"
/// from its build statistics (the same sum, node areas plus leaf areas times blocks of 4
/// triangles over the root's), which it prints only on standard output with `verbose=2`, so a
/// child process builds it (`embree_sah`). With `MESH_EMBREE_VERBOSE`, Embree also prints its
/// statistics for its first build of each scene.
pub(crate) fn build_only(dir: &Path, picked: &[String], rounds: usize) -> Result<(), String> {
    println!("# Mesh BVH build time: slabtree against Embree 3, {rounds} interleaved rounds, best and median (ms)\n");
    println!(
        "| scene | triangles | threads | slabtree best | median | Embree best | median | speed: Embree best / slabtree best | slabtree SAH | Embree SAH |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let verbose = std::env::var_os("MESH_EMBREE_VERBOSE").is_some();
    let pools = [pool(1)?, pool(2)?];
    for (scene, file) in SCENES {
        if !picked.is_empty() && !picked.iter().any(|p| p == scene) {
            continue;
        }
        let mesh = slabtree::load_mesh(dir.join(file)).map_err(|e| e.to_string())?;
        let mut times = [[Vec::new(), Vec::new()], [Vec::new(), Vec::new()]]; // [threads][lib]
        let mut sah = 0.0;
        for round in 0..rounds {
            for (t, pool) in pools.iter().enumerate() {
                // Which library goes first alternates from round to round.
                let embree_first = round % 2 == 1;
                let embree_time = || embree_build_time(&mesh, t + 1, verbose && round == 0);
                let early = if embree_first { Some(embree_time()) } else { None };
                let (bvh, slab) = pool.install(|| build_slab(&mesh, TriangleTest::MollerTrumbore));
                sah = bvh.0.stats().sah_cost;
                drop(bvh);
                let embree = early.unwrap_or_else(embree_time);
                times[t][0].push(slab.as_secs_f64() * 1e3);
                times[t][1].push(embree.as_secs_f64() * 1e3);
            }
        }
        let embree_sah = embree_sah(dir, scene)?;
        for (t, cells) in times.iter_mut().enumerate() {
            for v in cells.iter_mut() {
                v.sort_by(f64::total_cmp);
            }
            let (sb, sm) = (cells[0][0], cells[0][cells[0].len() / 2]);
            let (eb, em) = (cells[1][0], cells[1][cells[1].len() / 2]);
            println!(
                "| {scene} | {} | {} | {sb:.1} | {sm:.1} | {eb:.1} | {em:.1} | {:.2} | {sah:.2} | {embree_sah} |",
                mesh.len(),
                t + 1,
                eb / sb
            );
        }
    }
    Ok(())
}

/// Embree's SAH cost of `scene`, read from the build statistics that a child process running
/// `MESH_EMBREE_SAH=scene` prints (see `build_only`).
pub(crate) fn embree_sah(dir: &Path, scene: &str) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::process::Command::new(exe)
        .arg(dir)
        .env("MESH_EMBREE_SAH", scene)
        .env_remove("MESH_BUILD")
        .output()
        .map_err(|e| format!("running the Embree statistics child: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // Embree 3.13: "  total            : sah =  10.753 (100.00%), #bytes = ..."
    let sah = text.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix("total")?.trim_start().strip_prefix(": sah =")?;
        rest.split_whitespace().next().map(str::to_owned)
    });
    sah.ok_or_else(|| format!("no \"total : sah\" line in Embree's statistics for {scene}"))
}
