// Exact distances between surface primitives and additive CCD on the GPU: the twins of
// src/math/distance.rs (point_triangle, edge_edge) and src/collision/ccd.rs (the ACCD
// march). Not a kernel: host wrappers prepend this file (src/gpu/lib/mod.rs compose).
//
// Both pair kinds minimise ‖r‖², r = Σ w_k x_k, over a convex parameter domain: the interior
// solution when it exists and is well conditioned, else the least of the boundary's
// point–segment candidates. Positions are taken relative to the first vertex (the weights sum
// to zero), as on the CPU.

const PAIR_POINT_TRIANGLE: u32 = 0u;
const PAIR_EDGE_EDGE: u32 = 1u;
// src/math/distance.rs WELL_CONDITIONED.
const WELL_CONDITIONED: f32 = 1e-4;
// Returned by the CCD march when the motion is certified to stay apart.
const NO_TOI: f32 = 3.0e38;

struct Closest {
    distance: f32,
    // (P − Q) / distance, unit; a finite fallback when the distance is 0.
    normal: vec3<f32>,
    // P − Q = Σ_k weights[k] x_k.
    weights: vec4<f32>,
}

// A candidate minimiser: its weights and ‖r‖².
struct Feature {
    w: vec4<f32>,
    sq: f32,
}

struct Unit {
    ok: bool,
    length: f32,
    dir: vec3<f32>,
}

fn combine4(w: vec4<f32>, y: array<vec3<f32>, 4>) -> vec3<f32> {
    return y[0] * w.x + y[1] * w.y + y[2] * w.z + y[3] * w.w;
}

// Length and direction of v, scaled by its largest component first (no under- or overflow).
fn unit3(v: vec3<f32>) -> Unit {
    let m = max(abs(v.x), max(abs(v.y), abs(v.z)));
    if m == 0.0 {
        return Unit(false, 0.0, vec3<f32>(0.0));
    }
    let s = v / m;
    let l = length(s);
    return Unit(true, m * l, s / l);
}

// A unit normal for touching primitives (src/math/distance.rs fallback_normal).
fn fallback_normal(n: vec3<f32>, ea: vec3<f32>, eb: vec3<f32>) -> vec3<f32> {
    let un = unit3(n);
    if un.ok {
        return un.dir;
    }
    var e = eb;
    if dot(ea, ea) >= dot(eb, eb) {
        e = ea;
    }
    let a = abs(e);
    var axis = vec3<f32>(0.0, 0.0, 1.0);
    if a.x <= a.y && a.x <= a.z {
        axis = vec3<f32>(1.0, 0.0, 0.0);
    } else if a.y <= a.z {
        axis = vec3<f32>(0.0, 1.0, 0.0);
    }
    let u = unit3(cross(e, axis));
    if u.ok {
        return u.dir;
    }
    return vec3<f32>(0.0, 0.0, 1.0);
}

// Closest point of segment (y[si], y[sj]) to vertex y[p]; sign +1 when the vertex belongs to
// the pair's first primitive, −1 when it belongs to the second.
fn point_segment(y_in: array<vec3<f32>, 4>, p: u32, si: u32, sj: u32, sign: f32) -> Feature {
    // Indexed at run time: a function variable, not a value.
    var y = y_in;
    let e = y[sj] - y[si];
    let q = y[p] - y[si];
    let len2 = dot(e, e);
    let along = dot(q, e);
    var t = 0.0;
    if !(len2 > 0.0) || !(along > 0.0) {
        t = 0.0;
    } else if along >= len2 {
        t = 1.0;
    } else {
        t = along / len2;
    }
    var w = vec4<f32>(0.0);
    w[p] = sign;
    w[si] = -sign * (1.0 - t);
    w[sj] = -sign * t;
    let r = q - e * t;
    return Feature(w, dot(r, r));
}

fn least_of(best_in: Feature, c: Feature) -> Feature {
    if c.sq < best_in.sq {
        return c;
    }
    return best_in;
}

fn closest_from(y: array<vec3<f32>, 4>, w: vec4<f32>, ea: vec3<f32>, eb: vec3<f32>) -> Closest {
    let r = combine4(w, y);
    let u = unit3(r);
    if u.ok {
        return Closest(u.length, u.dir, w);
    }
    return Closest(0.0, fallback_normal(cross(ea, eb), ea, eb), w);
}

// Closest points of point x0 and triangle (x1, x2, x3).
fn point_triangle(x0: vec3<f32>, x1: vec3<f32>, x2: vec3<f32>, x3: vec3<f32>) -> Closest {
    let y = array<vec3<f32>, 4>(vec3<f32>(0.0), x1 - x0, x2 - x0, x3 - x0);
    let e0 = y[2] - y[1];
    let e1 = y[3] - y[1];
    let q = y[0] - y[1];
    let n = cross(e0, e1);
    let n2 = dot(n, n);
    var have_interior = false;
    var best = Feature(vec4<f32>(0.0), 0.0);
    if n2 > 0.0 {
        let b1 = dot(cross(q, e1), n) / n2;
        let b2 = dot(cross(e0, q), n) / n2;
        if b1 >= 0.0 && b2 >= 0.0 && b1 + b2 <= 1.0 {
            let w = vec4<f32>(1.0, b1 + b2 - 1.0, -b1, -b2);
            if n2 >= WELL_CONDITIONED * dot(e0, e0) * dot(e1, e1) {
                return closest_from(y, w, e0, e1);
            }
            let r = combine4(w, y);
            best = Feature(w, dot(r, r));
            have_interior = true;
        }
    }
    let a = point_segment(y, 0u, 1u, 2u, 1.0);
    if !have_interior {
        best = a;
    }
    best = least_of(best, a);
    best = least_of(best, point_segment(y, 0u, 2u, 3u, 1.0));
    best = least_of(best, point_segment(y, 0u, 3u, 1u, 1.0));
    return closest_from(y, best.w, e0, e1);
}

