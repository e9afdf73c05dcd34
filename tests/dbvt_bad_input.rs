//! Bad input: refused with a typed error, and the tree stays valid and loses nothing.

use glam::Vec3A;
use slabtree::{
    Aabb, Dbvt, DbvtError, Frustum, InputError, LeafControl, Plane, QueryWorkspace, Ray, RayControl, RayLeaf,
};

fn sample_tree() -> (Dbvt<u32>, Vec<slabtree::ProxyId>) {
    let mut tree = Dbvt::new();
    let ids = (0..50u32)
        .map(|i| tree.insert(Aabb::from_center_half_extents(Vec3A::splat(i as f32), Vec3A::splat(0.4)), i).unwrap())
        .collect();
    (tree, ids)
}

fn bad_boxes() -> Vec<Aabb> {
    let n = f32::NAN;
    let i = f32::INFINITY;
    vec![
        Aabb::new(Vec3A::new(n, 0.0, 0.0), Vec3A::ONE),
        Aabb::new(Vec3A::ZERO, Vec3A::new(1.0, n, 1.0)),
        Aabb::new(Vec3A::new(-i, 0.0, 0.0), Vec3A::ONE),
        Aabb::new(Vec3A::ZERO, Vec3A::new(1.0, 1.0, i)),
        Aabb::new(Vec3A::ONE, Vec3A::ZERO),
        Aabb::EMPTY,
    ]
}

