//! The command line: every command, flag and default, with the help text `--help` prints.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use glam::Vec3;

/// Ray queries on triangle meshes with an 8-wide SIMD BVH.
///
/// With no command, renders a built-in procedural scene (a field of generated objects, about 1.4
/// million triangles) to render.png and prints the scene size, the BVH build time and the Mrays/s
/// of primary and shadow rays.
#[derive(Debug, Parser)]
#[command(name = "slabtree", version, args_conflicts_with_subcommands = true, after_help = EXAMPLES)]
pub struct Cli {
    /// What to do; none renders the built-in scene.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Options of the default render (no command).
    #[command(flatten)]
    pub default: DefaultArgs,
}

const EXAMPLES: &str = "\
Examples:
  slabtree                                        render the built-in scene to render.png
  slabtree render bunny.obj --mode heat --out heat.png
  slabtree trace bunny.obj --rays bunny.primary.rays --out bunny.hits
  slabtree bench dragon.ply --kind all --threads 1
  slabtree info scene.glb";

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render a mesh (OBJ, PLY, glTF) or a built-in scene to a PNG image.
    Render(RenderArgs),
    /// Cast every ray of a ray file and write a hit file (the shared scenes' binary formats).
    Trace(TraceArgs),
    /// Generate rays of each kind in code and print Mrays/s per kind.
    Bench(BenchArgs),
    /// Print the BVH's size and quality: triangles, SAH cost, nodes, depth, bytes, build time.
    Info(InfoArgs),
    /// Write a built-in scene to a Wavefront OBJ file (with an .mtl file beside it for colours).
    Export(ExportArgs),
}

/// The mesh a command works on: a file, or a scene generated in code.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct Input {
    /// Mesh file: Wavefront .obj, .ply (ASCII or binary), or glTF 2.0 (.gltf or .glb; node
    /// transforms are applied).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// Use a scene generated in code instead of a file.
    #[arg(long, value_name = "NAME")]
    pub builtin: Option<Builtin>,
}

/// Scenes generated in code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Builtin {
    /// A field of generated objects on a ground plane around a torus knot (about 1.4M triangles).
    Field,
    /// The Cornell box: a room with a red and a green wall and two blocks (32 triangles).
    Cornell,
}

/// Flags every command that builds a BVH shares.
#[derive(Debug, Args)]
pub struct BvhArgs {
    /// Worker threads for the build and the queries (default: one per core).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,

    /// Ray–triangle test. `watertight` never lets a ray slip between triangles that share an edge
    /// (like Embree's robust mode); `moller-trumbore` is a little faster.
    #[arg(long = "triangle-test", value_name = "TEST", default_value = "watertight")]
    pub triangle_test: TestArg,

    /// How much work the build puts into the tree: `low` builds several times faster for a tree
    /// whose rays take longer (for meshes rebuilt every frame); `medium` is the binned SAH.
    #[arg(long = "build-quality", value_name = "QUALITY", default_value = "medium")]
    pub build_quality: QualityArg,
}

/// The build quality, as named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum QualityArg {
    /// A linear (Morton) BVH, for meshes rebuilt every frame.
    Low,
    /// The binned SAH, rotated: the default.
    Medium,
    /// The binned SAH with spatial splits, rotated: for static scenes, above all interiors.
    High,
}

/// The ray–triangle test, as named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TestArg {
    /// Woop–Benthin–Wald watertight test.
    Watertight,
    /// Möller–Trumbore.
    MollerTrumbore,
}

/// Options of the default render (`slabtree` with no command).
#[derive(Debug, Args)]
pub struct DefaultArgs {
    /// Image width in pixels.
    #[arg(long, value_name = "W", default_value_t = 1280, value_parser = clap::value_parser!(u32).range(1..=16384))]
    pub width: u32,

    /// Image height in pixels.
    #[arg(long, value_name = "H", default_value_t = 720, value_parser = clap::value_parser!(u32).range(1..=16384))]
    pub height: u32,

    /// Output PNG file.
    #[arg(long, value_name = "PNG", default_value = "render.png")]
    pub out: PathBuf,

    /// Worker threads for the build and the render (default: one per core).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
}

/// `slabtree render`.
#[derive(Debug, Args)]
#[command(after_help = "\
The default camera looks at the centre of the model's bounding box from the --view direction, just \
far enough back that every vertex is in the picture. The default light sits above, to the \
left of and in front of the model, as seen from the camera.")]
pub struct RenderArgs {
    #[command(flatten)]
    pub input: Input,

