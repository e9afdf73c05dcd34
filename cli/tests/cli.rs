//! The `slabtree` command, run as a user runs it: the default render, `trace` against the
//! library's own batch queries, glTF node transforms, every error case, and `--help`.
//!
//! With `--features shared-data`, `trace` also round-trips every shared ray set against Embree's
//! hits (see `../shared/scenes/README.md`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use glam::{Vec3, Vec3A};
use slabtree::{BatchOptions, BuildOptions, MeshBvh, Ray, TriMesh, TriangleTest};

use common::gltf::{base64, glb};
use slabtree_testkit as common;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_slabtree"))
}

/// A fresh, empty folder for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("slabtree-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("the binary runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a command that must fail with exit code 1 and one `error: ` line naming `expect`; returns
/// the line.
fn fails(cmd: &mut Command, expect: &[&str]) -> String {
    let out = cmd.output().expect("the binary runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{cmd:?}: stderr {err}");
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{cmd:?}: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{cmd:?}: expected one line, got {err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    for e in expect {
        assert!(lines[0].contains(e), "{cmd:?}: `{}` does not mention `{e}`", lines[0]);
    }
    lines[0].to_owned()
}

/// Decodes a PNG: (width, height, RGB bytes).
fn read_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.color_type, info.bit_depth), (png::ColorType::Rgb, png::BitDepth::Eight));
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// How many distinct colours an RGB image has.
fn distinct_colors(rgb: &[u8]) -> usize {
    let mut c: Vec<[u8; 3]> = rgb.chunks_exact(3).map(|p| [p[0], p[1], p[2]]).collect();
    c.sort_unstable();
    c.dedup();
    c.len()
}

