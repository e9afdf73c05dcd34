//! Builds tinybvh (vendored, `vendor/tinybvh`) for the `frontier` peer program, and, when
//! Debian's libbullet-dev is installed, the Bullet shim of the `broadphase` program (which
//! otherwise reports Bullet as missing). tinybvh's BVH8_CPU needs AVX2 and FMA at compile time and
//! has no run-time dispatch, so it is built for this machine (`-march=native`), as its users
//! build it. `PEERS_MARCH` names another level, as for valgrind, which runs no AVX-512
//! (`PEERS_MARCH=x86-64-v3` with `RUSTFLAGS="-C target-cpu=x86-64-v3"`).
fn main() {
    println!("cargo:rerun-if-changed=src/tinybvh_shim.cpp");
    println!("cargo:rerun-if-env-changed=PEERS_MARCH");
    let march = std::env::var("PEERS_MARCH").unwrap_or_else(|_| "native".into());
    println!("cargo:rerun-if-changed=vendor/tinybvh/tiny_bvh.h");
    println!("cargo:rerun-if-changed=src/bullet_shim.cpp");
    println!("cargo::rustc-check-cfg=cfg(has_bullet)");
    cc::Build::new()
        .cpp(true)
        .file("src/tinybvh_shim.cpp")
        .include("vendor/tinybvh")
        .std("c++20")
        .flag(format!("-march={march}"))
        .opt_level(3)
        .define("NDEBUG", None)
        .warnings(false)
        .compile("tinybvh_shim");
    let bullet = std::path::Path::new("/usr/include/bullet");
    if bullet.exists() {
        // Debian builds Bullet for the x86-64 baseline; the shim is built the same way.
        cc::Build::new()
            .cpp(true)
            .file("src/bullet_shim.cpp")
            .include(bullet)
            .opt_level(3)
            .define("NDEBUG", None)
            .warnings(false)
            .compile("bullet_shim");
        for lib in ["BulletCollision", "LinearMath"] {
            println!("cargo:rustc-link-lib={lib}");
        }
        println!("cargo:rustc-cfg=has_bullet");
    }
}
