// Analytic static obstacles on the GPU: the twin of src/collision/obstacle.rs (signed distance,
// first entry of a straight path, the path clamp and limit_step). Not a kernel: host wrappers
// prepend this file to the kernels that need it (src/gpu/lib/mod.rs compose).
//
// Obstacles ride in each kernel's uniform (src/gpu/obstacles.rs packs them): no storage
// binding is spent on them, and a scene has a handful at most.

const OBSTACLE_PLANE: u32 = 0u;
const OBSTACLE_SPHERE: u32 = 1u;
const OBSTACLE_CUBOID: u32 = 2u;
const MAX_OBSTACLES: u32 = 8u;
// Returned by obstacle_entry when the path never enters.
const NO_ENTRY: f32 = -1.0;

// Plane: a = (outward normal, offset). Sphere: a = (centre, radius). Cuboid: a = (centre, ·),
// b = (half extents, ·), q = rotation (x, y, z, w).
struct Obstacle {
    kind: u32,
    friction: f32,
    _pad0: u32,
    _pad1: u32,
    a: vec4<f32>,
    b: vec4<f32>,
    q: vec4<f32>,
}

struct ObstacleSet {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    items: array<Obstacle, MAX_OBSTACLES>,
}

struct SignedDistance {
    d: f32,
    n: vec3<f32>,
}

struct Clamped {
    hit: bool,
    p: vec3<f32>,
}

fn quat_rotate(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    let t = 2.0 * cross(q.xyz, v);
    return v + q.w * t + cross(q.xyz, t);
}

fn quat_unrotate(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    return quat_rotate(vec4<f32>(-q.xyz, q.w), v);
}

// glam's signum: +1 for +0.
fn signum3(v: vec3<f32>) -> vec3<f32> {
    return select(vec3<f32>(-1.0), vec3<f32>(1.0), v >= vec3<f32>(0.0));
}

fn obstacle_distance(o: Obstacle, p: vec3<f32>) -> SignedDistance {
    switch o.kind {
        case OBSTACLE_PLANE: {
            return SignedDistance(dot(o.a.xyz, p) - o.a.w, o.a.xyz);
        }
        case OBSTACLE_SPHERE: {
            let d = p - o.a.xyz;
            let l = length(d);
            var n = vec3<f32>(0.0, 1.0, 0.0);
            if l > 0.0 {
                n = d / l;
            }
            return SignedDistance(l - o.a.w, n);
        }
        default: {
            let local = quat_unrotate(o.q, p - o.a.xyz);
            let q = abs(local) - o.b.xyz;
            let sgn = signum3(local);
            let outside = max(q, vec3<f32>(0.0));
            let lo = length(outside);
            if lo > 0.0 {
                return SignedDistance(lo, quat_rotate(o.q, outside * sgn / lo));
            }
            // Inside: the nearest face is along the axis of the largest q.
            var axis = vec3<f32>(0.0, 0.0, 1.0);
            if q.x >= q.y && q.x >= q.z {
                axis = vec3<f32>(1.0, 0.0, 0.0);
            } else if q.y >= q.z {
                axis = vec3<f32>(0.0, 1.0, 0.0);
            }
            return SignedDistance(max(q.x, max(q.y, q.z)), quat_rotate(o.q, axis * sgn));
        }
    }
}

