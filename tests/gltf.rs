//! glTF scenes in the library (feature `gltf`): a node hierarchy with nested transforms and a mesh
//! shared by two nodes, placed as the f64 composition of the nodes' transforms says; the same
//! document in its three containers; malformed files as errors that name the file and the place,
//! and every truncation and byte flip of a file refused or read without a panic.

use std::sync::Arc;

use glam::{DMat4, DQuat, DVec3, Vec3A};
use slabtree::io::{GltfDocument, parse_gltf, read_gltf};
use slabtree::{BuildOptions, Ray, Scene};

use common::gltf::{base64, glb};
use slabtree_testkit as common;

/// Mesh 0, one triangle (0,0,0), (1,0,0), (0,1,0), indexed by u16; mesh 1, a unit quad as a
/// triangle strip of 4 unindexed vertices. Positions, then indices.
fn buffer() -> Vec<u8> {
    let mut b = Vec::new();
    let f = [0.0f32, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0];
    let quad = [0.0f32, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0];
    for x in f.iter().chain(&quad) {
        b.extend_from_slice(&x.to_le_bytes());
    }
    for i in [0u16, 1, 2, 0] {
        b.extend_from_slice(&i.to_le_bytes());
    }
    b
}

const SQRT_HALF: f64 = std::f64::consts::FRAC_1_SQRT_2;

