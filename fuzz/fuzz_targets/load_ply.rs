//! The PLY loader (ASCII and binary) on arbitrary bytes: never panics; a mesh it returns is well
//! formed (every index in range, every used vertex finite) and can be built into a BVH and queried.
#![no_main]

#[path = "common/loaded_mesh.rs"]
mod loaded_mesh;

use libfuzzer_sys::fuzz_target;
use slabtree::io::parse_ply;

fuzz_target!(|data: &[u8]| loaded_mesh::check(parse_ply(data, "fuzz.ply"), "fuzz.ply"));
