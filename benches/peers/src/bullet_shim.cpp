// Bullet's btDbvtBroadphase (Debian's libbullet-dev) behind a C interface for the `broadphase`
// peer program: proxies created with Bullet's default filters (static objects in the static
// group, masked off each other), moved with setAabb, and the pair cache updated with
// calculateOverlappingPairs, as btCollisionWorld drives it.
#include <btBulletCollisionCommon.h>
#include <BulletCollision/BroadphaseCollision/btDbvtBroadphase.h>
#include <vector>
#include <cstdint>

struct BulletBroadPhase {
    btDefaultCollisionConfiguration config;
    btCollisionDispatcher dispatcher{&config};
    btDbvtBroadphase broadphase;
    std::vector<btBroadphaseProxy*> proxies;
};

extern "C" {

BulletBroadPhase* bullet_bp_new() { return new BulletBroadPhase(); }

void bullet_bp_free(BulletBroadPhase* b) {
    for (auto* p : b->proxies) b->broadphase.destroyProxy(p, &b->dispatcher);
    delete b;
}

void bullet_bp_add(BulletBroadPhase* b, const float* min, const float* max, int is_static) {
    int group = is_static ? btBroadphaseProxy::StaticFilter : btBroadphaseProxy::DefaultFilter;
    int mask = is_static ? (btBroadphaseProxy::AllFilter ^ btBroadphaseProxy::StaticFilter) : btBroadphaseProxy::AllFilter;
    void* user = reinterpret_cast<void*>(static_cast<intptr_t>(b->proxies.size()));
    b->proxies.push_back(b->broadphase.createProxy(btVector3(min[0], min[1], min[2]), btVector3(max[0], max[1], max[2]),
                                                   BOX_SHAPE_PROXYTYPE, user, group, mask, &b->dispatcher));
}

void bullet_bp_set_aabb(BulletBroadPhase* b, int i, const float* min, const float* max) {
    b->broadphase.setAabb(b->proxies[i], btVector3(min[0], min[1], min[2]), btVector3(max[0], max[1], max[2]), &b->dispatcher);
}

void bullet_bp_update(BulletBroadPhase* b) { b->broadphase.calculateOverlappingPairs(&b->dispatcher); }

int bullet_bp_pair_count(BulletBroadPhase* b) { return b->broadphase.getOverlappingPairCache()->getNumOverlappingPairs(); }

// Writes the pairs as (object, object) indices into `out` (room for 2 * pair_count ints).
void bullet_bp_pairs(BulletBroadPhase* b, int* out) {
    btBroadphasePairArray& pairs = b->broadphase.getOverlappingPairCache()->getOverlappingPairArray();
    for (int k = 0; k < pairs.size(); ++k) {
        out[2 * k] = static_cast<int>(reinterpret_cast<intptr_t>(pairs[k].m_pProxy0->m_clientObject));
        out[2 * k + 1] = static_cast<int>(reinterpret_cast<intptr_t>(pairs[k].m_pProxy1->m_clientObject));
    }
}

}