/// Node 0 (a root) turns 90° about z and moves by (10, 0, 0); its child 1 scales mesh 0 by 2;
/// its child 2 moves by (0, 0, -3) and holds node 3, which places mesh 0 again through a matrix
/// (a move by (0, 5, 0)). Node 4, the other root, places mesh 1 at z = -10. Node 5 holds mesh 1
/// but is in no scene.
fn document(buffer_uri: Option<&str>, len: usize) -> String {
    let uri = buffer_uri.map(|u| format!(r#""uri": "{u}", "#)).unwrap_or_default();
    format!(
        r#"{{
  "asset": {{"version": "2.0"}},
  "scene": 0,
  "scenes": [{{"nodes": [0, 4]}}],
  "nodes": [
    {{"translation": [10, 0, 0], "rotation": [0, 0, {SQRT_HALF}, {SQRT_HALF}], "children": [1, 2]}},
    {{"scale": [2, 2, 2], "mesh": 0}},
    {{"translation": [0, 0, -3], "children": [3]}},
    {{"matrix": [1,0,0,0, 0,1,0,0, 0,0,1,0, 0,5,0,1], "mesh": 0}},
    {{"translation": [0, 0, -10], "mesh": 1}},
    {{"mesh": 1}}
  ],
  "meshes": [
    {{"primitives": [{{"attributes": {{"POSITION": 0}}, "indices": 2}}]}},
    {{"primitives": [{{"attributes": {{"POSITION": 1}}, "mode": 5, "material": 0}}]}}
  ],
  "materials": [{{"pbrMetallicRoughness": {{"baseColorFactor": [0.2, 0.4, 0.9, 1.0]}}}}],
  "accessors": [
    {{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3", "min": [0,0,0], "max": [1,1,0]}},
    {{"bufferView": 0, "byteOffset": 36, "componentType": 5126, "count": 4, "type": "VEC3", "min": [0,0,0], "max": [1,1,0]}},
    {{"bufferView": 1, "componentType": 5123, "count": 3, "type": "SCALAR"}}
  ],
  "bufferViews": [
    {{"buffer": 0, "byteOffset": 0, "byteLength": 84}},
    {{"buffer": 0, "byteOffset": 84, "byteLength": 8}}
  ],
  "buffers": [{{{uri}"byteLength": {len}}}]
}}"#
    )
}

/// The world transforms the document gives each mesh-holding node of the scene, composed in
/// f64 from the same numbers: (node, mesh, transform).
fn expected() -> Vec<(usize, usize, DMat4)> {
    let root = DMat4::from_scale_rotation_translation(
        DVec3::ONE,
        DQuat::from_xyzw(0.0, 0.0, SQRT_HALF, SQRT_HALF),
        DVec3::new(10.0, 0.0, 0.0),
    );
    let n1 = root * DMat4::from_scale(DVec3::splat(2.0));
    let n3 = root * DMat4::from_translation(DVec3::new(0.0, 0.0, -3.0)) * DMat4::from_translation(DVec3::Y * 5.0);
    let n4 = DMat4::from_translation(DVec3::new(0.0, 0.0, -10.0));
    vec![(1, 0, n1), (3, 0, n3), (4, 1, n4)]
}

fn embedded() -> Vec<u8> {
    let b = buffer();
    document(Some(&format!("data:application/octet-stream;base64,{}", base64(&b))), b.len()).into_bytes()
}

fn binary() -> Vec<u8> {
    let b = buffer();
    glb(&document(None, b.len()), &b)
}

fn check_document(doc: &GltfDocument, what: &str) {
    assert_eq!(doc.meshes.len(), 2);
    assert_eq!(doc.meshes[0].mesh.triangles(), &[[0, 1, 2]], "{what}");
    // The strip's second triangle swaps its first two corners to keep the winding.
    assert_eq!(doc.meshes[1].mesh.triangles(), &[[0, 1, 2], [2, 1, 3]], "{what}");
    assert_eq!(doc.meshes[0].materials, [None]);
    assert_eq!(doc.meshes[1].materials, [Some(0), Some(0)]);
    assert_eq!(doc.materials, [[0.2, 0.4, 0.9, 1.0]]);
    let want = expected();
    assert_eq!(doc.instances.len(), want.len(), "{what}: node 5 is in no scene");
    for (inst, (node, mesh, m)) in doc.instances.iter().zip(&want) {
        assert_eq!((inst.node, inst.mesh), (Some(*node), *mesh), "{what}");
        let got = glam::Mat4::from(inst.transform).as_dmat4();
        assert!(got.abs_diff_eq(*m, 1e-5), "{what}: node {node}: {got:?} vs {m:?}");
    }
}

#[test]
fn nested_transforms_and_shared_meshes_place_the_geometry() {
    let dir = std::env::temp_dir().join(format!("slabtree-gltf-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tri.bin"), buffer()).unwrap();
    std::fs::write(dir.join("external.gltf"), document(Some("tri.bin"), buffer().len())).unwrap();
    let external = read_gltf(dir.join("external.gltf")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    check_document(&external, "external buffer");
    check_document(&parse_gltf(&embedded(), "embedded.gltf").unwrap(), "embedded buffer");
    let doc = parse_gltf(&binary(), "binary.glb").unwrap();
    check_document(&doc, "glb");

    let scene = doc.build_scene(&BuildOptions::default()).unwrap();
    assert_eq!(scene.len(), 3);
    // Rays straight down onto each placed triangle's centroid (in f64 from the composed
    // transform) hit that node's instance at the placed height.
    for (node, mesh, m) in expected() {
        let local = &doc.meshes[mesh].mesh;
        for tri in 0..local.len() {
            let c = local.triangle(tri).map(|v| m.transform_point3(v.as_dvec3())).iter().sum::<DVec3>() / 3.0;
            let ray = Ray::new(Vec3A::new(c.x as f32, c.y as f32, 50.0), -Vec3A::Z);
            let hit = scene.intersect(&ray, Scene::ALL).unwrap().expect("the placed triangle");
            assert_eq!((hit.user_id, hit.triangle), (node as u64, tri as u32));
            assert!(((50.0 - c.z) - hit.t as f64).abs() < 1e-4, "node {node}: t {}", hit.t);
        }
    }
    // Where the untransformed triangle would be, only node 4's quad, below; beside it, nothing.
    let under = scene.intersect(&Ray::new(Vec3A::new(0.2, 0.2, 50.0), -Vec3A::Z), Scene::ALL).unwrap();
    assert_eq!(under.map(|h| (h.user_id, h.t)), Some((4, 60.0)));
    assert!(scene.intersect(&Ray::new(Vec3A::new(0.2, -0.5, 50.0), -Vec3A::Z), Scene::ALL).unwrap().is_none());
    // Nodes 1 and 3 share mesh 0's one BVH.
    let meshes: Vec<_> = scene.iter().map(|(_, inst)| (inst.user_id(), inst.mesh().clone())).collect();
    let of = |node: u64| &meshes.iter().find(|m| m.0 == node).unwrap().1;
    assert!(Arc::ptr_eq(of(1), of(3)));
    assert!(!Arc::ptr_eq(of(1), of(4)));
}

/// A fault names the file and where in the document it is.
#[test]
fn malformed_files_are_errors_that_say_where() {
    let b = buffer();
    let good = document(Some(&format!("data:application/octet-stream;base64,{}", base64(&b))), b.len());
    let cases = [
        (good.replace(r#""count": 3, "type": "SCALAR""#, r#""count": 5, "type": "SCALAR""#), "indices accessor 2"),
        (good.replace(r#""POSITION": 0"#, r#""POSITION": 9"#), "names accessor 9"),
        (good.replace(r#""mesh": 0}"#, r#""mesh": 0, "children": [1]}"#), "node 1"),
        (document(Some("missing.bin"), b.len()), "given as bytes"),
        (good.replace(r#""byteLength": 84"#, r#""byteLength": 840"#), "buffer view 0"),
        (good.replace(r#""POSITION": 0"#, r#""NORMAL": 0"#), "POSITION"),
        (good.replace("\"scene\": 0,", "\"scene\": 0,\n  oops"), "line 4"),
    ];
    for (text, place) in cases {
        let err = parse_gltf(text.as_bytes(), "bad.gltf").unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("bad.gltf: invalid glTF: "), "{msg}");
        assert!(msg.contains(place), "expected `{place}` in: {msg}");
    }
    // A GLB whose header declares a length shorter than itself (a fuzzing finding: gltf 1.4
    // subtracted the header's 12 bytes unchecked and panicked in debug builds).
    let mut short = binary();
    short[8..12].copy_from_slice(&4u32.to_le_bytes());
    let msg = parse_gltf(&short, "short.glb").unwrap_err().to_string();
    assert!(msg.starts_with("short.glb: invalid glTF: GLB header"), "{msg}");
    // An index past the vertices: the first node to place the mesh is named.
    let mut b2 = b.clone();
    b2[84..86].copy_from_slice(&7u16.to_le_bytes());
    let text = document(Some(&format!("data:application/octet-stream;base64,{}", base64(&b2))), b2.len());
    let msg = parse_gltf(text.as_bytes(), "index.gltf").unwrap_err().to_string();
    assert!(msg.contains("node 1, mesh 0 primitive 0: index 7 (element 0) is out of range"), "{msg}");
}

/// Every truncation of the binary file is refused, and every byte flipped either is refused or
/// reads as a document whose meshes are valid and whose scene builds: never a panic.
#[test]
fn every_truncation_and_flipped_byte_is_refused_or_read() {
    let file = binary();
    for len in 0..file.len() {
        assert!(parse_gltf(&file[..len], "cut.glb").is_err(), "cut at {len} of {}", file.len());
    }
    let (mut read, mut refused) = (0, 0);
    for at in 0..file.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut f = file.clone();
            f[at] ^= flip;
            match parse_gltf(&f, "flipped.glb") {
                Ok(doc) => {
                    read += 1;
                    for g in &doc.meshes {
                        let n = g.mesh.positions().len();
                        assert!(g.mesh.triangles().iter().flatten().all(|&i| (i as usize) < n));
                        assert_eq!(g.materials.len(), g.mesh.len());
                    }
                    assert!(doc.instances.iter().all(|i| i.mesh < doc.meshes.len() && i.transform.is_finite()));
                    doc.build_scene(&BuildOptions::default()).unwrap();
                }
                Err(e) => {
                    refused += 1;
                    assert!(e.to_string().starts_with("flipped.glb: "));
                }
            }
        }
    }
    assert!(read > 100 && refused > 100, "{read} read, {refused} refused");
}

/// A node scaled to zero (how glTF hides things) has no surface: the scene leaves it out.
#[test]
fn zero_scale_nodes_are_left_out_of_the_scene() {
    let b = buffer();
    let text = document(Some(&format!("data:application/octet-stream;base64,{}", base64(&b))), b.len())
        .replace(r#""scale": [2, 2, 2]"#, r#""scale": [0, 0, 0]"#);
    let doc = parse_gltf(text.as_bytes(), "hidden.gltf").unwrap();
    assert_eq!(doc.instances.len(), 3);
    let scene = doc.build_scene(&BuildOptions::default()).unwrap();
    assert_eq!(scene.len(), 2);
    assert!(scene.iter().all(|(_, i)| i.user_id() != 1));
}