// Closest points of segments (x0, x1) and (x2, x3).
fn edge_edge(x0: vec3<f32>, x1: vec3<f32>, x2: vec3<f32>, x3: vec3<f32>) -> Closest {
    let y = array<vec3<f32>, 4>(vec3<f32>(0.0), x1 - x0, x2 - x0, x3 - x0);
    let ea = y[1] - y[0];
    let eb = y[3] - y[2];
    let w0 = y[2] - y[0];
    let n = cross(ea, eb);
    let n2 = dot(n, n);
    var have_interior = false;
    var best = Feature(vec4<f32>(0.0), 0.0);
    if n2 > 0.0 {
        let s = dot(cross(w0, eb), n) / n2;
        let u = dot(cross(w0, ea), n) / n2;
        if s >= 0.0 && s <= 1.0 && u >= 0.0 && u <= 1.0 {
            let w = vec4<f32>(1.0 - s, s, u - 1.0, -u);
            if n2 >= WELL_CONDITIONED * dot(ea, ea) * dot(eb, eb) {
                return closest_from(y, w, ea, eb);
            }
            let r = combine4(w, y);
            best = Feature(w, dot(r, r));
            have_interior = true;
        }
    }
    let a = point_segment(y, 0u, 2u, 3u, 1.0);
    if !have_interior {
        best = a;
    }
    best = least_of(best, a);
    best = least_of(best, point_segment(y, 1u, 2u, 3u, 1.0));
    best = least_of(best, point_segment(y, 2u, 0u, 1u, -1.0));
    best = least_of(best, point_segment(y, 3u, 0u, 1u, -1.0));
    return closest_from(y, best.w, ea, eb);
}

// Closest points of a pair of `kind` (PAIR_*), vertices in pair order.
fn closest_pair(kind: u32, x: array<vec3<f32>, 4>) -> Closest {
    if kind == PAIR_POINT_TRIANGLE {
        return point_triangle(x[0], x[1], x[2], x[3]);
    }
    return edge_edge(x[0], x[1], x[2], x[3]);
}

// Infinity or NaN, by bits (comparisons with NaN may be folded away by a shader compiler).
fn non_finite_f32(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) == 0x7f800000u;
}

// Additive CCD (src/collision/ccd.rs additive): the earliest time t ∈ [0, t_max] at which the
// pair may come within ξ under the linear motion x + t dx; 0 when already that close, NO_TOI
// when the motion is certified to stay farther apart. Conservative: the closest points approach
// at most at l_p, and every advance is 0.9 of the current gap over l_p.
fn pair_toi(kind: u32, x: array<vec3<f32>, 4>, dx: array<vec3<f32>, 4>, xi: f32, safety: f32,
            max_iterations: u32, t_max: f32) -> f32 {
    let d0 = closest_pair(kind, x).distance;
    let gap0 = d0 - xi;
    if non_finite_f32(d0) || !(gap0 > 0.0) {
        return 0.0;
    }
    let mean = (dx[0] + dx[1] + dx[2] + dx[3]) * 0.25;
    let p = array<vec3<f32>, 4>(dx[0] - mean, dx[1] - mean, dx[2] - mean, dx[3] - mean);
    let l = vec4<f32>(length(p[0]), length(p[1]), length(p[2]), length(p[3]));
    var lp = 0.0;
    if kind == PAIR_POINT_TRIANGLE {
        lp = l.x + max(l.y, max(l.z, l.w));
    } else {
        lp = max(l.x, l.y) + max(l.z, l.w);
    }
    if non_finite_f32(lp) {
        return 0.0;
    }
    if lp == 0.0 {
        return NO_TOI;
    }
    let stop = safety * gap0;
    var t = 0.0;
    var advance = (1.0 - safety) * gap0 / lp;
    for (var i = 0u; i < max_iterations; i++) {
        let ahead = t + advance;
        let y = array<vec3<f32>, 4>(x[0] + p[0] * ahead, x[1] + p[1] * ahead, x[2] + p[2] * ahead,
                                    x[3] + p[3] * ahead);
        let d = closest_pair(kind, y).distance;
        let gap = d - xi;
        if non_finite_f32(d) || !(gap > 0.0) || (t > 0.0 && gap < stop) {
            return t;
        }
        t = ahead;
        if t > t_max {
            return NO_TOI;
        }
        advance = 0.9 * gap / lp;
    }
    return t;
}