// First t in [0, 1] at which a + t (b − a) touches the solid, or NO_ENTRY (also for a start
// point already inside).
fn obstacle_entry(o: Obstacle, a: vec3<f32>, b: vec3<f32>) -> f32 {
    let d = b - a;
    switch o.kind {
        case OBSTACLE_PLANE: {
            let sa = dot(o.a.xyz, a) - o.a.w;
            let sb = dot(o.a.xyz, b) - o.a.w;
            if sa < 0.0 || sb >= 0.0 {
                return NO_ENTRY;
            }
            return sa / (sa - sb);
        }
        case OBSTACLE_SPHERE: {
            let m = a - o.a.xyz;
            let c = dot(m, m) - o.a.w * o.a.w;
            let dd = dot(d, d);
            if c < 0.0 || dd == 0.0 {
                return NO_ENTRY;
            }
            let bq = dot(m, d);
            let disc = bq * bq - dd * c;
            if bq >= 0.0 || disc < 0.0 {
                return NO_ENTRY;
            }
            let t = (-bq - sqrt(disc)) / dd;
            if t > 1.0 {
                return NO_ENTRY;
            }
            return max(t, 0.0);
        }
        default: {
            let la = quat_unrotate(o.q, a - o.a.xyz);
            let ld = quat_unrotate(o.q, d);
            let h = o.b.xyz;
            let qa = abs(la) - h;
            if max(qa.x, max(qa.y, qa.z)) < 0.0 {
                return NO_ENTRY;
            }
            // Slab test; an empty or single-point overlap is a touch, not an entry.
            var t0 = 0.0;
            var t1 = 1.0;
            for (var k = 0u; k < 3u; k++) {
                if abs(ld[k]) < 1e-20 {
                    if abs(la[k]) >= h[k] {
                        return NO_ENTRY;
                    }
                } else {
                    let inv_d = 1.0 / ld[k];
                    let ta = (-h[k] - la[k]) * inv_d;
                    let tb = (h[k] - la[k]) * inv_d;
                    t0 = max(t0, min(ta, tb));
                    t1 = min(t1, max(ta, tb));
                    if t0 >= t1 {
                        return NO_ENTRY;
                    }
                }
            }
            return t0;
        }
    }
}

// Limits a vertex step a → b so that it ends outside the solid (Obstacle::clamp_path: keep the
// tangential motion, never deeper for a vertex already inside).
fn obstacle_clamp_path(o: Obstacle, a: vec3<f32>, b: vec3<f32>) -> Clamped {
    let sa = obstacle_distance(o, a);
    if sa.d < 0.0 {
        let sb = obstacle_distance(o, b);
        return Clamped(sb.d < sa.d, b + sb.n * (sa.d - sb.d));
    }
    let t = obstacle_entry(o, a, b);
    if t == NO_ENTRY {
        // f32 rounding in the entry test can miss a path that ends a hair inside.
        let sb = obstacle_distance(o, b);
        if sb.d >= 0.0 {
            return Clamped(false, b);
        }
        let p = b - sb.n * (sb.d * 2.0);
        if obstacle_distance(o, p).d >= 0.0 {
            return Clamped(true, p);
        }
        return Clamped(true, a);
    }
    let entry = a + (b - a) * t;
    let n = obstacle_distance(o, entry).n;
    let sb = obstacle_distance(o, b);
    var p: vec3<f32>;
    if sb.d < 0.0 && dot(sb.n, n) > 0.5 {
        p = b - sb.n * sb.d;
    } else {
        p = b - n * min(dot(b - entry, n), 0.0);
    }
    let sp = obstacle_distance(o, p);
    if sp.d < 0.0 {
        p -= sp.n * (sp.d * 2.0);
    }
    if obstacle_distance(o, p).d >= 0.0 {
        return Clamped(true, p);
    }
    let stop = a + (b - a) * (t * (1.0 - 1e-4));
    if obstacle_distance(o, stop).d >= 0.0 {
        return Clamped(true, stop);
    }
    return Clamped(true, a);
}

fn obstacle_entered(o: Obstacle, a: vec3<f32>, p: vec3<f32>) -> bool {
    return obstacle_distance(o, p).d < 0.0 && obstacle_distance(o, a).d >= 0.0;
}

// limit_step: clamp against every obstacle, then push the end point out of any obstacle the
// vertex started outside of (at most four rounds; then the vertex stays at a).
fn limit_step(obstacles: ObstacleSet, a: vec3<f32>, b: vec3<f32>) -> vec3<f32> {
    var end = b;
    for (var k = 0u; k < obstacles.count; k++) {
        let c = obstacle_clamp_path(obstacles.items[k], a, end);
        if c.hit {
            end = c.p;
        }
    }
    for (var round = 0u; round < 5u; round++) {
        var found = false;
        for (var k = 0u; k < obstacles.count; k++) {
            let o = obstacles.items[k];
            if obstacle_entered(o, a, end) {
                if round == 4u {
                    return a;
                }
                let s = obstacle_distance(o, end);
                end -= s.n * (s.d * 2.0);
                found = true;
                break;
            }
        }
        if !found {
            return end;
        }
    }
    return end;
}
