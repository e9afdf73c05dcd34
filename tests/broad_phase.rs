//! The broad phase against a brute-force model, through the public API only: random sequences of
//! adds, removes, moves, teleports, filter changes, kind changes and updates. After every
//! `update_pairs` the tracked pairs are exactly the pairs brute force finds over the live objects
//! (fat boxes overlapping, filters passing, kinds allowed), and the events are exactly the
//! difference from the previous update, sorted. Queries over all objects match brute force too.

use std::collections::{BTreeMap, BTreeSet};

use glam::Vec3A;
use proptest::prelude::*;
use slabtree::broad_phase::{BodyKind, BroadPhase, BroadPhaseConfig, BroadPhaseError, Filter, ObjectId};
use slabtree::{Aabb, Frustum, LeafControl, QueryWorkspace, Ray, ray_aabb2};

#[derive(Clone, Debug)]
enum Op {
    Add {
        c: [f32; 3],
        h: [f32; 3],
        kind: u8,
    },
    Move {
        which: usize,
        d: [f32; 3],
    },
    /// `move_objects` naming one object twice (the second entry wins), with another object
    /// between, or, when `bad`, ending with a NaN box (refused, nothing changed).
    Batch {
        which: usize,
        other: usize,
        d: [f32; 3],
        back: bool,
        bad: bool,
    },
    Teleport {
        which: usize,
        c: [f32; 3],
    },
    Remove {
        which: usize,
    },
    SetFilter {
        which: usize,
        category: u8,
        mask: u8,
    },
    SetKind {
        which: usize,
        kind: u8,
    },
    Update,
}

fn v3(range: std::ops::Range<f32>) -> impl Strategy<Value = [f32; 3]> {
    [range.clone(), range.clone(), range]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (v3(-8.0..8.0), v3(0.0..2.0), 0u8..3).prop_map(|(c, h, kind)| Op::Add { c, h, kind }),
        6 => (any::<usize>(), v3(-0.6..0.6)).prop_map(|(which, d)| Op::Move { which, d }),
        2 => (any::<usize>(), v3(-8.0..8.0)).prop_map(|(which, c)| Op::Teleport { which, c }),
        2 => (any::<usize>(), any::<usize>(), v3(-3.0..3.0), any::<bool>(), proptest::bool::weighted(0.2))
            .prop_map(|(which, other, d, back, bad)| Op::Batch { which, other, d, back, bad }),
        2 => any::<usize>().prop_map(|which| Op::Remove { which }),
        1 => (any::<usize>(), 1u8..4, 0u8..4).prop_map(|(which, category, mask)| Op::SetFilter { which, category, mask }),
        1 => (any::<usize>(), 0u8..3).prop_map(|(which, kind)| Op::SetKind { which, kind }),
        3 => Just(Op::Update),
    ]
}

fn kind_of(k: u8) -> BodyKind {
    [BodyKind::Static, BodyKind::Kinematic, BodyKind::Dynamic][k as usize % 3]
}

/// What the model keeps per live object: the tight box last given, its kind and filter.
#[derive(Clone, Copy, Debug)]
struct Model {
    tight: Aabb,
    kind: BodyKind,
    filter: Filter,
}

/// The pair rule, written out from the documentation: one dynamic object (or, with
/// `kinematic_pairs`, one kinematic), and each filter's category in the other's mask.
fn allowed(a: &Model, b: &Model, kinematic_pairs: bool) -> bool {
    let kinds = [a.kind, b.kind];
    let kinds_ok = kinds.contains(&BodyKind::Dynamic) || (kinematic_pairs && kinds.contains(&BodyKind::Kinematic));
    kinds_ok && (a.filter.category & b.filter.mask) != 0 && (b.filter.category & a.filter.mask) != 0
}

fn brute_pairs<T>(
    bp: &BroadPhase<T>,
    live: &BTreeMap<ObjectId, Model>,
    kinematic_pairs: bool,
) -> BTreeSet<(ObjectId, ObjectId)> {
    let all: Vec<(ObjectId, Model, Aabb)> = live.iter().map(|(&id, &m)| (id, m, bp.fat_aabb(id).unwrap())).collect();
    let mut pairs = BTreeSet::new();
    for (i, (ia, ma, fa)) in all.iter().enumerate() {
        for (ib, mb, fb) in &all[i + 1..] {
            if allowed(ma, mb, kinematic_pairs) && fa.overlaps(fb) {
                let p = if ia.index() < ib.index() { (*ia, *ib) } else { (*ib, *ia) };
                pairs.insert(p);
            }
        }
    }
    pairs
}

fn pick(live: &BTreeMap<ObjectId, Model>, which: usize) -> Option<ObjectId> {
    (!live.is_empty()).then(|| *live.keys().nth(which % live.len()).unwrap())
}

