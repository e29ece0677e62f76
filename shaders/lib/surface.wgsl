// The collision surface as the contact kernels read it: where its tables start in the packed
// `index` buffer and the body records in `records` (src/gpu/pack.rs), the per-body search
// radius, and which primitive pairs may touch (src/collision/surface_pairs.rs pair_allowed,
// src/collision/surface_pairs.rs search_radius). Not a kernel: host wrappers prepend this file to
// kernels that bind `index` and `records`.

struct Surface {
    // Word offsets in `index`, and the table lengths.
    vertex_body: u32,
    surface_vertices: u32,
    surface_vertex_count: u32,
    surface_triangles: u32,
    triangle_count: u32,
    surface_edges: u32,
    edge_count: u32,
    // First body record in `records` (vec4s; two per body).
    bodies: u32,
    // Contact offset δ and minimum separation ξ [m]; the smallest search radius of any body
    // [m]; pairs closer than store_limit [m] are stored, the rest only bound their vertices.
    offset: f32,
    min_separation: f32,
    radius_min: f32,
    store_limit: f32,
}

fn body_of(s: Surface, v: u32) -> u32 {
    return index[s.vertex_body + v];
}

// src/state.rs BodyRecord's second vec4: mean surface edge length [m], self-collision flag.
fn body_surface(s: Surface, b: u32) -> vec4<f32> {
    return records[s.bodies + 2u * b + 1u];
}

fn self_colliding(s: Surface, b: u32) -> bool {
    return bitcast<u32>(body_surface(s, b).y) != 0u;
}

// Search radius r_v of a vertex [m]: a quarter of its body's mean surface edge, at least 2δ.
fn search_radius(s: Surface, v: u32) -> f32 {
    return max(0.25 * body_surface(s, body_of(s, v)).x, 2.0 * s.offset);
}

fn surface_triangle(s: Surface, t: u32) -> vec3<u32> {
    let i = s.surface_triangles + 3u * t;
    return vec3<u32>(index[i], index[i + 1u], index[i + 2u]);
}

fn surface_edge(s: Surface, e: u32) -> vec2<u32> {
    let i = s.surface_edges + 2u * e;
    return vec2<u32>(index[i], index[i + 1u]);
}

// The primitives with vertices v (pair order) share no vertex and are on different bodies or
// on a self-colliding one.
fn pair_allowed(s: Surface, v: vec4<u32>) -> bool {
    if v.x == v.y || v.x == v.z || v.x == v.w || v.y == v.z || v.y == v.w || v.z == v.w {
        return false;
    }
    let a = body_of(s, v.x);
    return a != body_of(s, v.w) || self_colliding(s, a);
}
