// Spans (surface edges and triangles) against the analytic obstacles: the twin of
// src/collision/closest.rs (segment_closest, triangle_closest, support, separating_plane) and of
// the span contact records of src/solver/vbd/spans.rs. Not a kernel: host wrappers prepend this
// file, after lib/obstacles.wgsl, to the kernels that need it (vbd_spans, vbd_color).
//
// Span contacts ride in `updates` after its per-vertex entries: one vec4 per span and obstacle,
// `updates[span_base + span * MAX_OBSTACLES + k]` = (w0, w1, scale, distance) with w2 = 1 − w0 − w1
// for a triangle (an edge's w1 is its parameter t); `scale` < 0 marks no span there (the colour
// pass is at the eight storage buffers a stage may bind).

// Distance [m] a limited span keeps from the obstacle (src/solver/vbd/spans.rs GAP).
const SPAN_GAP: f32 = 1e-5;
// Closest points nearer a vertex or a triangle's boundary than this fraction are not inside.
const SPAN_END_FRACTION: f32 = 0.02;
// spans.rs energy_scale: min(1, excess / δ).
fn span_energy_scale(excess: f32, offset: f32) -> f32 {
    return clamp(excess / offset, 0.0, 1.0);
}

// Samples and golden-section rounds of a segment's closest point to a box.
const SEGMENT_SAMPLES: u32 = 9u;
const GOLDEN_ROUNDS: u32 = 16u;
const INV_PHI: f32 = 0.618034;

struct SegmentClosest {
    t: f32,
    d: f32,
    n: vec3<f32>,
}

struct TriangleClosest {
    found: bool,
    w: vec3<f32>,
    d: f32,
    n: vec3<f32>,
}

// Obstacle::tests_edges for the analytic shapes: boxes and spheres (a plane's distance is linear).
fn obstacle_has_spans(o: Obstacle) -> bool {
    return o.kind == OBSTACLE_SPHERE || o.kind == OBSTACLE_CUBOID;
}

fn segment_closest(o: Obstacle, a: vec3<f32>, b: vec3<f32>) -> SegmentClosest {
    let sa = obstacle_distance(o, a);
    let sb = obstacle_distance(o, b);
    // A convex solid's distance rising from an end into the segment has its minimum there.
    if dot(sa.n, b - a) >= 0.0 {
        return SegmentClosest(0.0, sa.d, sa.n);
    }
    if dot(sb.n, a - b) >= 0.0 {
        return SegmentClosest(1.0, sb.d, sb.n);
    }
    let ab = b - a;
    if o.kind == OBSTACLE_SPHERE {
        let t = clamp(dot(o.a.xyz - a, ab) / dot(ab, ab), 0.0, 1.0);
        if t == t {
            let s = obstacle_distance(o, a + ab * t);
            return SegmentClosest(t, s.d, s.n);
        }
    }
    var best = 0u;
    var best_d = sa.d;
    for (var k = 1u; k < SEGMENT_SAMPLES; k++) {
        let dk = obstacle_distance(o, a + ab * (f32(k) / f32(SEGMENT_SAMPLES - 1u))).d;
        if dk < best_d {
            best = k;
            best_d = dk;
        }
    }
    let step = 1.0 / f32(SEGMENT_SAMPLES - 1u);
    var lo = max(f32(best) - 1.0, 0.0) * step;
    var hi = min(f32(best) + 1.0, f32(SEGMENT_SAMPLES - 1u)) * step;
    var t1 = hi - INV_PHI * (hi - lo);
    var t2 = lo + INV_PHI * (hi - lo);
    var f1 = obstacle_distance(o, a + ab * t1).d;
    var f2 = obstacle_distance(o, a + ab * t2).d;
    for (var r = 0u; r < GOLDEN_ROUNDS; r++) {
        if f1 <= f2 {
            hi = t2;
            t2 = t1;
            f2 = f1;
            t1 = hi - INV_PHI * (hi - lo);
            f1 = obstacle_distance(o, a + ab * t1).d;
        } else {
            lo = t1;
            t1 = t2;
            f1 = f2;
            t2 = lo + INV_PHI * (hi - lo);
            f2 = obstacle_distance(o, a + ab * t2).d;
        }
    }
    var t = t2;
    var found = f2;
    if f1 <= f2 {
        t = t1;
        found = f1;
    }
    if best_d < found {
        t = f32(best) * step;
    }
    let s = obstacle_distance(o, a + ab * t);
    return SegmentClosest(t, s.d, s.n);
}

// Obstacle::box_reaches: whether the box lo..hi widened by r overlaps the obstacle's bounding
// box (a sphere's or a box's).
fn obstacle_box_reaches(o: Obstacle, lo: vec3<f32>, hi: vec3<f32>, r: f32) -> bool {
    var reach = vec3<f32>(o.a.w);
    if o.kind == OBSTACLE_CUBOID {
        reach = abs(quat_rotate(o.q, vec3<f32>(1.0, 0.0, 0.0))) * o.b.x
            + abs(quat_rotate(o.q, vec3<f32>(0.0, 1.0, 0.0))) * o.b.y
            + abs(quat_rotate(o.q, vec3<f32>(0.0, 0.0, 1.0))) * o.b.z;
    }
    return !(any(hi + vec3<f32>(r) < o.a.xyz - reach) || any(lo - vec3<f32>(r) > o.a.xyz + reach));
}

