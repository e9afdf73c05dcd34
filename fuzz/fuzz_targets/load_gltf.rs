//! The glTF loader of the `slabtree` command (`cli/src/gltf.rs`) on arbitrary bytes, as `.glb` and as `.gltf`: never panics; a scene it
//! returns holds a well-formed mesh.
#![no_main]

use slabtree_cli as cli;

use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("slabtree-fuzz-gltf-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the extension; the loader sniffs GLB by its magic either way.
    let (ext, body) = match data.split_first() {
        Some((b, rest)) if b & 1 == 1 => ("glb", rest),
        Some((_, rest)) => ("gltf", rest),
        None => ("gltf", data),
    };
    let path = dir().join(format!("in.{ext}"));
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(body).unwrap();
    drop(f);
    if let Ok(scene) = cli::gltf::load(&path) {
        let mesh = &scene.mesh;
        let n = mesh.positions().len();
        for t in mesh.triangles() {
            for &i in t {
                assert!((i as usize) < n);
            }
        }
    }
});