#[test]
fn default_render_writes_a_picture_and_the_figures() {
    let dir = temp_dir("default");
    let out = run(bin().current_dir(&dir));
    let text = stdout(&out);
    for needle in ["triangles", "built in", "primary rays", "shadow rays", "Mrays/s", "render.png"] {
        assert!(text.contains(needle), "missing `{needle}` in:\n{text}");
    }
    let (w, h, rgb) = read_png(&dir.join("render.png"));
    assert_eq!((w, h), (1280, 720));
    assert!(distinct_colors(&rgb) > 1000, "the picture is nearly uniform");
    // Not the sky alone: a good share of the pixels are darker than any sky colour (shadows,
    // shaded sides).
    let dark = rgb.chunks_exact(3).filter(|p| p.iter().map(|&c| c as u32).sum::<u32>() < 200).count();
    assert!(dark > (w * h / 50) as usize, "only {dark} dark pixels");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn render_modes_of_a_file() {
    let dir = temp_dir("modes");
    let (text, _) = torus_obj();
    std::fs::write(dir.join("torus.obj"), text).unwrap();
    let mut pictures = Vec::new();
    for mode in ["shade", "depth", "normal", "heat"] {
        let png = dir.join(format!("{mode}.png"));
        let out = run(bin()
            .current_dir(&dir)
            .args(["render", "torus.obj", "--width", "96", "--height", "64", "--mode", mode, "--out"])
            .arg(&png));
        assert!(stdout(&out).contains("primary rays"));
        let (w, h, rgb) = read_png(&png);
        assert_eq!((w, h), (96, 64));
        assert!(distinct_colors(&rgb) > 5, "{mode}: nearly uniform");
        pictures.push(rgb);
    }
    pictures.dedup();
    assert_eq!(pictures.len(), 4, "every mode draws a different picture");

    // An exported scene keeps its colours through the OBJ's materials: the Cornell box shows
    // clearly red and clearly green pixels.
    run(bin().current_dir(&dir).args(["export", "cornell", "--out", "cornell.obj"]));
    assert!(dir.join("cornell.mtl").is_file());
    let camera = ["--camera", "278,273,-800,278,273,0", "--fov", "39.3", "--light", "278,540,279.6"];
    run(bin()
        .current_dir(&dir)
        .args(["render", "cornell.obj", "--width", "64", "--height", "64", "--out", "c.png"])
        .args(camera));
    let (_, _, rgb) = read_png(&dir.join("c.png"));
    let red = rgb.chunks_exact(3).filter(|p| p[0] as i32 - p[1] as i32 > 50 && p[0] as i32 - p[2] as i32 > 50).count();
    let green =
        rgb.chunks_exact(3).filter(|p| p[1] as i32 - p[0] as i32 > 50 && p[1] as i32 - p[2] as i32 > 50).count();
    assert!(red > 50 && green > 50, "red {red}, green {green}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--instances` traces one instance per object through the library's two-level scene: the
/// picture must be the flat BVH's, pixel for pixel, in every mode that supports it (the Cornell box
/// has three objects, the field hundreds); the heat map, which counts the flat BVH's visits,
/// refuses it.
#[test]
fn instances_render_the_flat_bvh_picture() {
    let dir = temp_dir("instances");
    for (scene, mode) in [("cornell", "shade"), ("cornell", "normal"), ("field", "shade"), ("field", "depth")] {
        let mut pictures = Vec::new();
        for instances in [false, true] {
            let png = dir.join(format!("{scene}-{mode}-{instances}.png"));
            let mut cmd = bin();
            cmd.args(["render", "--builtin", scene, "--width", "80", "--height", "48", "--mode", mode, "--out"])
                .arg(&png);
            if instances {
                cmd.arg("--instances");
            }
            let out = run(&mut cmd);
            assert_eq!(stdout(&out).contains("instances in a two-level scene"), instances);
            pictures.push(read_png(&png).2);
        }
        assert!(distinct_colors(&pictures[0]) > 5, "{scene} {mode}: nearly uniform");
        assert!(pictures[0] == pictures[1], "{scene} {mode}: the instanced picture differs");
    }
    // The heat map of a two-level scene counts both levels' nodes: a picture of its own.
    let heat = dir.join("heat.png");
    let args = ["render", "--builtin", "field", "--width", "80", "--height", "48", "--mode", "heat", "--instances"];
    run(bin().args(args).arg("--out").arg(&heat));
    assert!(distinct_colors(&read_png(&heat).2) > 5, "the instanced heat map is nearly uniform");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A tessellated torus as OBJ text and as a mesh.
fn torus_obj() -> (String, TriMesh) {
    let (nu, nv) = (48u32, 24u32);
    let mut positions = Vec::new();
    let mut tris = Vec::new();
    for j in 0..nv {
        for i in 0..nu {
            let (a, b) = (i as f32 / nu as f32 * std::f32::consts::TAU, j as f32 / nv as f32 * std::f32::consts::TAU);
            let r = 1.0 + 0.35 * b.cos();
            positions.push(Vec3::new(r * a.cos(), 0.35 * b.sin(), r * a.sin()));
            let (i1, j1) = ((i + 1) % nu, (j + 1) % nv);
            tris.push([j * nu + i, j * nu + i1, j1 * nu + i1]);
            tris.push([j * nu + i, j1 * nu + i1, j1 * nu + i]);
        }
    }
    let mut text = String::new();
    for p in &positions {
        text += &format!("v {} {} {}\n", p.x, p.y, p.z);
    }
    for t in &tris {
        text += &format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1);
    }
    (text, TriMesh::new(positions, tris).unwrap())
}

/// Rays of every sort: through the hole, at the tube, grazing, from inside, with short `tmax`.
fn test_rays() -> Vec<Ray> {
    let mut rng = common::rng::Rng(12345);
    let mut rnd = move || rng.range(-1.0, 1.0);
    (0..4000)
        .map(|i| {
            let o = Vec3::new(rnd(), rnd(), rnd()) * 2.5;
            let target = Vec3::new(rnd(), rnd() * 0.4, rnd()) * 1.3;
            let ray = Ray::new(o, (target - o).normalize());
            match i % 4 {
                0 => ray.with_range(0.0, rnd().abs() * 3.0),
                1 => ray.with_range(0.5, f32::INFINITY),
                _ => ray,
            }
        })
        .collect()
}

fn ray_bytes(rays: &[Ray]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in rays {
        let (o, d) = (r.origin(), r.dir());
        for x in [o.x, o.y, o.z, r.tmin, d.x, d.y, d.z, r.tmax] {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    out
}

#[test]
fn trace_equals_the_library_batch_query() {
    let dir = temp_dir("trace");
    let (text, mesh) = torus_obj();
    std::fs::write(dir.join("torus.obj"), text).unwrap();
    let rays = test_rays();
    std::fs::write(dir.join("t.rays"), ray_bytes(&rays)).unwrap();

    for (flag, test) in [("watertight", TriangleTest::Watertight), ("moller-trumbore", TriangleTest::MollerTrumbore)] {
        let bvh = MeshBvh::build(&mesh, &BuildOptions { triangle_test: test, ..Default::default() });
        let mut expect = Vec::new();
        let hits = {
            let mut out = Vec::new();
            bvh.intersect_batch(&rays, &mut out, BatchOptions::default()).map(|_| out)
        }
        .unwrap();
        for h in &hits {
            let (t, prim, u, v) = h.map_or((f32::INFINITY, -1, 0.0, 0.0), |h| (h.t, h.triangle as i32, h.u, h.v));
            expect.extend_from_slice(&t.to_le_bytes());
            expect.extend_from_slice(&prim.to_le_bytes());
            expect.extend_from_slice(&u.to_le_bytes());
            expect.extend_from_slice(&v.to_le_bytes());
        }
        let n_hits = hits.iter().flatten().count();
        assert!(n_hits > 500 && n_hits < 3500, "the rays should both hit and miss: {n_hits}");

        let out = run(bin().current_dir(&dir).args([
            "trace",
            "torus.obj",
            "--rays",
            "t.rays",
            "--out",
            "t.hits",
            "--triangle-test",
            flag,
        ]));
        let text = stdout(&out);
        let query = text.lines().find(|l| l.starts_with("query:")).expect("a query line");
        assert!(query.contains("4,000 rays") && query.contains("Mrays/s"), "{query}");
        assert!(query.contains("best ") && query.contains(", median "), "{query}");
        assert_eq!(std::fs::read(dir.join("t.hits")).unwrap(), expect, "{flag}: hit files differ");

        run(bin().current_dir(&dir).args([
            "trace",
            "torus.obj",
            "--rays",
            "t.rays",
            "--out",
            "t.any",
            "--any",
            "--threads",
            "1",
            "--triangle-test",
            flag,
        ]));
        let expect: Vec<u8> = {
            let mut out = Vec::new();
            bvh.occluded_batch(&rays, &mut out, BatchOptions::default()).map(|_| out)
        }
        .unwrap()
        .into_iter()
        .map(u8::from)
        .collect();
        assert_eq!(std::fs::read(dir.join("t.any")).unwrap(), expect, "{flag}: occlusion files differ");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One triangle (0,0,0), (1,0,0), (0,1,0) as a buffer: 3 positions then 3 u16 indices.
fn triangle_buffer() -> Vec<u8> {
    let mut b = Vec::new();
    for x in [0.0f32, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0] {
        b.extend_from_slice(&x.to_le_bytes());
    }
    for i in [0u16, 1, 2] {
        b.extend_from_slice(&i.to_le_bytes());
    }
    b.extend_from_slice(&[0, 0]); // pad to 4 bytes
    b
}

/// A glTF document: the triangle under a parent node translated by (10, 0, 0) whose child is
/// scaled by 2 and rotated 90° about z, so the triangle's corners land at (10, 0, 0), (10, 2, 0)
/// and (8, 0, 0).
fn triangle_gltf(buffer_uri: Option<&str>, byte_length: usize) -> String {
    let uri = buffer_uri.map(|u| format!(r#""uri": "{u}", "#)).unwrap_or_default();
    let s = std::f32::consts::FRAC_1_SQRT_2;
    format!(
        r#"{{
  "asset": {{"version": "2.0"}},
  "scene": 0,
  "scenes": [{{"nodes": [0]}}],
  "nodes": [
    {{"translation": [10, 0, 0], "children": [1]}},
    {{"scale": [2, 2, 2], "rotation": [0, 0, {s}, {s}], "mesh": 0}}
  ],
  "meshes": [{{"primitives": [{{"attributes": {{"POSITION": 0}}, "indices": 1, "material": 0}}]}}],
  "materials": [{{"pbrMetallicRoughness": {{"baseColorFactor": [0.2, 0.4, 0.9, 1.0]}}}}],
  "accessors": [
    {{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3", "min": [0,0,0], "max": [1,1,0]}},
    {{"bufferView": 1, "componentType": 5123, "count": 3, "type": "SCALAR"}}
  ],
  "bufferViews": [
    {{"buffer": 0, "byteOffset": 0, "byteLength": 36}},
    {{"buffer": 0, "byteOffset": 36, "byteLength": 6}}
  ],
  "buffers": [{{{uri}"byteLength": {byte_length}}}]
}}"#
    )
}

#[test]
fn gltf_node_transforms_place_the_geometry() {
    let dir = temp_dir("gltf");
    let buf = triangle_buffer();
    let embedded = triangle_gltf(Some(&format!("data:application/octet-stream;base64,{}", base64(&buf))), buf.len());
    std::fs::write(dir.join("embedded.gltf"), embedded).unwrap();
    std::fs::write(dir.join("tri.bin"), &buf).unwrap();
    std::fs::write(dir.join("external.gltf"), triangle_gltf(Some("tri.bin"), buf.len())).unwrap();
    std::fs::write(dir.join("binary.glb"), glb(&triangle_gltf(None, buf.len()), &buf)).unwrap();

    // Rays straight down -z: inside the placed triangle, and where the untransformed one would be.
    let inside = Ray::new(Vec3A::new(9.5, 0.5, 5.0), -Vec3A::Z);
    let untransformed = Ray::new(Vec3A::new(0.25, 0.25, 5.0), -Vec3A::Z);
    let outside = Ray::new(Vec3A::new(10.5, 0.5, 5.0), -Vec3A::Z);
    std::fs::write(dir.join("probe.rays"), ray_bytes(&[inside, untransformed, outside])).unwrap();

    for file in ["embedded.gltf", "external.gltf", "binary.glb"] {
        let info = stdout(&run(bin().current_dir(&dir).args(["info", file])));
        let bounds = info.lines().find(|l| l.starts_with("bounds:")).unwrap();
        let nums: Vec<f32> = bounds
            .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e'))
            .filter_map(|s| s.parse().ok())
            .collect();
        let expect = [8.0, 0.0, 0.0, 10.0, 2.0, 0.0];
        assert_eq!(nums.len(), 6, "{bounds}");
        for (a, b) in nums.iter().zip(expect) {
            assert!((a - b).abs() < 1e-5, "{file}: {bounds}");
        }
        assert!(info.contains("triangles:          1"), "{info}");

        run(bin().current_dir(&dir).args(["trace", file, "--rays", "probe.rays", "--out", "probe.hits"]));
        let hits = std::fs::read(dir.join("probe.hits")).unwrap();
        let rec = |i: usize| {
            let f = |k: usize| f32::from_le_bytes(hits[16 * i + 4 * k..16 * i + 4 * k + 4].try_into().unwrap());
            (f(0), i32::from_le_bytes(hits[16 * i + 4..16 * i + 8].try_into().unwrap()))
        };
        assert_eq!(rec(0), (5.0, 0), "{file}: the placed triangle is hit at z = 0");
        assert_eq!(rec(1).1, -1, "{file}: nothing where the untransformed triangle would be");
        assert_eq!(rec(2).1, -1, "{file}: nothing beyond the rotated edge");

        let png = dir.join("tri.png");
        run(bin().current_dir(&dir).args(["render", file, "--width", "32", "--height", "32", "--out"]).arg(&png));
        let (_, _, rgb) = read_png(&png);
        // The material's blue base colour shows.
        assert!(rgb.chunks_exact(3).any(|p| p[2] > p[0] + 40), "{file}: no blue pixel");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_are_one_line_with_exit_code_1() {
    let dir = temp_dir("errors");
    let missing = dir.join("missing.obj");
    fails(bin().arg("info").arg(&missing), &["missing.obj", "cannot read"]);
    fails(bin().arg("render").arg(dir.join("missing.glb")), &["missing.glb", "cannot read"]);

    std::fs::write(dir.join("scene.xyz"), "hello").unwrap();
    fails(bin().current_dir(&dir).args(["info", "scene.xyz"]), &["scene.xyz", "unknown mesh format", ".gltf"]);
    std::fs::write(dir.join("noext"), "hello").unwrap();
    fails(bin().current_dir(&dir).args(["info", "noext"]), &["noext", "no file extension"]);

    std::fs::write(dir.join("bad.obj"), "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nv 1 2 zz\n").unwrap();
    fails(bin().current_dir(&dir).args(["info", "bad.obj"]), &["bad.obj", "line 5", "zz"]);
    std::fs::write(dir.join("range.obj"), "v 0 0 0\nv 1 0 0\nf 1 2 9\n").unwrap();
    fails(bin().current_dir(&dir).args(["render", "range.obj"]), &["range.obj", "line 3", "out of range"]);
    std::fs::write(dir.join("bad.ply"), "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n")
        .unwrap();
    fails(bin().current_dir(&dir).args(["info", "bad.ply"]), &["bad.ply"]);

    std::fs::write(dir.join("empty.obj"), "# nothing\nv 0 0 0\n").unwrap();
    fails(bin().current_dir(&dir).args(["info", "empty.obj"]), &["empty.obj", "no triangles"]);
    std::fs::write(dir.join("lines.gltf"), r#"{"asset": {"version": "2.0"}}"#).unwrap();
    fails(bin().current_dir(&dir).args(["info", "lines.gltf"]), &["lines.gltf", "no triangles"]);

    // glTF: bad JSON (line and column), a missing attribute (the element), an accessor beyond its
    // buffer, an index out of range.
    std::fs::write(dir.join("syntax.gltf"), "{\n  \"asset\": {\"version\": \"2.0\"},\n  oops\n}").unwrap();
    fails(bin().current_dir(&dir).args(["info", "syntax.gltf"]), &["syntax.gltf", "line 3"]);
    let buf = triangle_buffer();
    let data = format!("data:application/octet-stream;base64,{}", base64(&buf));
    let good = triangle_gltf(Some(&data), buf.len());
    std::fs::write(dir.join("nopos.gltf"), good.replace(r#""POSITION": 0"#, r#""NORMAL": 0"#)).unwrap();
    fails(bin().current_dir(&dir).args(["info", "nopos.gltf"]), &["nopos.gltf", "meshes[0].primitives[0]", "POSITION"]);
    std::fs::write(
        dir.join("count.gltf"),
        good.replace(r#""count": 3, "type": "VEC3""#, r#""count": 300, "type": "VEC3""#),
    )
    .unwrap();
    fails(bin().current_dir(&dir).args(["info", "count.gltf"]), &["count.gltf", "POSITION accessor 0", "do not fit"]);
    let mut bad_index = buf.clone();
    bad_index[38..40].copy_from_slice(&7u16.to_le_bytes());
    let data = format!("data:application/octet-stream;base64,{}", base64(&bad_index));
    std::fs::write(dir.join("index.gltf"), triangle_gltf(Some(&data), buf.len())).unwrap();
    fails(bin().current_dir(&dir).args(["info", "index.gltf"]), &["index.gltf", "index 7", "out of range"]);
    std::fs::write(dir.join("short.gltf"), triangle_gltf(Some("nothere.bin"), buf.len())).unwrap();
    fails(bin().current_dir(&dir).args(["info", "short.gltf"]), &["short.gltf", "buffer 0", "nothere.bin"]);
    std::fs::write(dir.join("trunc.glb"), &glb(&triangle_gltf(None, buf.len()), &buf)[..60]).unwrap();
    fails(bin().current_dir(&dir).args(["info", "trunc.glb"]), &["trunc.glb"]);

    // Ray files: missing, or not a whole number of records.
    let (text, _) = torus_obj();
    std::fs::write(dir.join("torus.obj"), text).unwrap();
    fails(bin().current_dir(&dir).args(["trace", "torus.obj", "--rays", "none.rays", "--out", "x"]), &["none.rays"]);
    std::fs::write(dir.join("odd.rays"), [0u8; 33]).unwrap();
    fails(
        bin().current_dir(&dir).args(["trace", "torus.obj", "--rays", "odd.rays", "--out", "x"]),
        &["odd.rays", "33 bytes"],
    );
    // An output that cannot be written.
    // A ray the library refuses (NaN origin) is named by its record.
    let mut nan = Vec::new();
    for r in [[0.0, 0.0, 5.0, 0.0, 0.0, 0.0, -1.0, 100.0], [f32::NAN, 0.0, 5.0, 0.0, 0.0, 0.0, -1.0, 100.0]] {
        nan.extend(r.iter().flat_map(|f: &f32| f.to_le_bytes()));
    }
    std::fs::write(dir.join("nan.rays"), nan).unwrap();
    fails(
        bin().current_dir(&dir).args(["trace", "torus.obj", "--rays", "nan.rays", "--out", "nan.hits"]),
        &["nan.rays", "ray 1", "NaN"],
    );
    assert!(!dir.join("nan.hits").exists(), "nothing is written for a refused file");
    std::fs::write(dir.join("ok.rays"), [0u8; 32]).unwrap();
    fails(
        bin().current_dir(&dir).args(["trace", "torus.obj", "--rays", "ok.rays", "--out", "no/such/dir/x"]),
        &["no/such/dir/x"],
    );

    fails(
        bin().current_dir(&dir).args(["render", "torus.obj", "--out", "missing/dir/x.png"]),
        &["missing/dir/x.png", "does not exist"],
    );

    // Usage errors are clap's: exit code 2.
    let out = bin().args(["render", "--mode", "sparkle", "x.obj"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bin().args(["trace", "x.obj"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn help_describes_every_flag() {
    let cases: [(&[&str], &[&str]); 6] = [
        (&["--help"], &["render", "trace", "bench", "info", "export", "--width", "--height", "--out", "--threads"]),
        (
            &["render", "--help"],
            &[
                "--width",
                "--height",
                "--camera",
                "--fov",
                "--up",
                "--view",
                "--light",
                "--mode",
                "heat",
                "depth",
                "normal",
                "shade",
                "--supersample",
                "--out",
                "--threads",
                "--triangle-test",
                "--builtin",
            ],
        ),
        (&["trace", "--help"], &["--rays", "--out", "--any", "--threads", "prim", "tmax"]),
        (
            &["bench", "--help"],
            &["--kind", "primary", "random", "diffuse", "shadow", "all", "--count", "--passes", "--threads"],
        ),
        (&["info", "--help"], &["FILE", "--builtin", "--threads", "--builds", "--rebuilds"]),
        (&["export", "--help"], &["cornell", "field", "--out"]),
    ];
    for (args, needles) in cases {
        let text = stdout(&run(bin().args(args)));
        for n in needles {
            assert!(text.contains(n), "`slabtree {}` does not mention `{n}`:\n{text}", args.join(" "));
        }
    }
}

#[test]
fn bench_and_info_on_a_builtin_scene() {
    let text = stdout(&run(bin().args(["bench", "--builtin", "cornell", "--count", "4096", "--passes", "3"])));
    for kind in ["primary", "random", "diffuse", "shadow"] {
        let line = text.lines().find(|l| l.starts_with(kind)).unwrap_or_else(|| panic!("no {kind} line:\n{text}"));
        // `best X Mrays/s, median Y Mrays/s`: the best pass is at least as fast as the median.
        let rate = |key: &str| -> f64 {
            let rest = &line[line.find(key).unwrap_or_else(|| panic!("no `{key}`: {line}")) + key.len()..];
            rest.split_whitespace().next().unwrap().parse().unwrap()
        };
        let (best, median) = (rate("best "), rate("median "));
        assert!(best > 0.0 && median > 0.0 && best >= median, "{line}");
    }
    let text = stdout(&run(bin().args(["info", "--builtin", "cornell"])));
    for needle in ["triangles:          32", "SAH cost", "nodes", "depth", "bytes per triangle", "build time"] {
        assert!(text.contains(needle), "missing `{needle}`:\n{text}");
    }
    // Repeated builds: best and median of the build and of each phase, the best never above the
    // median.
    let text = stdout(&run(bin().args(["info", "--builtin", "cornell", "--builds", "3"])));
    let line = text.lines().find(|l| l.starts_with("build time:")).unwrap_or_else(|| panic!("no build time:\n{text}"));
    assert!(line.contains("best / median of 3 builds"), "{line}");
    let phases = text.lines().find(|l| l.trim_start().starts_with("of which:")).expect("the phases line");
    let pairs: Vec<&str> = line.split(',').chain(phases.split(',')).filter(|p| p.contains(" ms / ")).collect();
    assert_eq!(pairs.len(), 5, "the build and its four phases:\n{text}");
    for pair in pairs {
        let ms: Vec<f64> = pair.split(" ms").filter_map(|p| p.rsplit(' ').next()?.parse().ok()).collect();
        assert!(ms.len() == 2 && ms[0] <= ms[1], "{pair}");
    }
    let zero = bin().args(["info", "--builtin", "cornell", "--builds", "0"]).output().expect("the binary runs");
    assert!(!zero.status.success() && String::from_utf8_lossy(&zero.stderr).contains("--builds"), "{zero:?}");
    // Rebuilds in place: their own line, best never above the median; none without the flag.
    let text = stdout(&run(bin().args(["info", "--builtin", "cornell", "--rebuilds", "3", "--build-quality", "low"])));
    let line = text.lines().find(|l| l.starts_with("rebuild time:")).unwrap_or_else(|| panic!("no rebuilds:\n{text}"));
    assert!(line.contains("best / median of 3 rebuilds in place"), "{line}");
    let ms: Vec<f64> = line.split(" ms").filter_map(|p| p.rsplit(' ').next()?.parse().ok()).collect();
    assert!(ms.len() == 2 && ms[0] <= ms[1], "{line}");
    assert!(!stdout(&run(bin().args(["info", "--builtin", "cornell"]))).contains("rebuild"));
}

/// Every shared ray set through `slabtree trace`, against Embree's hits: hit or miss the same, t
/// within 1e-4 relative, the same triangle unless the two share a vertex or ours is hit at the
/// same t (ties); 99.99% of the rays must agree. `trace --single-rays` (no packets) must write
/// the same bytes.
#[cfg(feature = "shared-data")]
#[test]
fn trace_round_trips_the_shared_ray_files() {
    let scenes = std::env::var_os("SLABTREE_SCENES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/scenes"));
    assert!(scenes.join("rays").is_dir(), "no shared scenes at {}", scenes.display());
    let dir = temp_dir("shared");
    let mut sets: Vec<PathBuf> = std::fs::read_dir(scenes.join("rays"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rays"))
        .collect();
    sets.sort();
    for rays_path in sets {
        let stem = rays_path.file_stem().unwrap().to_string_lossy().into_owned();
        let (scene, kind) = stem.split_once('.').unwrap();
        let mesh_path =
            ["obj", "ply"].iter().map(|e| scenes.join(format!("{scene}.{e}"))).find(|p| p.is_file()).unwrap();
        let mesh = slabtree::load_mesh(&mesh_path).unwrap();
        let rays: Vec<Ray> = std::fs::read(&rays_path)
            .unwrap()
            .chunks_exact(32)
            .map(|r| {
                let f = |i: usize| f32::from_le_bytes(r[4 * i..4 * i + 4].try_into().unwrap());
                Ray::new(Vec3::new(f(0), f(1), f(2)), Vec3::new(f(4), f(5), f(6))).with_range(f(3), f(7))
            })
            .collect();
        let any = kind == "shadow";
        let out = dir.join(format!("{stem}.out"));
        let mut cmd = bin();
        cmd.arg("trace").arg(&mesh_path).arg("--rays").arg(&rays_path).arg("--out").arg(&out);
        if any {
            cmd.arg("--any");
        }
        let text = stdout(&run(&mut cmd));
        let ours = std::fs::read(&out).unwrap();
        // The same rays one by one (`--single-rays`): the same bytes, answer for answer.
        let single = dir.join(format!("{stem}.single.out"));
        let mut cmd = bin();
        cmd.arg("trace").arg(&mesh_path).arg("--rays").arg(&rays_path).arg("--out").arg(&single).arg("--single-rays");
        if any {
            cmd.arg("--any");
        }
        run(&mut cmd);
        assert!(std::fs::read(&single).unwrap() == ours, "{stem}: --single-rays wrote other answers");
        let (mut ties, mut worst_t) = (0, 0.0f32);
        let (agree, n) = if any {
            let theirs = std::fs::read(scenes.join(format!("rays/{scene}.shadow.occluded"))).unwrap();
            assert_eq!(ours.len(), theirs.len());
            (ours.iter().zip(&theirs).filter(|(a, b)| a == b).count(), ours.len())
        } else {
            let theirs = std::fs::read(scenes.join(format!("rays/{stem}.hits"))).unwrap();
            assert_eq!(ours.len(), theirs.len());
            let rec = |b: &[u8], i: usize| {
                let f = |k: usize| f32::from_le_bytes(b[16 * i + 4 * k..16 * i + 4 * k + 4].try_into().unwrap());
                (f(0), i32::from_le_bytes(b[16 * i + 4..16 * i + 8].try_into().unwrap()))
            };
            let mut agree = 0;
            for (i, ray) in rays.iter().enumerate() {
                let ((ta, pa), (tb, pb)) = (rec(&ours, i), rec(&theirs, i));
                let ok = match (pa >= 0, pb >= 0) {
                    (false, false) => ta == f32::INFINITY,
                    (true, true) => {
                        worst_t = worst_t.max((ta - tb).abs() / tb.abs());
                        let tie = pa != pb && is_tie(&mesh, pa as u32, pb as u32, ray, tb);
                        ties += usize::from(tie);
                        (ta - tb).abs() <= 1e-4 * tb.abs() && (pa == pb || tie)
                    }
                    _ => false,
                };
                agree += usize::from(ok);
            }
            (agree, rays.len())
        };
        let pct = 100.0 * agree as f64 / n as f64;
        println!(
            "{stem}: {agree}/{n} agree ({pct:.4}%, {ties} ties, worst t {worst_t:.1e} relative); {}",
            text.lines().find(|l| l.starts_with("query")).unwrap()
        );
        assert!(pct >= 99.99, "{stem}: only {pct:.4}% agree");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two triangles tie on a ray when they share a vertex or ours is hit at Embree's t (in f64).
#[cfg(feature = "shared-data")]
fn is_tie(mesh: &TriMesh, ours: u32, theirs: u32, ray: &Ray, t: f32) -> bool {
    let (a, b) = (mesh.triangle(ours as usize), mesh.triangle(theirs as usize));
    if a.iter().any(|p| b.contains(p)) {
        return true;
    }
    let (o, d) = (Vec3::from(ray.origin()).as_dvec3(), Vec3::from(ray.dir()).as_dvec3());
    let Some((t64, u, v)) = common::triangle::mt64(o, d, a.map(|v| v.as_dvec3())) else { return false };
    let eps = 1e-6;
    u >= -eps && v >= -eps && u + v <= 1.0 + eps && (t64 - t as f64).abs() <= 1e-4 * t as f64
}

/// Found by the `load_gltf` fuzz target (crash 6c322d77): a glTF whose primitive's POSITION
/// names an accessor that does not exist makes the `gltf-json` crate's validation index out of
/// bounds (gltf-json 1.4.1, src/mesh.rs:151) and panic, so `slabtree info` ends with "internal
/// error (a bug in slabtree ...)" instead of a one-line "invalid glTF" error. The library's
/// reader (`src/io/gltf.rs`) now checks every attribute's accessor before gltf-json validates.
#[test]
fn gltf_position_accessor_out_of_range_is_an_error_not_a_panic() {
    let doc = r#"{"asset":{"version":"2.0"},"scene":0,"scenes":[{"nodes":[0]}],"nodes":[{"mesh":0}],
"meshes":[{"primitives":[{"attributes":{"POSITION":5}}]}],
"accessors":[{"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]}]}"#;
    let path = std::env::temp_dir().join(format!("slabtree-regression-{}.gltf", std::process::id()));
    std::fs::write(&path, doc).unwrap();
    let out = bin().arg("info").arg(&path).output().unwrap();
    let _ = std::fs::remove_file(&path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(!stderr.contains("internal error"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// `--build-quality low` builds the linear BVH and `high` the one with spatial splits (as `info`
/// says), whose answers are the default build's; an unknown quality is refused by name.
#[test]
fn build_qualities_answer_as_medium() {
    let dir = temp_dir("quality");
    let (text, _) = torus_obj();
    std::fs::write(dir.join("torus.obj"), text).unwrap();
    let mut rng = common::rng::Rng(8);
    let rays: Vec<Ray> = (0..500)
        .map(|_| {
            let origin = rng.on_sphere() * 4.0;
            Ray::new(origin, rng.in_cube(1.3) - origin)
        })
        .collect();
    std::fs::write(dir.join("r.rays"), ray_bytes(&rays)).unwrap();
    let mut answers = Vec::new();
    for quality in ["low", "medium", "high"] {
        let info = stdout(&run(bin().current_dir(&dir).args(["info", "torus.obj", "--build-quality", quality])));
        assert!(info.contains(&format!("build quality:      {quality}")), "{info}");
        let out = format!("{quality}.hits");
        run(bin().current_dir(&dir).args([
            "trace",
            "torus.obj",
            "--rays",
            "r.rays",
            "--out",
            &out,
            "--build-quality",
            quality,
        ]));
        answers.push(std::fs::read(dir.join(&out)).unwrap());
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[2], answers[1]);
    let hits = answers[0].chunks(16).filter(|r| f32::from_le_bytes(r[..4].try_into().unwrap()).is_finite()).count();
    assert!(hits > 100, "only {hits} of the rays hit");
    // A usage error, as clap reports them: exit code 2, naming the value and the choices.
    let out = bin().current_dir(&dir).args(["info", "torus.obj", "--build-quality", "best"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("'best'") && err.contains("low, medium, high"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
