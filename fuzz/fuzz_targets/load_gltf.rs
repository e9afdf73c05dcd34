//! The library's glTF reader (`slabtree::io::parse_gltf`, feature `gltf`, which the `slabtree`
//! command's loader uses) on arbitrary bytes, `.gltf` text or `.glb`: it never panics, and a
//! document it returns holds well-formed meshes, finite placements, and builds into a scene.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slabtree::BuildOptions;

fuzz_target!(|data: &[u8]| {
    // The first byte is skipped, so that corpora written for the command's loader (which used it
    // to pick the extension) still reach the parser; the reader tells GLB by its magic.
    let body = data.get(1..).unwrap_or(data);
    if let Ok(doc) = slabtree::io::parse_gltf(body, "fuzz.gltf") {
        for g in &doc.meshes {
            let n = g.mesh.positions().len();
            assert!(g.mesh.triangles().iter().flatten().all(|&i| (i as usize) < n));
            assert_eq!(g.materials.len(), g.mesh.len());
        }
        assert!(doc.instances.iter().all(|i| i.mesh < doc.meshes.len() && i.transform.is_finite()));
        doc.build_scene(&BuildOptions::default()).expect("a document the reader returns builds");
    }
});
