// One VBD colour pass over tet vertices by gather, one invocation per vertex of the colour:
// the GPU twin of the elastic and inertia part of update_vertex in src/solver/vbd_vertex.rs
// (stable neo-Hookean tets, inertia with gravity). Vertices of one colour share no element, so
// each invocation writes its own position in place while the others read only other colours.
// Not yet on the GPU: Rayleigh and linear damping, membranes and hinges, obstacles, contact and
// the displacement bound. Host wrapper: src/gpu/kernels/vbd_color.rs.

struct Params {
    // First entry of this colour in color_vertices, and its vertex count.
    first: u32,
    count: u32,
    // Where the adjacency entries start in `adjacency` (after the n + 1 row offsets).
    entries: u32,
    _pad: u32,
}

struct VertexStep {
    predictor: vec4<f32>,
    inertia: vec4<f32>,
    velocity: vec4<f32>,
    offset: vec4<f32>,
}

// src/state.rs TetElement: 80 bytes.
struct Tet {
    vertices: vec4<u32>,
    dm_inv: mat3x3<f32>,
    volume: f32,
    material: u32,
    _pad: vec2<u32>,
}

// src/state.rs MaterialRecord.
struct Material {
    model: u32,
    mu: f32,
    lambda: f32,
    damping: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> start: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(4) var<storage, read> color_vertices: array<u32>;
@group(0) @binding(5) var<storage, read> adjacency: array<u32>;
@group(0) @binding(6) var<storage, read> tets: array<Tet>;
@group(0) @binding(7) var<storage, read> materials: array<Material>;

fn outer3(a: vec3<f32>, b: vec3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(a * b.x, a * b.y, a * b.z);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= params.count {
        return;
    }
    let v = color_vertices[params.first + id.x];
    let x = positions[v].xyz;
    let s = steps[v];
    // Inertia with gravity, −m/w (x − y), written with displacements from x^n.
    let dx = x - start[v].xyz;
    let m_over_w = s.inertia.w;
    var f = (s.inertia.xyz - dx) * m_over_w;
    var h = mat3x3<f32>(vec3<f32>(m_over_w, 0.0, 0.0), vec3<f32>(0.0, m_over_w, 0.0), vec3<f32>(0.0, 0.0, m_over_w));
    for (var k = adjacency[v]; k < adjacency[v + 1u]; k++) {
        let entry = adjacency[params.entries + k];
        let t = tets[entry >> 2u];
        let slot = entry & 3u;
        let x0 = positions[t.vertices.x].xyz;
        let ff = mat3x3<f32>(positions[t.vertices.y].xyz - x0, positions[t.vertices.z].xyz - x0,
                             positions[t.vertices.w].xyz - x0) * t.dm_inv;
        // Shape gradient of the slot: rows of D_m⁻¹, the first vertex minus their sum.
        let rows = transpose(t.dm_inv);
        var g = -(rows[0] + rows[1] + rows[2]);
        if slot > 0u {
            g = rows[slot - 1u];
        }
        let m = materials[t.material];
        // Stable neo-Hookean vertex terms (src/material/stable_neo_hookean.rs vertex_terms).
        let c1 = cross(ff[1], ff[2]);
        let c2 = cross(ff[2], ff[0]);
        let c3 = cross(ff[0], ff[1]);
        let j = dot(ff[0], c1);
        let c = c1 * g.x + c2 * g.y + c3 * g.z;
        let sc = m.lambda * (j - (1.0 + m.mu / m.lambda));
        f -= ((ff * g) * m.mu + c * sc) * t.volume;
        let d = m.mu * dot(g, g);
        h += (mat3x3<f32>(vec3<f32>(d, 0.0, 0.0), vec3<f32>(0.0, d, 0.0), vec3<f32>(0.0, 0.0, d))
            + outer3(c, c) * m.lambda) * t.volume;
    }
    // Symmetric 3×3 solve through the adjugate, with src/math/sym3.rs's singularity guard.
    let a0 = cross(h[1], h[2]);
    let a1 = cross(h[2], h[0]);
    let a2 = cross(h[0], h[1]);
    let det = dot(h[0], a0);
    let tr = (h[0].x + h[1].y + h[2].z) * (1.0 / 3.0);
    if !(abs(det) > 1e-6 * abs(tr * tr * tr)) {
        return;
    }
    let step = vec3<f32>(dot(a0, f), dot(a1, f), dot(a2, f)) * (1.0 / det);
    positions[v] = vec4<f32>(x + step, 0.0);
}