#[test]
fn nan_infinite_and_inverted_boxes_are_refused() {
    let (mut tree, ids) = sample_tree();
    for b in bad_boxes() {
        let e = tree.insert(b, 99).unwrap_err();
        assert!(
            matches!(e, DbvtError::Input(InputError::NonFiniteAabb { .. } | InputError::InvertedAabb { .. })),
            "{e}"
        );
        tree.validate().unwrap();
        assert!(tree.move_proxy(ids[3], b, Vec3A::ZERO).is_err());
        assert!(tree.enlarge_proxy(ids[3], b, Vec3A::ZERO).is_err());
        tree.validate().unwrap();
        let mut ws = QueryWorkspace::new();
        assert!(tree.overlap(&b, &mut ws, &mut |_, _: &u32| LeafControl::Continue).is_err());
        assert!(tree.box_cast(&b, Vec3A::X, &mut ws, &mut |_: RayLeaf<'_, u32>| RayControl::Continue).is_err());
        assert!(Dbvt::build([(Aabb::new(Vec3A::ZERO, Vec3A::ONE), 0u32), (b, 1)]).is_err());
    }
    assert_eq!(tree.len(), 50);
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(*tree.get(*id).unwrap(), i as u32, "a proxy was lost");
    }
}

#[test]
fn bad_displacements_are_refused() {
    let (mut tree, ids) = sample_tree();
    let good = Aabb::new(Vec3A::splat(100.0), Vec3A::splat(101.0));
    for d in [Vec3A::new(f32::NAN, 0.0, 0.0), Vec3A::new(0.0, f32::INFINITY, 0.0)] {
        assert_eq!(tree.move_proxy(ids[0], good, d), Err(DbvtError::Input(InputError::NonFiniteDisplacement)));
        assert_eq!(tree.enlarge_proxy(ids[0], good, d), Err(DbvtError::Input(InputError::NonFiniteDisplacement)));
    }
    // The proxy did not move.
    assert!(tree.fat_aabb(ids[0]).unwrap().contains_point(Vec3A::ZERO));
    tree.validate().unwrap();
}

#[test]
fn stale_and_foreign_ids_are_errors() {
    let (mut tree, ids) = sample_tree();
    let (other, other_ids) = sample_tree();
    let victim = ids[7];
    assert_eq!(tree.remove(victim).unwrap(), 7);
    // The slot is reused by the next insert; the old id must not reach the new proxy.
    let fresh = tree.insert(Aabb::new(Vec3A::ZERO, Vec3A::ONE), 1000).unwrap();
    assert_eq!(fresh.index(), victim.index());
    let b = Aabb::new(Vec3A::ZERO, Vec3A::ONE);
    assert_eq!(tree.get(victim), Err(DbvtError::StaleProxy(victim)));
    assert_eq!(tree.remove(victim), Err(DbvtError::StaleProxy(victim)));
    assert_eq!(tree.move_proxy(victim, b, Vec3A::ZERO), Err(DbvtError::StaleProxy(victim)));
    assert_eq!(tree.enlarge_proxy(victim, b, Vec3A::ZERO), Err(DbvtError::StaleProxy(victim)));
    assert_eq!(tree.fat_aabb(victim), Err(DbvtError::StaleProxy(victim)));
    assert_eq!(*tree.get(fresh).unwrap(), 1000);
    // Foreign ids, even with a matching index and generation.
    let foreign = other_ids[3];
    assert_eq!(tree.get(foreign), Err(DbvtError::ForeignProxy(foreign)));
    assert_eq!(tree.remove(foreign), Err(DbvtError::ForeignProxy(foreign)));
    assert_eq!(tree.move_proxy(foreign, b, Vec3A::ZERO), Err(DbvtError::ForeignProxy(foreign)));
    tree.validate().unwrap();
    other.validate().unwrap();
    assert_eq!(tree.len(), 50);
    assert_eq!(other.len(), 50);
}

#[test]
fn bad_frustum_is_refused() {
    let (tree, _) = sample_tree();
    let mut f = Frustum { planes: [Plane::new(Vec3A::X, 0.0); 6] };
    f.planes[4].d = f32::NAN;
    let mut ws = QueryWorkspace::new();
    let r = tree.frustum(&f, &mut ws, &mut |_, _: &u32| LeafControl::Continue);
    assert_eq!(r, Err(DbvtError::Input(InputError::NonFinitePlane { index: 4 })));
}

#[test]
fn empty_tree_answers_every_query() {
    let mut tree: Dbvt<u32> = Dbvt::new();
    let mut ws = QueryWorkspace::new();
    let ray = Ray::new(Vec3A::ZERO, Vec3A::X);
    assert_eq!(tree.ray_cast_closest(&ray, &mut ws).unwrap(), None);
    assert_eq!(tree.box_cast_closest(&Aabb::new(Vec3A::ZERO, Vec3A::ONE), Vec3A::X, &mut ws).unwrap(), None);
    assert_eq!(tree.self_pairs(&mut ws, |_, _, _, _| slabtree::PairControl::Continue).unwrap().leaves_visited, 0);
    tree.rebuild();
    tree.refit();
    assert_eq!(tree.optimize_incremental(10), 0);
    tree.validate().unwrap();
    assert_eq!(tree.root_bounds(), None);
    let (built, ids) = Dbvt::<u32>::build(std::iter::empty()).unwrap();
    assert!(built.is_empty() && ids.is_empty());
    built.validate().unwrap();
}

#[test]
fn a_bad_entry_leaves_a_batch_update_unapplied() {
    let (mut tree, ids) = sample_tree();
    let (_, foreign) = sample_tree();
    let before: Vec<Aabb> = ids.iter().map(|id| tree.fat_aabb(*id).unwrap()).collect();
    let far = |i: usize| Aabb::from_center_half_extents(Vec3A::splat(100.0 + i as f32), Vec3A::splat(0.4));
    let mut moves: Vec<_> = ids.iter().enumerate().map(|(i, id)| (*id, far(i), Vec3A::X)).collect();
    for bad in [
        (ids[3], Aabb::new(Vec3A::new(f32::NAN, 0.0, 0.0), Vec3A::ONE), Vec3A::X),
        (ids[3], far(3), Vec3A::new(0.0, f32::INFINITY, 0.0)),
        (foreign[3], far(3), Vec3A::X),
    ] {
        moves[40] = bad;
        assert!(tree.update_proxies(&moves).is_err());
        assert!(!tree.is_refit_pending());
        let after: Vec<Aabb> = ids.iter().map(|id| tree.fat_aabb(*id).unwrap()).collect();
        assert_eq!(before, after, "a refused batch changed the tree");
        tree.validate().unwrap();
    }
    moves[40] = (ids[40], far(40), Vec3A::X);
    assert_eq!(tree.update_proxies(&moves).unwrap(), 50);
    tree.refit();
    tree.validate().unwrap();
    assert!(tree.fat_aabb(ids[7]).unwrap().contains(&far(7)));
}
