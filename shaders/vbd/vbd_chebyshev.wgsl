// Chebyshev over-relaxation after a VBD sweep, one invocation per free vertex: the GPU twin of
// the mix in src/solver/vbd/sweep.rs (src/solver/vbd/chebyshev.rs mix), with the history shift
// x_{n−2} ← x_{n−1} ← x. Bodies flagged frozen (in contact, or diverging) keep the plain
// Gauss–Seidel result, and so do the vertices of detected spans (lib/spans.wgsl), whose limit
// assumes the span's other vertices hold still; the mixed position is held within the
// surface-contact displacement bound and clamped against the obstacles like a vertex step.
// Host wrapper: src/gpu/vbd/vbd_chebyshev.rs; prepended: lib/obstacles.wgsl, lib/spans.wgsl,
// lib/distance.wgsl, lib/mat3.wgsl, lib/friction.wgsl,
// lib/contact_layout.wgsl, lib/contact.wgsl.

struct Params {
    omega: f32,
    count: u32,
    // Where vertex_body starts in `index` (the free vertices, color_vertices, start it).
    vertex_body: u32,
    // Where the per-body frozen flags start in `control`.
    frozen: u32,
    // 1: span records start at `updates[span_base]`; the vertex → span adjacency in `index`.
    spans: u32,
    span_base: u32,
    span_offsets: u32,
    span_entries: u32,
    bounds: SurfaceBounds,
    obstacles: ObstacleSet,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> previous: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> before_previous: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> index: array<u32>;
@group(0) @binding(5) var<storage, read_write> control: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read> contacts: array<u32>;
@group(0) @binding(7) var<storage, read> updates: array<vec4<f32>>;

// Whether a span of vertex v was detected near a box or a sphere.
fn in_a_span(v: u32) -> bool {
    for (var e = index[params.span_offsets + v]; e < index[params.span_offsets + v + 1u]; e++) {
        let i = index[params.span_entries + e] >> 2u;
        for (var k = 0u; k < params.obstacles.count; k++) {
            if updates[span_slot(params.span_base, i, k)].z >= 0.0 {
                return true;
            }
        }
    }
    return false;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= params.count {
        return;
    }
    let v = index[id.x];
    let x_bar = positions[v].xyz;
    var x = x_bar;
    let held = params.spans == 1u && in_a_span(v);
    if atomicLoad(&control[params.frozen + index[params.vertex_body + v]]) == 0u && !held {
        let x_nm2 = before_previous[v].xyz;
        var mixed = (x_bar - x_nm2) * params.omega + x_nm2;
        if params.bounds.enabled != 0u {
            let within = limit_move(params.bounds.contact, params.bounds.min_separation, v, mixed);
            if any(within != mixed) {
                atomicStore(&control[CONTROL_BOUND_HIT], 1u);
            }
            mixed = within;
        }
        x = limit_step(params.obstacles, x_bar, mixed);
    }
    let x4 = vec4<f32>(x, 0.0);
    positions[v] = x4;
    before_previous[v] = previous[v];
    previous[v] = x4;
}
