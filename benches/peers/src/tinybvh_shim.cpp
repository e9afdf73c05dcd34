// tinybvh's BVH8_CPU behind a C interface, called the way its own speed test calls it: a plain
// loop of `Intersect` / `IsOccluded` over one `Ray` per record, each constructed from the record
// (the constructor normalises the direction and takes its reciprocal, tinybvh's ray set-up).
#define TINYBVH_IMPLEMENTATION
#include "tiny_bvh.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace tinybvh;

namespace {

// The BVH keeps pointers into the vertex array it was built from, so both live together.
struct Peer {
    std::vector<bvhvec4> vertices;
    BVH8_CPU bvh;
};

// A shared-scenes ray record (ox oy oz tmin dx dy dz tmax). tinybvh has no tmin (it is 0 in every
// shared file) and takes BVH_FAR for an unbounded ray.
inline Ray make_ray(const float* r) {
    const float tmax = std::isinf(r[7]) ? BVH_FAR : r[7];
    return Ray(bvhvec3(r[0], r[1], r[2]), bvhvec3(r[4], r[5], r[6]), tmax);
}

}  // namespace

extern "C" {

// Builds a BVH8_CPU (its binned `Build`, or with `hq` its `BuildHQ`, spatial splits) over
// `triangles` triangles of 9 floats each.
void* tinybvh_build(const float* xyz, uint32_t triangles, bool hq) {
    Peer* peer = new Peer();
    peer->vertices.resize(size_t(triangles) * 3);
    for (size_t i = 0; i < peer->vertices.size(); i++) {
        peer->vertices[i] = bvhvec4(xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2], 0.0f);
    }
    if (hq) {
        peer->bvh.BuildHQ(peer->vertices.data(), triangles);
    } else {
        peer->bvh.Build(peer->vertices.data(), triangles);
    }
    return peer;
}

void tinybvh_free(void* peer) { delete static_cast<Peer*>(peer); }

// Closest hits of `n` rays (8 floats each) into `out` (t, prim as bits, u, v per ray; a miss is
// t = +inf, prim = -1). Returns the number of hits.
size_t tinybvh_intersect(const void* peer, const float* rays, size_t n, float* out) {
    const BVH8_CPU& bvh = static_cast<const Peer*>(peer)->bvh;
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        Ray ray = make_ray(rays + 8 * i);
        const float tmax = ray.hit.t;
        bvh.Intersect(ray);
        const bool hit = ray.hit.t < tmax;
        const int32_t prim = hit ? int32_t(ray.hit.prim) : -1;
        float* o = out + 4 * i;
        o[0] = hit ? ray.hit.t : INFINITY;
        std::memcpy(&o[1], &prim, 4);
        o[2] = hit ? ray.hit.u : 0.0f;
        o[3] = hit ? ray.hit.v : 0.0f;
        hits += hit;
    }
    return hits;
}

// Occlusion of `n` rays into `out` (1 when occluded). Returns the number occluded.
size_t tinybvh_occluded(const void* peer, const float* rays, size_t n, uint8_t* out) {
    const BVH8_CPU& bvh = static_cast<const Peer*>(peer)->bvh;
    size_t occluded = 0;
    for (size_t i = 0; i < n; i++) {
        const bool o = bvh.IsOccluded(make_ray(rays + 8 * i));
        out[i] = o;
        occluded += o;
    }
    return occluded;
}

}  // extern "C"