    /// Image width in pixels.
    #[arg(long, value_name = "W", default_value_t = 1280, value_parser = clap::value_parser!(u32).range(1..=16384))]
    pub width: u32,

    /// Image height in pixels.
    #[arg(long, value_name = "H", default_value_t = 720, value_parser = clap::value_parser!(u32).range(1..=16384))]
    pub height: u32,

    /// Camera position and the point it looks at: six numbers `EX,EY,EZ,AX,AY,AZ` (default: a
    /// view that frames the whole model).
    #[arg(long, value_name = "EYE,AT", value_parser = parse_camera, allow_hyphen_values = true)]
    pub camera: Option<(Vec3, Vec3)>,

    /// Vertical field of view in degrees [default: 40, or the built-in scene's own].
    #[arg(long, value_name = "DEG", value_parser = parse_fov)]
    pub fov: Option<f32>,

    /// The camera's up direction `X,Y,Z` (use 0,0,1 for Z-up models).
    #[arg(long, value_name = "X,Y,Z", default_value = "0,1,0", value_parser = parse_vec3, allow_hyphen_values = true)]
    pub up: Vec3,

    /// Direction from the model's centre towards the default camera `X,Y,Z` (ignored with
    /// --camera).
    #[arg(long, value_name = "X,Y,Z", default_value = "0.55,0.45,1", value_parser = parse_vec3, allow_hyphen_values = true)]
    pub view: Vec3,

    /// Point light position `X,Y,Z` for the shade mode (default: above, left and in front).
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_vec3, allow_hyphen_values = true)]
    pub light: Option<Vec3>,

    /// What a pixel shows: `shade` (diffuse light with shadows), `depth` (distance),
    /// `normal` (surface orientation) or `heat` (BVH nodes visited: the cost of the pixel).
    #[arg(long, value_name = "MODE", default_value = "shade")]
    pub mode: Mode,

    /// Supersampling: K×K rays per pixel, for smoother edges.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub supersample: u32,

    /// Ambient occlusion in the shade mode: N short any-hit rays per hit darken the sky light in
    /// creases and corners (0: off).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=256))]
    pub ao: u32,

    /// Trace one instance per object (a generated object, a glTF mesh instance) through the
    /// library's two-level scene, instead of one BVH over every triangle (`--mode heat` then
    /// counts the nodes of both levels).
    #[arg(long)]
    pub instances: bool,

    /// Output PNG file.
    #[arg(long, value_name = "PNG", default_value = "render.png")]
    pub out: PathBuf,

    #[command(flatten)]
    pub bvh: BvhArgs,
}

/// What a rendered pixel shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Diffuse (Lambert) light from a point light with hard shadows, plus sky light.
    Shade,
    /// Distance along the ray: near is bright, far is dark.
    Depth,
    /// The geometric normal, facing the camera, as a colour.
    Normal,
    /// Wide BVH nodes visited per pixel, dark blue (few) through green and red to white (the
    /// most expensive 0.1% of pixels).
    Heat,
}

