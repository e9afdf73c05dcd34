//! The `serde` feature: value types survive a JSON round trip unchanged, and a ray is stored as
//! what defines it (origin, direction, range), its inverse direction and sign bits derived again
//! on reading, so a stored ray cannot disagree with itself.
//!
//! `cargo test --features serde --test serde`

use glam::{Vec2, Vec3, Vec3A};
use serde::Serialize;
use serde::de::DeserializeOwned;
use slabtree::{Aabb, Aabb2, BuildOptions, Dbvt, DbvtConfig, Hit, Ray, Ray2, TriangleTest};

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) -> String {
    let json = serde_json::to_string(value).unwrap();
    let back: T = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, value, "{json}");
    json
}

#[test]
fn value_types_round_trip() {
    round_trip(&Aabb::new(Vec3A::new(-1.0, 0.0, 2.5), Vec3A::new(3.0, 4.0, 5.0)));
    round_trip(&Aabb2::new(Vec2::new(-1.0, 0.0), Vec2::new(3.0, 4.0)));
    round_trip(&Hit { t: 2.5, triangle: 7, u: 0.25, v: 0.5, normal: Vec3::Y });
    round_trip(&BuildOptions { triangle_test: TriangleTest::Watertight, bins: 8, ..Default::default() });
    round_trip(&DbvtConfig { margin: 0.25, ..Default::default() });
    let (tree, ids) = Dbvt::build([(Aabb::new(Vec3A::ZERO, Vec3A::ONE), 1u8)]).unwrap();
    let json = serde_json::to_string(&ids[0]).unwrap();
    let id = serde_json::from_str(&json).unwrap();
    assert_eq!(tree.get(id), Ok(&1), "an id read back names the same proxy of the same tree");
}

#[test]
fn rays_store_what_defines_them() {
    // Negative, zero and positive directions: the sign bits and the infinite inverse come back.
    let ray = Ray::new(Vec3A::new(1.0, 2.0, 3.0), Vec3A::new(-2.0, 0.0, 0.5)).with_range(0.5, 8.0);
    let json = round_trip(&ray);
    assert!(!json.contains("inv_dir") && !json.contains("sign"), "{json}");
    round_trip(&Ray2::new(Vec2::new(1.0, 2.0), Vec2::new(0.0, -3.0)).with_range(0.0, 1.0));
    // A hand-written ray gets its derived fields from its direction.
    let written: Ray =
        serde_json::from_str(r#"{"origin":[0.0,0.0,0.0],"dir":[0.0,-4.0,2.0],"tmin":0.0,"tmax":1.0}"#).unwrap();
    assert_eq!(written, Ray::new(Vec3A::ZERO, Vec3A::new(0.0, -4.0, 2.0)).with_range(0.0, 1.0));
    assert_eq!((written.sign(), written.inv_dir().y), ([0, 1, 0], -0.25));
}

/// A broad phase saved mid-frame (moves, a removal and a filter change waiting for
/// `update_pairs`) and restored gives the same events as the original from then on, frame after
/// frame, and issues the same ids; a document with a pair of a free slot is refused.
#[test]
fn a_restored_broad_phase_goes_on_with_the_same_events() {
    use slabtree::broad_phase::BroadPhase;
    use slabtree::broad_phase::BroadPhaseConfig;
    use slabtree_testkit::worlds::{Driven, Workload, World};
    for workload in Workload::ALL {
        let mut original = Driven::new(World::new(workload, 1500, 5), BroadPhaseConfig::default());
        original.phase.update_pairs();
        for _ in 0..4 {
            original.step();
            original.phase.update_pairs();
        }
        original.step();
        // Several free slots, so that the order of their reuse matters.
        for i in [10, 20, 30] {
            if let Some(id) = original.ids[i].take() {
                original.phase.remove(id).unwrap();
            }
        }
        let json = serde_json::to_string(&original.phase).unwrap();
        let restored: BroadPhase<usize> = serde_json::from_str(&json).unwrap();
        let mut copy = original.with_phase(restored);
        for frame in 0..6 {
            let (a, b) = (original.phase.update_pairs().clone(), copy.phase.update_pairs().clone());
            assert_eq!(a, b, "{workload:?}: frame {frame} after the restore");
            assert_eq!(original.phase.pair_count(), copy.phase.pair_count());
            original.step();
            copy.step();
            for i in [10, 20, 30] {
                let b = original.world.bodies[i].aabb();
                let (x, y) = (
                    original.phase.add(b, slabtree::BodyKind::Dynamic, i),
                    copy.phase.add(b, slabtree::BodyKind::Dynamic, i),
                );
                assert_eq!(x, y, "{workload:?}: the same ids issued");
            }
            assert_eq!(original.ids, copy.ids, "{workload:?}: the same ids issued");
        }
    }
    // A pair naming a slot that holds no object.
    let mut phase: BroadPhase<u8> = BroadPhase::new();
    let a = phase.add(Aabb::new(Vec3A::ZERO, Vec3A::ONE), slabtree::BodyKind::Dynamic, 1).unwrap();
    phase.add(Aabb::new(Vec3A::ZERO, Vec3A::ONE), slabtree::BodyKind::Dynamic, 2).unwrap();
    phase.update_pairs();
    phase.remove(a).unwrap();
    let json = serde_json::to_string(&phase).unwrap().replace("\"pairs\":[]", "\"pairs\":[[0,1]]");
    assert!(json.contains("[[0,1]]"), "{json}");
    let err = serde_json::from_str::<BroadPhase<u8>>(&json).map(|_| ()).unwrap_err();
    assert!(err.to_string().contains("pair (0, 1)"), "{err}");
}
