//! The shared ray files and their Embree 4 reference answers.

use std::path::Path;

use crate::RawRay;
use crate::libraries::{Outcome, judge_runs};

pub(crate) struct RaySet {
    pub(crate) kind: &'static str,
    pub(crate) rays: Vec<RawRay>,
    pub(crate) shadow: bool,
    /// The Embree 4 (robust) reference answers shipped with the rays.
    pub(crate) reference: Option<Outcome>,
    /// Each run of [`HINT_RUN`] rays judged coherent or not ([`judge_runs`]).
    pub(crate) coherent: Vec<bool>,
}

pub(crate) fn read_f32s(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

pub(crate) fn load_rays(dir: &Path, scene: &str, kind: &'static str) -> Result<RaySet, String> {
    let path = dir.join("rays").join(format!("{scene}.{kind}.rays"));
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() % 32 != 0 {
        return Err(format!("{}: size {} is not a multiple of 32", path.display(), bytes.len()));
    }
    let floats: Vec<f32> = read_f32s(&bytes).collect();
    let rays: Vec<RawRay> = floats.chunks_exact(8).map(|c| c.try_into().unwrap()).collect();
    let shadow = kind == "shadow";
    let reference = if shadow {
        let p = dir.join("rays").join(format!("{scene}.shadow.occluded"));
        std::fs::read(&p)
            .ok()
            .filter(|b| b.len() == rays.len())
            .map(|b| Outcome::Occluded(b.iter().map(|&x| x != 0).collect()))
    } else {
        let p = dir.join("rays").join(format!("{scene}.{kind}.hits"));
        std::fs::read(&p).ok().filter(|b| b.len() == rays.len() * 16).map(|b| {
            Outcome::Closest(
                b.chunks_exact(16)
                    .map(|c| {
                        let t = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                        let prim = i32::from_le_bytes([c[4], c[5], c[6], c[7]]);
                        (prim >= 0).then_some((t, prim as u32))
                    })
                    .collect(),
            )
        })
    };
    let coherent = judge_runs(&rays);
    Ok(RaySet { kind, rays, shadow, reference, coherent })
}
