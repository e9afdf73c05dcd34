//! The `slabtree` command: render, trace, bench, info and export, and the default render of a
//! built-in scene.
//!
//! | file | concern |
//! |---|---|
//! | `args` | the command line (clap) and its help |
//! | `error` | one-line errors |
//! | `scene` | what the commands work on: a mesh, its colours, a suggested view |
//! | `load` | loading a mesh file or a built-in scene, OBJ material colours |
//! | `generate` | the built-in scenes, and writing OBJ files |
//! | `gltf` | glTF 2.0 loading |
//! | `camera` | the pinhole camera and the framing view |
//! | `render` | the renderer and PNG output |
//! | `trace` | ray and hit files |
//! | `bench` | generated ray kinds and Mrays/s |
//! | `info` | BVH size and quality |
//! | `progress` | progress bars, number formats, threads |
//! | `rng` | a seedable random number generator |

pub mod args;
pub mod bench;
pub mod camera;
pub mod error;
pub mod generate;
pub mod gltf;
pub mod info;
pub mod load;
pub mod progress;
pub mod render;
pub mod rng;
pub mod scene;
pub mod trace;
pub mod tracer;

use std::path::Path;
use std::time::Instant;

use clap::Parser;

use args::{Builtin, BvhArgs, Cli, Command, ExportArgs, Input, Mode, QualityArg, RenderArgs, TestArg};
use camera::Camera;
use error::CliResult;
use progress::{count, ms};
use tracer::Tracer;

/// Parses the command line and runs the command. Usage errors exit with code 2 (clap's), other
/// errors print one line and return `Err`.
pub fn run() -> CliResult<()> {
    let cli = Cli::parse();
    progress::check_simd_override()?;
    match cli.command {
        None => {
            let d = cli.default;
            render_command(&RenderArgs {
                input: Input { file: None, builtin: Some(Builtin::Field) },
                width: d.width,
                height: d.height,
                camera: None,
                fov: None,
                up: glam::Vec3::Y,
                view: glam::Vec3::new(0.55, 0.45, 1.0),
                light: None,
                mode: Mode::Shade,
                supersample: 1,
                ao: 0,
                out: d.out,
                instances: false,
                bvh: BvhArgs {
                    threads: d.threads,
                    triangle_test: TestArg::Watertight,
                    build_quality: QualityArg::Medium,
                },
            })
        }
        Some(Command::Render(a)) => render_command(&a),
        Some(Command::Trace(a)) => trace::run(&a),
        Some(Command::Bench(a)) => bench::run(&a),
        Some(Command::Info(a)) => info::run(&a),
        Some(Command::Export(a)) => export_command(&a),
    }
}

/// `slabtree render` (and the default render).
fn render_command(a: &RenderArgs) -> CliResult<()> {
    let threads = progress::init_threads(a.bvh.threads)?;
    check_output(&a.out)?;
    let start = Instant::now();
    let scene = load::load(&a.input)?;
    let load = start.elapsed();
    let verb = if a.input.builtin.is_some() { "generated" } else { "loaded" };
    let objects =
        if scene.objects.len() > 1 { format!("{} objects, ", count(scene.objects.len())) } else { String::new() };
    println!("scene: {}: {objects}{} triangles ({verb} in {})", scene.name, count(scene.mesh.len()), ms(load));

    let options = progress::build_options(&a.bvh);
    let start = Instant::now();
    let what = if a.instances { "instances" } else { "the BVH" };
    let tracer = progress::spin(&format!("building {what} of {} triangles", count(scene.mesh.len())), || {
        if a.instances { Tracer::instances(&scene, &options) } else { Tracer::flat(&scene, &options) }
    });
    let build = start.elapsed();
    println!("BVH: built in {} ({}): {}", ms(build), progress::threads(threads), tracer.describe());

    let aspect = a.width as f32 / a.height as f32;
    let camera = match (a.camera, scene.view) {
        (Some((eye, at)), view) => {
            Camera::look_at(eye, at, a.up, a.fov.or(view.map(|v| v.fov)).unwrap_or(40.0), aspect)?
        }
        (None, Some(v)) => Camera::look_at(v.eye, v.at, a.up, a.fov.unwrap_or(v.fov), aspect)?,
        (None, None) => {
            let b = scene.mesh.bounds().expect("the mesh is not empty");
            Camera::framing(&b, scene.mesh.positions().iter().copied(), a.view, a.up, a.fov.unwrap_or(40.0), aspect)?
        }
    };
    let light = a.light.or(scene.light).unwrap_or_else(|| render::default_light(&scene, &camera));
    let settings = render::Settings {
        width: a.width,
        height: a.height,
        camera,
        light,
        mode: a.mode,
        supersample: a.supersample,
        ao: a.ao,
    };
    let start = Instant::now();
    let (rgb, st) = render::render(&tracer, &scene, &settings)?;
    let total = start.elapsed();
    render::write_png(&a.out, a.width, a.height, &rgb)?;

    let samples = if a.supersample > 1 { format!(", {0}×{0} rays per pixel", a.supersample) } else { String::new() };
    println!("render: {}×{} {:?}{samples} in {}", a.width, a.height, a.mode, ms(total));
    print_rays("primary rays:", st.primary_rays, st.primary_time, st.primary_hits, "hit");
    if a.mode == Mode::Shade {
        print_rays("shadow rays: ", st.shadow_rays, st.shadow_time, st.shadow_blocked, "blocked");
    }
    if a.mode == Mode::Shade && a.ao > 0 {
        print_rays("ambient occlusion rays:", st.ao_rays, st.ao_time, st.ao_blocked, "blocked");
    }
    if a.mode == Mode::Heat {
        println!(
            "nodes visited per ray: mean {:.1}, max {}; white is {:.0} or more per pixel",
            st.mean_visits, st.max_visits, st.white_visits
        );
    }
    println!("wrote {}", a.out.display());
    Ok(())
}

/// One line of a render's ray statistics: count, time, throughput and the share of them that
/// were `marked` (hit, blocked).
fn print_rays(label: &str, rays: usize, time: std::time::Duration, marked: usize, what: &str) {
    println!(
        "{label} {} in {}: {:.2} Mrays/s ({:.1}% {what})",
        count(rays),
        ms(time),
        progress::mrays(rays, time),
        100.0 * marked as f64 / rays.max(1) as f64
    );
}

/// Fails early, before a long load, build or render, when an output file cannot be created: its
/// folder does not exist, or it is a folder. Nothing is written yet.
pub fn check_output(path: &Path) -> CliResult<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if path.is_dir() {
        return Err(error::CliError::new(format!("{}: cannot write the file: it is a folder", path.display())));
    }
    if !parent.is_dir() {
        return Err(error::CliError::new(format!(
            "{}: cannot create the file: the folder {} does not exist",
            path.display(),
            parent.display()
        )));
    }
    Ok(())
}

/// `slabtree export`.
fn export_command(a: &ExportArgs) -> CliResult<()> {
    let scene = generate::builtin(a.scene);
    generate::write_obj(&scene, &a.out)?;
    let mtl = if scene.colors.is_some() {
        format!(" and {}", Path::new(&a.out).with_extension("mtl").display())
    } else {
        String::new()
    };
    println!("wrote {}{mtl}: {} triangles", a.out.display(), count(scene.mesh.len()));
    Ok(())
}