/// `slabtree trace`.
#[derive(Debug, Args)]
#[command(after_help = "\
File formats (raw little-endian, no header; see the shared scenes' README):
  rays  N records of 32 bytes: ox oy oz tmin dx dy dz tmax (8 × f32)
  hits  N records of 16 bytes: t (f32), prim (i32), u (f32), v (f32); a miss is t = +inf, prim = -1,
        u = v = 0. The hit point is (1-u-v)·v0 + u·v1 + v·v2; prim is the triangle in file order.
  --any N bytes: 1 if the ray hits something with tmin <= t <= tmax, else 0.

With numpy: np.fromfile('x.hits', dtype=[('t','<f4'),('prim','<i4'),('u','<f4'),('v','<f4')])")]
pub struct TraceArgs {
    #[command(flatten)]
    pub input: Input,

    /// Ray file: N records of 8 little-endian f32 (ox oy oz tmin dx dy dz tmax).
    #[arg(long, value_name = "RAYS")]
    pub rays: PathBuf,

    /// Output file: N hit records of 16 bytes (t, prim, u, v), or N bytes with --any.
    #[arg(long, value_name = "HITS")]
    pub out: PathBuf,

    /// Any-hit (occlusion) queries: write one byte per ray, 1 when something is hit.
    #[arg(long)]
    pub any: bool,

    /// Trace every ray alone, never as packets (`BatchOptions::packets` off). By default
    /// coherent runs of rays go as packets where they are timed faster, the rest one by one.
    /// The answers are the same.
    #[arg(long)]
    pub single_rays: bool,

    /// Timed passes over the rays after one warm-up pass (whose answers are written); prints
    /// the best and the median rate.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub passes: u32,

    #[command(flatten)]
    pub bvh: BvhArgs,
}

/// `slabtree bench`.
#[derive(Debug, Args)]
#[command(after_help = "\
Ray kinds, generated as for the shared scenes: primary rays from the default camera (a square image),
random rays from a sphere around the model towards random points in its bounds, diffuse rays
(cosine-weighted) from the primary hits, and shadow rays (any hit) from the primary hits to a light
above the model. Each kind runs once to warm up, then --passes timed times; the best and the median
rates are printed.")]
pub struct BenchArgs {
    #[command(flatten)]
    pub input: Input,

    /// Which rays to cast.
    #[arg(long, value_name = "KIND", default_value = "all")]
    pub kind: Kind,

    /// Rays per kind (primary rays: rounded to a square image; diffuse and shadow rays: one per
    /// primary hit).
    #[arg(long, value_name = "N", default_value_t = 1 << 20, value_parser = clap::value_parser!(u32).range(1..=(1 << 26)))]
    pub count: u32,

    /// Timed passes per kind after one warm-up pass; the best and the median are reported.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub passes: u32,

    #[command(flatten)]
    pub bvh: BvhArgs,
}

/// Ray kinds of `slabtree bench`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// Camera rays: coherent, closest hit.
    Primary,
    /// Rays from a sphere around the model to random points inside it: incoherent, closest hit.
    Random,
    /// Cosine-weighted bounce rays from the primary hits: closest hit.
    Diffuse,
    /// Rays from the primary hits to a light: any hit (occlusion).
    Shadow,
    /// All four.
    All,
}

/// `slabtree info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    pub input: Input,

    #[command(flatten)]
    pub bvh: BvhArgs,

    /// Builds the BVH this many times and prints the best and the median time of the build and
    /// of each of its phases. The first build of a process also pays for fresh memory, which
    /// the kernel zeroes page by page; later builds show the steady state.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub builds: u32,

    /// Then builds it again this many times in place, as a mesh rebuilt every frame is
    /// (`MeshBvh::rebuild`, in the memory the tree already holds), and prints the best and the
    /// median time of those rebuilds.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub rebuilds: u32,
}

/// `slabtree export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The built-in scene to write.
    #[arg(value_name = "NAME")]
    pub scene: Builtin,

    /// Output .obj file; an .mtl file with the same stem is written beside it.
    #[arg(long, value_name = "OBJ")]
    pub out: PathBuf,
}

/// Parses `X,Y,Z`.
pub fn parse_vec3(s: &str) -> Result<Vec3, String> {
    let v = parse_numbers(s, 3)?;
    Ok(Vec3::new(v[0], v[1], v[2]))
}

/// Parses `EX,EY,EZ,AX,AY,AZ`.
fn parse_camera(s: &str) -> Result<(Vec3, Vec3), String> {
    let v = parse_numbers(s, 6)?;
    let (eye, at) = (Vec3::new(v[0], v[1], v[2]), Vec3::new(v[3], v[4], v[5]));
    if eye == at {
        return Err("the camera position and the point it looks at are the same".into());
    }
    Ok((eye, at))
}

fn parse_fov(s: &str) -> Result<f32, String> {
    let f: f32 = s.trim().parse().map_err(|_| format!("`{s}` is not a number"))?;
    if f > 0.0 && f < 180.0 { Ok(f) } else { Err("the field of view must be between 0 and 180 degrees".into()) }
}

/// `n` finite numbers separated by commas.
fn parse_numbers(s: &str, n: usize) -> Result<Vec<f32>, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != n {
        return Err(format!("expected {n} comma-separated numbers, got {}", parts.len()));
    }
    parts
        .iter()
        .map(|p| match p.parse::<f32>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(format!("`{p}` is not a finite number")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_vec3("1, -2,3.5"), Ok(Vec3::new(1.0, -2.0, 3.5)));
        assert!(parse_vec3("1,2").is_err());
        assert!(parse_vec3("1,2,nan").is_err());
        assert!(parse_camera("0,0,0,0,0,0").is_err());
        assert!(parse_fov("180").is_err());
    }
}