fn boxed(c: [f32; 3], h: [f32; 3]) -> Aabb {
    Aabb::from_center_half_extents(Vec3A::from(c), Vec3A::from(h))
}

fn run(ops: &[Op], kinematic_pairs: bool) -> Result<(), TestCaseError> {
    let config = BroadPhaseConfig { kinematic_pairs, ..Default::default() };
    let mut bp: BroadPhase<u32> = BroadPhase::with_config(config);
    let mut live: BTreeMap<ObjectId, Model> = BTreeMap::new();
    let mut removed: Vec<ObjectId> = Vec::new();
    let mut tracked: BTreeSet<(ObjectId, ObjectId)> = BTreeSet::new();
    let mut ws = QueryWorkspace::new();
    for (n, op) in ops.iter().enumerate() {
        match *op {
            Op::Add { c, h, kind } => {
                let tight = boxed(c, h);
                let id = bp.add(tight, kind_of(kind), n as u32).unwrap();
                prop_assert!(!live.contains_key(&id) && !removed.contains(&id), "an id was issued twice");
                live.insert(id, Model { tight, kind: kind_of(kind), filter: Filter::default() });
            }
            Op::Move { which, d } => {
                if let Some(id) = pick(&live, which) {
                    let m = live.get_mut(&id).unwrap();
                    m.tight = Aabb::new(m.tight.min + Vec3A::from(d), m.tight.max + Vec3A::from(d));
                    bp.move_object(id, m.tight, Vec3A::from(d)).unwrap();
                }
            }
            Op::Batch { which, other, d, back, bad } => {
                if let (Some(id), Some(o)) = (pick(&live, which), pick(&live, other)) {
                    let before: Vec<Aabb> = live.keys().map(|&k| bp.fat_aabb(k).unwrap()).collect();
                    let t = live[&id].tight;
                    let far = Aabb::new(t.min + Vec3A::from(d), t.max + Vec3A::from(d));
                    // Far away and (when `back`) back home: the last entry is where it ends.
                    let last = if back { t } else { far };
                    let mut batch =
                        vec![(id, far, Vec3A::from(d)), (o, live[&o].tight, Vec3A::ZERO), (id, last, Vec3A::ZERO)];
                    if bad {
                        batch.push((o, Aabb { min: Vec3A::NAN, max: Vec3A::ONE }, Vec3A::ZERO));
                        prop_assert!(matches!(bp.move_objects(&batch), Err(BroadPhaseError::Input(_))));
                        let after: Vec<Aabb> = live.keys().map(|&k| bp.fat_aabb(k).unwrap()).collect();
                        prop_assert_eq!(before, after, "a refused batch changed a box");
                    } else {
                        bp.move_objects(&batch).unwrap();
                        live.get_mut(&id).unwrap().tight = last;
                    }
                }
            }
            Op::Teleport { which, c } => {
                if let Some(id) = pick(&live, which) {
                    let m = live.get_mut(&id).unwrap();
                    m.tight = boxed(c, m.tight.half_extents().into());
                    bp.move_object(id, m.tight, Vec3A::ZERO).unwrap();
                }
            }
            Op::Remove { which } => {
                if let Some(id) = pick(&live, which) {
                    live.remove(&id);
                    removed.push(id);
                    prop_assert!(bp.remove(id).is_ok());
                    prop_assert_eq!(bp.remove(id), Err(BroadPhaseError::StaleObject(id)));
                }
            }
            Op::SetFilter { which, category, mask } => {
                if let Some(id) = pick(&live, which) {
                    let filter = Filter { category: category.into(), mask: mask.into() };
                    live.get_mut(&id).unwrap().filter = filter;
                    bp.set_filter(id, filter).unwrap();
                }
            }
            Op::SetKind { which, kind } => {
                if let Some(id) = pick(&live, which) {
                    live.get_mut(&id).unwrap().kind = kind_of(kind);
                    bp.set_kind(id, kind_of(kind)).unwrap();
                }
            }
            Op::Update => {
                let events = bp.update_pairs().clone();
                let expected = brute_pairs(&bp, &live, kinematic_pairs);
                let began: Vec<_> = expected.difference(&tracked).copied().collect();
                let ended: Vec<_> = tracked.difference(&expected).copied().collect();
                prop_assert_eq!(events.began(), &began[..], "pairs that began, after op {}", n);
                prop_assert_eq!(events.ended(), &ended[..], "pairs that ended, after op {}", n);
                let now: BTreeSet<_> = bp.pairs().collect();
                prop_assert_eq!(&now, &expected);
                prop_assert_eq!(bp.pair_count(), expected.len());
                tracked = expected;
            }
        }
        // Every object's fat box holds its tight box; kinds and filters read back.
        prop_assert_eq!(bp.len(), live.len());
        for (&id, m) in &live {
            prop_assert!(bp.fat_aabb(id).unwrap().contains(&m.tight));
            prop_assert_eq!(bp.kind(id).unwrap(), m.kind);
            prop_assert_eq!(bp.filter(id).unwrap(), m.filter);
        }
        for id in &removed {
            prop_assert!(!bp.contains(*id));
        }
        // Queries over every kind against brute force over the fat boxes.
        let probe = Aabb::from_center_half_extents(Vec3A::new(n as f32 % 7.0 - 3.0, 0.5, -1.0), Vec3A::splat(2.5));
        let mut got = BTreeSet::new();
        bp.overlap(&probe, &mut ws, |id, _| {
            got.insert(id);
            LeafControl::Continue
        })
        .unwrap();
        let want: BTreeSet<_> = live.keys().copied().filter(|&id| bp.fat_aabb(id).unwrap().overlaps(&probe)).collect();
        prop_assert_eq!(got, want);
        let eye = glam::Vec3::new(-15.0, (n % 5) as f32 - 2.0, 1.0);
        let frustum = Frustum::from_view_projection(
            glam::camera::rh::proj::directx::perspective(0.9, 1.3, 0.5, 40.0)
                * glam::camera::rh::view::look_at_mat4(eye, glam::Vec3::ZERO, glam::Vec3::Y),
        );
        let mut seen = BTreeSet::new();
        bp.frustum(&frustum, &mut ws, |id, _| {
            seen.insert(id);
            LeafControl::Continue
        })
        .unwrap();
        let want: BTreeSet<_> =
            live.keys().copied().filter(|&id| frustum.may_contain(&bp.fat_aabb(id).unwrap())).collect();
        prop_assert_eq!(seen, want);
        let ray = Ray::new(Vec3A::new(-20.0, (n % 5) as f32 - 2.0, 0.3), Vec3A::new(1.0, 0.05, 0.02).normalize());
        let hit = bp.intersect(&ray, &mut ws).unwrap();
        let brute = live
            .keys()
            .filter_map(|&id| ray_aabb2(&ray, &bp.fat_aabb(id).unwrap()).map(|t| (t, id.index(), id)))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        prop_assert_eq!(hit.map(|h| (h.t, h.id)), brute.map(|(t, _, id)| (t, id)));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn update_pairs_matches_brute_force(ops in proptest::collection::vec(op(), 1..160)) {
        run(&ops, false)?;
    }

    #[test]
    fn update_pairs_matches_brute_force_with_kinematic_pairs(ops in proptest::collection::vec(op(), 1..160)) {
        run(&ops, true)?;
    }
}

/// Every tracked pair, and only those, brute force finds among the live objects: the pair rule
/// over the fat boxes, kinds and filters read back through the public API.
fn assert_pairs_are_brute_force(bp: &BroadPhase<usize>, kinematic_pairs: bool) {
    // The model's tight boxes are not kept here; `brute_pairs` reads only the fat ones.
    let live: BTreeMap<ObjectId, Model> = (bp.iter())
        .map(|(id, _)| {
            let (kind, filter) = (bp.kind(id).unwrap(), bp.filter(id).unwrap());
            (id, Model { tight: bp.fat_aabb(id).unwrap(), kind, filter })
        })
        .collect();
    let want = brute_pairs(bp, &live, kinematic_pairs);
    let got: BTreeSet<_> = bp.pairs().collect();
    assert_eq!(got.len(), bp.pair_count());
    assert!(got == want, "{} pairs tracked, {} by brute force", got.len(), want.len());
}

/// The three workloads at a size where every path runs (the per-object search on two threads,
/// the trees' pair walks and the whole-tree rebuilds on one), with churn: the events are the same
/// on one thread and two, frame after frame, and the pairs are brute force's.
#[test]
fn events_are_the_same_on_any_number_of_threads_and_match_brute_force() {
    use slabtree_testkit::worlds::{Driven, Workload, World};
    for workload in Workload::ALL {
        let config = BroadPhaseConfig { parallel_threshold: 1, ..Default::default() };
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mut driven = Driven::new(World::new(workload, 3000, 11), config);
                let mut log = vec![driven.phase.update_pairs().clone()];
                for frame in 0..12 {
                    driven.step();
                    log.push(driven.phase.update_pairs().clone());
                    if frame % 4 == 3 {
                        assert_pairs_are_brute_force(&driven.phase, false);
                    }
                }
                log
            })
        };
        let (one, two) = (run(1), run(2));
        let churn: usize = one.iter().map(|e| e.began().len() + e.ended().len()).sum();
        assert!(churn > 100, "{workload:?}: the workload changes pairs ({churn} events)");
        assert!(one == two, "{workload:?}: the events differ between one thread and two");
    }
}