// Max of n·y over the solid (sphere or box).
fn obstacle_support(o: Obstacle, n: vec3<f32>) -> f32 {
    if o.kind == OBSTACLE_SPHERE {
        return dot(n, o.a.xyz) + o.a.w * length(n);
    }
    return dot(n, o.a.xyz) + dot(abs(quat_unrotate(o.q, n)), o.b.xyz);
}

fn box_corner(o: Obstacle, k: u32) -> vec3<f32> {
    let s = vec3<f32>(select(-1.0, 1.0, (k & 1u) != 0u), select(-1.0, 1.0, (k & 2u) != 0u),
                      select(-1.0, 1.0, (k & 4u) != 0u));
    return o.a.xyz + quat_rotate(o.q, o.b.xyz * s);
}

fn triangle_closest(o: Obstacle, a: vec3<f32>, b: vec3<f32>, c: vec3<f32>) -> TriangleClosest {
    var best = TriangleClosest(false, vec3<f32>(0.0), 0.0, vec3<f32>(0.0));
    let n = cross(b - a, c - a);
    let area2 = dot(n, n);
    if !(area2 > 0.0) || o.kind == OBSTACLE_PLANE {
        return best;
    }
    var count = 8u;
    if o.kind == OBSTACLE_SPHERE {
        count = 1u;
    }
    for (var k = 0u; k < count; k++) {
        var q = o.a.xyz;
        if o.kind == OBSTACLE_CUBOID {
            q = box_corner(o, k);
        }
        let p = q - n * (dot(n, q - a) / area2);
        let w = vec3<f32>(dot(n, cross(b - p, c - p)), dot(n, cross(c - p, a - p)), dot(n, cross(a - p, b - p))) / area2;
        if all(w >= vec3<f32>(0.0)) {
            let s = obstacle_distance(o, p);
            if !best.found || s.d < best.d {
                best = TriangleClosest(true, w, s.d, s.n);
            }
        }
    }
    return best;
}

// A separating plane of a span (count 2 or 3 vertices x) and a box or sphere: the candidate
// normal keeping the span furthest in front (closest.rs separating_plane). Returns the normal;
// the clearances are dot(n, x) − obstacle_support(o, n).
fn separating_normal(o: Obstacle, x: array<vec3<f32>, 3>, count: u32, normal: vec3<f32>) -> vec3<f32> {
    var best_n = normal;
    var best_low = -3.4e38;
    var candidates: array<vec3<f32>, 14>;
    var m = 0u;
    candidates[m] = normal;
    m += 1u;
    if o.kind == OBSTACLE_CUBOID {
        for (var i = 0u; i < 3u; i++) {
            var e = vec3<f32>(0.0);
            e[i] = 1.0;
            let axis = quat_rotate(o.q, e);
            candidates[m] = axis;
            m += 1u;
            for (var k = 0u; k < count; k++) {
                candidates[m] = cross(x[(k + 1u) % count] - x[k], axis);
                m += 1u;
            }
        }
        if count == 3u {
            candidates[m] = cross(x[1] - x[0], x[2] - x[0]);
            m += 1u;
        }
    }
    for (var j = 0u; j < m; j++) {
        let l = length(candidates[j]);
        if !(l > 0.0) {
            continue;
        }
        for (var sign = 0u; sign < 2u; sign++) {
            let n = candidates[j] / l * select(1.0, -1.0, sign == 1u);
            let h = obstacle_support(o, n);
            var low = 3.4e38;
            for (var k = 0u; k < count; k++) {
                low = min(low, dot(n, x[k]) - h);
            }
            if low > best_low {
                best_low = low;
                best_n = n;
            }
        }
    }
    return best_n;
}

// The record of span `span` against obstacle `k`.
fn span_slot(base: u32, span: u32, k: u32) -> u32 {
    return base + span * MAX_OBSTACLES + k;
}

// A span: its vertices (an edge's third repeats its second) and their count.
struct Span {
    v: vec3<u32>,
    count: u32,
}

// Span `i` of the packed surface: an edge below `edge_count` (two u32 each from word `edges` of
// `index`), then the triangles (three each from word `triangles`). Reads the kernel's `index`.
fn span_at(edges: u32, triangles: u32, edge_count: u32, i: u32) -> Span {
    if i < edge_count {
        let k = edges + 2u * i;
        return Span(vec3<u32>(index[k], index[k + 1u], index[k + 1u]), 2u);
    }
    let k = triangles + 3u * (i - edge_count);
    return Span(vec3<u32>(index[k], index[k + 1u], index[k + 2u]), 3u);
}

// The barycentric weights of a span record (w0, w1, ·, ·).
fn span_weights(record: vec4<f32>, count: u32) -> vec3<f32> {
    if count == 2u {
        return vec3<f32>(record.x, record.y, 0.0);
    }
    return vec3<f32>(record.x, record.y, 1.0 - record.x - record.y);
}
