// Surface spans (edges, then triangles) against the analytic obstacles: the GPU twin of
// SpanContacts::advance and SpanContacts::detect in src/solver/vbd/spans.rs. One invocation per
// span, by `phase`:
//   0  advance: for a span (near a sphere: only one beyond its body's search radius at x^n),
//      the largest fraction of its body's initial advance x^n → x^(0) that keeps it out
//      (the plane of lib/spans.wgsl separating_normal at x^n), min-reduced per body into
//      body_toi[span_toi..] (vbd_advance's phases 0 and 3 around it reset the fractions and
//      shorten the advance, as the CPU's scale_advance does);
//   1  detect: at x^(0), per box or sphere, the span's record in `updates` (lib/spans.wgsl):
//      an edge within its body's search radius, a triangle with a corner or a cap inside it;
//      the energy scale min(1, excess / δ) where the closest point lies inside, away from the
//      boundary, and dips below the vertices' interpolated distances, else 0 (it only limits
//      the vertices' moves).
// Host wrapper: src/gpu/vbd/vbd_spans.rs; prepended: lib/step.wgsl, lib/obstacles.wgsl,
// lib/spans.wgsl, lib/surface.wgsl.

struct Params {
    phase: u32,
    // Where the span records start in `updates`, and the spans' per-body fractions in
    // `body_toi`.
    span_base: u32,
    span_toi: u32,
    _pad1: u32,
    surface: Surface,
    obstacles: ObstacleSet,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> index: array<u32>;
@group(0) @binding(4) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> updates: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> body_toi: array<atomic<u32>>;

fn span_of(i: u32) -> Span {
    let s = params.surface;
    return span_at(s.surface_edges, s.surface_triangles, s.edge_count, i);
}

fn advance(i: u32, span: Span) {
    var x: array<vec3<f32>, 3>;
    var d: array<vec3<f32>, 3>;
    var moving = false;
    var lo = vec3<f32>(3.4e38);
    var hi = vec3<f32>(-3.4e38);
    for (var k = 0u; k < span.count; k++) {
        x[k] = steps[span.v[k]].start.xyz;
        d[k] = positions[span.v[k]].xyz - x[k];
        moving = moving || any(d[k] != vec3<f32>(0.0));
        lo = min(lo, min(x[k], x[k] + d[k]));
        hi = max(hi, max(x[k], x[k] + d[k]));
    }
    if !moving {
        return;
    }
    var s = 1.0;
    for (var k = 0u; k < params.obstacles.count; k++) {
        let o = params.obstacles.items[k];
        // A span whose swept box misses the obstacle's is not held (its plane could be).
        if !obstacle_has_spans(o) || !obstacle_box_reaches(o, lo, hi, SPAN_GAP) {
            continue;
        }
        var closest: SegmentClosest;
        if span.count == 2u {
            closest = segment_closest(o, x[0], x[1]);
        } else {
            let c = triangle_closest(o, x[0], x[1], x[2]);
            if c.found {
                closest = SegmentClosest(0.0, c.d, c.n);
            } else if o.kind == OBSTACLE_SPHERE {
                // The sphere is nearest one of its edges, whose span holds the move.
                continue;
            } else {
                // No box corner projects inside it: the nearest vertex starts the separating
                // plane's search, which keeps the whole triangle out either way (spans.rs
                // triangle_hint).
                closest = SegmentClosest(0.0, 3.4e38, vec3<f32>(0.0, 1.0, 0.0));
                for (var j = 0u; j < 3u; j++) {
                    let e = obstacle_distance(o, x[j]);
                    if e.d < closest.d {
                        closest = SegmentClosest(0.0, e.d, e.n);
                    }
                }
            }
        }
        // Spans already near a sphere are left to their contacts and limits.
        if o.kind == OBSTACLE_SPHERE && closest.d < search_radius(params.surface, span.v.x) {
            continue;
        }
        let n = separating_normal(o, x, span.count, closest.n);
        let h = obstacle_support(o, n);
        // plane_fraction: no vertex may come within the gap of the plane, nor nearer it than it
        // is where it already is within the gap; one behind it holds nothing (the contact
        // force acts).
        var fraction = 1.0;
        for (var j = 0u; j < span.count; j++) {
            let clearance = dot(n, x[j]) - h;
            if clearance < 0.0 {
                fraction = 1.0;
                break;
            }
            let budget = max(clearance - SPAN_GAP, 0.0);
            let approach = -dot(n, d[j]);
            if approach > budget {
                fraction = min(fraction, budget / approach);
            }
        }
        s = min(s, fraction);
    }
    if s < 1.0 {
        atomicMin(&body_toi[params.span_toi + body_of(params.surface, span.v.x)], time_bits(s));
    }
}

fn detect(i: u32, span: Span) {
    let surf = params.surface;
    let reach = search_radius(surf, span.v.x);
    let offset = surf.offset;
    var x: array<vec3<f32>, 3>;
    for (var k = 0u; k < span.count; k++) {
        x[k] = positions[span.v[k]].xyz;
    }
    for (var k = 0u; k < params.obstacles.count; k++) {
        let o = params.obstacles.items[k];
        var record = vec4<f32>(0.0, 0.0, -1.0, 0.0);
        if obstacle_has_spans(o) {
            if span.count == 2u {
                let c = segment_closest(o, x[0], x[1]);
                if c.d < reach {
                    var scale = 0.0;
                    if c.t > SPAN_END_FRACTION && c.t < 1.0 - SPAN_END_FRACTION {
                        let ends = vec2<f32>(obstacle_distance(o, x[0]).d, obstacle_distance(o, x[1]).d);
                        let excess = max((1.0 - c.t) * ends.x + c.t * ends.y - c.d, 0.0);
                        scale = span_energy_scale(excess, offset);
                    }
                    record = vec4<f32>(1.0 - c.t, c.t, scale, c.d);
                }
            } else {
                let c = triangle_closest(o, x[0], x[1], x[2]);
                if c.found && c.d < reach {
                    if all(c.w > vec3<f32>(SPAN_END_FRACTION)) {
                        let ends = vec3<f32>(obstacle_distance(o, x[0]).d, obstacle_distance(o, x[1]).d,
                                             obstacle_distance(o, x[2]).d);
                        let scale = span_energy_scale(max(dot(c.w, ends) - c.d, 0.0), offset);
                        if scale > 0.0 {
                            record = vec4<f32>(c.w.x, c.w.y, scale, c.d);
                        }
                    } else {
                        // Beside an edge: its edges' contacts act, the triangle limits moves.
                        record = vec4<f32>(c.w.x, c.w.y, 0.0, c.d);
                    }
                }
            }
        }
        updates[span_slot(params.span_base, i, k)] = record;
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i >= params.surface.edge_count + params.surface.triangle_count {
        return;
    }
    let span = span_of(i);
    if params.phase == 0u {
        advance(i, span);
    } else {
        detect(i, span);
    }
}
