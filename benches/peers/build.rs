//! Builds tinybvh (vendored, `vendor/tinybvh`) for the `frontier` peer program. Its BVH8_CPU
//! needs AVX2 and FMA at compile time and has no run-time dispatch, so it is built for this
//! machine (`-march=native`), as its users build it.
fn main() {
    println!("cargo:rerun-if-changed=src/tinybvh_shim.cpp");
    println!("cargo:rerun-if-changed=vendor/tinybvh/tiny_bvh.h");
    cc::Build::new()
        .cpp(true)
        .file("src/tinybvh_shim.cpp")
        .include("vendor/tinybvh")
        .std("c++20")
        .flag("-march=native")
        .opt_level(3)
        .define("NDEBUG", None)
        .warnings(false)
        .compile("tinybvh_shim");
}
