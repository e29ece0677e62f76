// One VBD colour pass by gather, LANES invocations per vertex of the colour: the GPU twin of
// update_vertex in src/solver/vbd/vertex.rs (tets: stable neo-Hookean and StVK; cloth: StVK
// membranes and dihedral hinges; Rayleigh and linear damping, inertia with gravity, obstacle
// contact and friction, body–body and self contact pairs with lagged friction, the surface
// displacement bound and the obstacle path clamp). Vertices of one colour share no element, so
// without surface contact each invocation writes its own position in place while the others
// read only other colours. A contact pair can join two vertices of one colour; then the pass is
// staged, as on the CPU: updates go to `updates` and a second dispatch (phase 1) commits them,
// so such pairs update Jacobi-style and no invocation reads a position another one is writing.
// A vertex's lanes add their element sums in a fixed tree order in workgroup memory; nothing is
// accumulated across invocations through atomics.
// Surface edges and triangles get the contacts vbd_spans detected against boxes and spheres,
// and their limit (add_edge_terms and limit_edge_move in src/solver/vbd/vertex.rs).
// Host wrapper: src/gpu/vbd/vbd_color.rs; prepended: lib/step.wgsl, lib/obstacles.wgsl,
// lib/spans.wgsl, lib/distance.wgsl, lib/mat3.wgsl, lib/friction.wgsl,
// lib/contact_layout.wgsl, lib/contact.wgsl, lib/layer.wgsl, lib/elements.wgsl.

struct Params {
    // First entry of this colour in color_vertices (at the start of `index`), and its count.
    first: u32,
    count: u32,
    // Where the tet adjacency's n + 1 row offsets, its entries and vertex_body start in `index`.
    tet_offsets: u32,
    tet_entries: u32,
    vertex_body: u32,
    // Where the body records, the triangles and the hinges start in `records` (in vec4s,
    // after the materials).
    bodies: u32,
    tris: u32,
    hinges: u32,
    // Contact stiffness [N/m], or [N/m per kg] with bit 0 of contact_flags; bit 1: the layer
    // stiffens as it is pressed (lib/layer.wgsl) rather than being the penalty.
    contact_flags: u32,
    stiffness: f32,
    // Contact offset δ [m] and ε_v h [m].
    offset: f32,
    static_slip: f32,
    // Where the triangle and hinge adjacencies (row offsets, entries) start in `index`.
    tri_offsets: u32,
    tri_entries: u32,
    hinge_offsets: u32,
    hinge_entries: u32,
    // Where the per-body frozen flags start in `control`.
    frozen: u32,
    // 0: update the colour's vertices; 1: commit the staged updates to `positions`.
    phase: u32,
    // 1: write updates to `updates` (committed by phase 1) instead of in place.
    staged: u32,
    // 1: a box or a sphere is among the obstacles, and the span records (lib/spans.wgsl)
    // start at `updates[span_base]`.
    spans: u32,
    span_base: u32,
    // The vertex → span adjacency (row offsets, entries) and the surface's edges and triangles
    // in `index`, and the edge count.
    span_offsets: u32,
    span_entries: u32,
    surface_edges: u32,
    surface_triangles: u32,
    edge_count: u32,
    // Where the bodies' spins ω' start in `records` (vbd_spin writes them), or NO_SPINS.
    spins: u32,
    _pad0: u32,
    // Surface contact: pairs and bounds in `contacts`.
    bounds: SurfaceBounds,
    obstacles: ObstacleSet,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> index: array<u32>;
@group(0) @binding(4) var<storage, read> tets: array<Tet>;
// src/gpu/pack.rs pack_records: MaterialRecord (model bits, μ, λ, damping; one vec4 each),
// BodyRecord (two vec4), TriElement (three vec4: vertices, row-major D_m⁻¹, measure and
// material), HingeElement (two vec4: vertices; rest angle, stiffness, damping).
@group(0) @binding(5) var<storage, read> records: array<vec4<f32>>;
// Per vertex: xyz its new position when the pass is staged, w the squared residual ‖f‖² of
// its update, negative (sign bit, BOUNDED_BIT in lib/step.wgsl) when the displacement bound
// held it.
@group(0) @binding(6) var<storage, read_write> updates: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> control: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read> contacts: array<u32>;

// Velocity of vertex i implied by the current iterate, v = c1 (x − x^n) + c0.
fn velocity_estimate(i: u32) -> vec3<f32> {
    let s = steps[i];
    return (positions[i].xyz - s.start.xyz) * s.velocity.w + s.velocity.xyz;
}

fn span_of(i: u32) -> Span {
    return span_at(params.surface_edges, params.surface_triangles, params.edge_count, i);
}

fn vertex_mass(i: u32) -> f32 {
    return steps[i].inertia.w * steps[i].predictor.w;
}

// The contact and friction of vertex v's span contacts (add_edge_terms): the span's point at
// the detected weights, its stiffness sized for the weighted mass and scaled, the stiffened
// layer; `body_friction` is the vertex's body's μ.
fn add_span_terms(v: u32, f: ptr<function, vec3<f32>>, h: ptr<function, mat3x3<f32>>, body_friction: f32) -> bool {
    var in_contact = false;
    for (var e = index[params.span_offsets + v]; e < index[params.span_offsets + v + 1u]; e++) {
        let entry = index[params.span_entries + e];
        let i = entry >> 2u;
        let slot = entry & 3u;
        let span = span_of(i);
        for (var k = 0u; k < params.obstacles.count; k++) {
            let record = updates[span_slot(params.span_base, i, k)];
            if !(record.z > 0.0) {
                continue;
            }
            let o = params.obstacles.items[k];
            let w = span_weights(record, span.count);
            var p = vec3<f32>(0.0);
            var moved = vec3<f32>(0.0);
            var mass = 0.0;
            for (var j = 0u; j < span.count; j++) {
                let vj = span.v[j];
                let xj = positions[vj].xyz;
                p += xj * w[j];
                moved += (xj - steps[vj].start.xyz) * w[j];
                mass += vertex_mass(vj) * w[j];
            }
            let sd = obstacle_distance(o, p);
            if sd.d >= params.offset {
                continue;
            }
            var k_c = params.stiffness;
            if (params.contact_flags & 1u) == 1u {
                k_c *= mass;
            }
            k_c *= record.z;
            let lagged = stiffened_layer(k_c, params.offset, record.w);
            let now = stiffened_layer(k_c, params.offset, sd.d);
            let touching = add_contact(f, h, sd.d, sd.n, w[slot], moved, 0.5 * (body_friction + o.friction),
                                       lagged.x * max(lagged.y - record.w, 0.0), now.x, now.y, params.static_slip);
            in_contact = in_contact || touching;
        }
    }
    return in_contact;
}

// Limits vertex v's move x → goal so none of its detected spans enters its box or sphere
// (limit_edge_move): per span, the vertex may approach the span's separating plane by its
// clearance less the gap; violated planes are projected onto, then the move is scaled.
fn limit_span_move(v: u32, x: vec3<f32>, goal: vec3<f32>) -> vec3<f32> {
    let reach = length(goal - x);
    if reach == 0.0 {
        return goal;
    }
    var planes: array<vec4<f32>, 8>;
    var count = 0u;
    for (var e = index[params.span_offsets + v]; e < index[params.span_offsets + v + 1u] && count < 8u; e++) {
        let entry = index[params.span_entries + e];
        let i = entry >> 2u;
        let slot = entry & 3u;
        let span = span_of(i);
        var pts: array<vec3<f32>, 3>;
        for (var j = 0u; j < span.count; j++) {
            pts[j] = positions[span.v[j]].xyz;
        }
        pts[slot] = x;
        for (var k = 0u; k < params.obstacles.count; k++) {
            if count == 8u {
                break;
            }
            if updates[span_slot(params.span_base, i, k)].z < 0.0 {
                continue;
            }
            let o = params.obstacles.items[k];
            var normal: vec3<f32>;
            if span.count == 2u {
                normal = segment_closest(o, pts[0], pts[1]).n;
            } else {
                let c = triangle_closest(o, pts[0], pts[1], pts[2]);
                if !c.found {
                    continue;
                }
                normal = c.n;
            }
            let n = separating_normal(o, pts, span.count, normal);
            let support = obstacle_support(o, n);
            var low = 3.4e38;
            for (var j = 0u; j < span.count; j++) {
                low = min(low, dot(n, pts[j]) - support);
            }
            if low < -params.offset {
                continue;
            }
            let budget = max(dot(n, x) - support - SPAN_GAP, 0.0);
            if budget >= reach {
                continue;
            }
            planes[count] = vec4<f32>(n, budget);
            count += 1u;
        }
    }
    var d = goal - x;
    for (var round = 0u; round < 4u; round++) {
        for (var j = 0u; j < count; j++) {
            let along = dot(planes[j].xyz, d);
            if along < -planes[j].w {
                d += planes[j].xyz * (-planes[j].w - along);
            }
        }
    }
    var scale = 1.0;
    for (var j = 0u; j < count; j++) {
        let along = dot(planes[j].xyz, d);
        if along < -planes[j].w - 0.1 * SPAN_GAP {
            scale = min(scale, planes[j].w / -along);
        }
    }
    return x + d * scale;
}

fn stiffening() -> bool {
    return (params.contact_flags & 2u) != 0u;
}

// x + h⁻¹ f: the symmetric 3×3 solve through the adjugate, with src/math/sym3.rs's
// singularity guard (x itself when h is singular).
fn solve3(x: vec3<f32>, h: mat3x3<f32>, f: vec3<f32>) -> vec3<f32> {
    let a0 = cross(h[1], h[2]);
    let a1 = cross(h[2], h[0]);
    let a2 = cross(h[0], h[1]);
    let det = dot(h[0], a0);
    let tr = (h[0].x + h[1].y + h[2].z) * (1.0 / 3.0);
    if abs(det) > 1e-6 * abs(tr * tr * tr) {
        return x + vec3<f32>(dot(a0, f), dot(a1, f), dot(a2, f)) * (1.0 / det);
    }
    return x;
}

// A pair's gap along its lagged normal, linearised at detection, at the current positions.
fn pair_gap(p: Pair) -> f32 {
    let w = p.weights;
    let v = p.vertices;
    return dot(p.normal, positions[v.x].xyz * w.x + positions[v.y].xyz * w.y + positions[v.z].xyz * w.z
        + positions[v.w].xyz * w.w);
}

// vertex.rs layer_majorant: the curvature vertex v's obstacle and pair layers gain along the
// move x → goal beyond their curvature at x, each contact's distance at goal linearised along
// its normal; k_c is the vertex's obstacle stiffness.
fn layer_majorant(v: u32, x: vec3<f32>, goal: vec3<f32>, k_c: f32) -> mat3x3<f32> {
    let step = goal - x;
    var extra = mat3x3<f32>();
    for (var k = 0u; k < params.obstacles.count; k++) {
        let sd = obstacle_distance(params.obstacles.items[k], x);
        let along = dot(sd.n, step);
        if sd.d < params.offset && along < 0.0 {
            let now = layer_force_stiffness(sd.d, k_c, params.offset).y;
            let there = layer_force_stiffness(sd.d + along, k_c, params.offset).y;
            extra += outer3(sd.n, sd.n) * (there - now);
        }
    }
    if params.bounds.enabled != 0u {
        let l = params.bounds.contact;
        for (var e = contacts[l.offsets + v]; e < contacts[l.offsets + v + 1u]; e++) {
            let entry = contacts[l.entries + e];
            let p = load_pair(l, entry >> 2u);
            if !(p.stiffness > 0.0) {
                continue;
            }
            let gap = pair_gap(p);
            let wv = p.weights[entry & 3u];
            let along = wv * dot(p.normal, step);
            if gap < params.offset && along < 0.0 {
                let now = layer_force_stiffness(gap, p.stiffness, params.offset).y;
                let there = layer_force_stiffness(gap + along, p.stiffness, params.offset).y;
                extra += outer3(p.normal, p.normal) * ((there - now) * wv * wv);
            }
        }
    }
    return extra;
}

// Invocations per vertex, a power of two up to 64, set per adapter when the pipeline is made
// (src/gpu/vbd/vbd_color.rs lanes_for): each sums a share of the vertex's elements (tets,
// membranes, hinges: 24 tets around an inner vertex of a six-tet box), lane 0 adds the other
// terms and takes the step. On a GPU, one invocation walking all of them took ~45 µs per colour
// on an H200 for a 6³ cube, latency of its dependent loads alone, so 8 lanes share them; a CPU
// adapter (lavapipe) runs a workgroup's invocations as SIMD batches on one core, where idle
// lanes and the tree's barriers only cost, so it takes 1.
override LANES: u32 = 8u;
// Params::spins when no kernel wrote the bodies' spins (src/gpu/vbd/vbd_color.rs NO_SPINS).
const NO_SPINS: u32 = 0xffffffffu;

var<workgroup> lane_f: array<vec3<f32>, 64>;
var<workgroup> lane_h: array<mat3x3<f32>, 64>;

// Lane `lane`'s share of vertex v's element terms: elements lane, lane + LANES, … of each of its
// lists.
fn element_terms(v: u32, lane: u32, f: ptr<function, vec3<f32>>, h: ptr<function, mat3x3<f32>>) {
    let c1 = steps[v].velocity.w;
    // The body's spin after the step: Rayleigh damping acts on the velocities relative to the
    // turning ω' × x (src/solver/vbd/vertex.rs elastic_terms, src/solver/vbd/spin.rs).
    var spin = vec3<f32>(0.0);
    if params.spins != NO_SPINS {
        spin = records[params.spins + index[params.vertex_body + v]].xyz;
    }
    for (var e = index[params.tet_offsets + v] + lane; e < index[params.tet_offsets + v + 1u]; e += LANES) {
        let entry = index[params.tet_entries + e];
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
        let m = records[t.material];
        let mu = m.y;
        let lambda = m.z;
        let damping = m.w;
        // Ḟ of the current iterate, from the vertices' velocity estimates (damped tets only).
        var f_dot = mat3x3<f32>();
        if damping > 0.0 {
            let v0 = velocity_estimate(t.vertices.x);
            f_dot = mat3x3<f32>(velocity_estimate(t.vertices.y) - v0, velocity_estimate(t.vertices.z) - v0,
                                velocity_estimate(t.vertices.w) - v0) * t.dm_inv
                - mat3x3<f32>(cross(spin, ff[0]), cross(spin, ff[1]), cross(spin, ff[2]));
        }
        var grad: vec3<f32>;
        var hb: mat3x3<f32>;
        var damp = vec3<f32>(0.0);
        if bitcast<u32>(m.x) == MODEL_STABLE_NEO_HOOKEAN {
            // src/material/stable_neo_hookean.rs vertex_terms.
            let c1c = cross(ff[1], ff[2]);
            let c2c = cross(ff[2], ff[0]);
            let c3c = cross(ff[0], ff[1]);
            let j = dot(ff[0], c1c);
            let c = c1c * g.x + c2c * g.y + c3c * g.z;
            grad = ((ff * g) * mu + c * (lambda * (j - (1.0 + mu / lambda)))) * t.volume;
            hb = (diag3(mu * dot(g, g)) + outer3(c, c) * lambda) * t.volume;
            if damping > 0.0 {
                let rate = dot(c1c, f_dot[0]) + dot(c2c, f_dot[1]) + dot(c3c, f_dot[2]);
                damp = ((f_dot * g) * mu + c * (lambda * rate)) * t.volume;
            }
        } else {
            // src/material/stvk.rs vertex_gradient_hessian_psd and damping_term.
            let ftf = transpose(ff) * ff;
            let e_tr = 0.5 * (ftf[0].x + ftf[1].y + ftf[2].z - 3.0);
            let sg = (ftf * g - g) * mu + g * (lambda * e_tr);
            let u = ff * g;
            grad = (ff * sg) * t.volume;
            let psd = outer3(u, u) * (mu + lambda) + (ff * transpose(ff)) * (mu * dot(g, g));
            hb = (diag3(abs(dot(g, sg))) + psd) * t.volume;
            if damping > 0.0 {
                let ftfd = transpose(ff) * f_dot;
                let ed = (ftfd + transpose(ftfd)) * 0.5;
                let dsg = (ed * g) * (2.0 * mu) + g * (lambda * (ed[0].x + ed[1].y + ed[2].z));
                damp = (ff * dsg) * t.volume;
            }
        }
        *f -= grad;
        *h += hb;
        if damping > 0.0 {
            // Rayleigh: −k_d Σ_b K_ab v_b, and +k_d c1 K_aa through v_a = c1 Δx_a + c0.
            *f -= damp * damping;
            *h += hb * (damping * c1);
        }
    }
    // Membranes: StVK in plane stress with 3×2 F (src/material/membrane.rs).
    for (var e = index[params.tri_offsets + v] + lane; e < index[params.tri_offsets + v + 1u]; e += LANES) {
        let entry = index[params.tri_entries + e];
        let base = params.tris + 3u * (entry >> 2u);
        let slot = entry & 3u;
        let tv = bitcast<vec4<u32>>(records[base]);
        let dm = records[base + 1u];
        let rest = records[base + 2u];
        let m = records[bitcast<u32>(rest.y)];
        let mu = m.y;
        let lambda = m.z;
        let measure = rest.x;
        let x0 = positions[tv.x].xyz;
        let e1 = positions[tv.y].xyz - x0;
        let e2 = positions[tv.z].xyz - x0;
        let f0 = e1 * dm.x + e2 * dm.z;
        let f1 = e1 * dm.y + e2 * dm.w;
        var g = -vec2<f32>(dm.x + dm.z, dm.y + dm.w);
        if slot == 1u {
            g = dm.xy;
        } else if slot == 2u {
            g = dm.zw;
        }
        let e11 = 0.5 * (dot(f0, f0) - 1.0);
        let e12 = 0.5 * dot(f0, f1);
        let e22 = 0.5 * (dot(f1, f1) - 1.0);
        let tr = lambda * (e11 + e22);
        let s = vec3<f32>(2.0 * mu * e11 + tr, 2.0 * mu * e12, 2.0 * mu * e22 + tr);
        let sg = vec2<f32>(s.x * g.x + s.y * g.y, s.y * g.x + s.z * g.y);
        let u = f0 * g.x + f1 * g.y;
        let hb = (diag3(abs(dot(g, sg))) + outer3(u, u) * (mu + lambda)
            + (outer3(f0, f0) + outer3(f1, f1)) * (mu * dot(g, g))) * measure;
        *f -= (f0 * sg.x + f1 * sg.y) * measure;
        *h += hb;
        if m.w > 0.0 {
            let w0 = velocity_estimate(tv.x);
            let d1 = velocity_estimate(tv.y) - w0;
            let d2 = velocity_estimate(tv.z) - w0;
            let fd0 = d1 * dm.x + d2 * dm.z;
            let fd1 = d1 * dm.y + d2 * dm.w;
            let r11 = dot(f0, fd0);
            let r12 = 0.5 * (dot(f0, fd1) + dot(f1, fd0));
            let r22 = dot(f1, fd1);
            let rtr = lambda * (r11 + r22);
            let ds = vec3<f32>(2.0 * mu * r11 + rtr, 2.0 * mu * r12, 2.0 * mu * r22 + rtr);
            let dsg = vec2<f32>(ds.x * g.x + ds.y * g.y, ds.y * g.x + ds.z * g.y);
            *f -= (f0 * dsg.x + f1 * dsg.y) * (measure * m.w);
            *h += hb * (m.w * c1);
        }
    }
    // Hinges: dihedral bending with the Gauss–Newton block (src/material/bending.rs vertex_terms).
    for (var e = index[params.hinge_offsets + v] + lane; e < index[params.hinge_offsets + v + 1u]; e += LANES) {
        let entry = index[params.hinge_entries + e];
        let base = params.hinges + 2u * (entry >> 2u);
        let slot = entry & 3u;
        let hv = bitcast<vec4<u32>>(records[base]);
        let hinge = records[base + 1u];
        let x0 = positions[hv.x].xyz;
        let x1 = positions[hv.y].xyz;
        let x2 = positions[hv.z].xyz;
        let x3 = positions[hv.w].xyz;
        var grads = hinge_angle_gradient(x0, x1, x2, x3);
        let ga = grads[slot];
        let k = hinge.y;
        let hb = outer3(ga, ga) * k;
        *f -= ga * (k * hinge_angle_offset(x0, x1, x2, x3, hinge.x));
        *h += hb;
        if hinge.z > 0.0 {
            let theta_dot = dot(grads[0], velocity_estimate(hv.x)) + dot(grads[1], velocity_estimate(hv.y))
                + dot(grads[2], velocity_estimate(hv.z)) + dot(grads[3], velocity_estimate(hv.w));
            *f -= ga * (k * theta_dot * hinge.z);
            *h += hb * (hinge.z * c1);
        }
    }
}

// Vertex v's update from its elements' summed terms `fe`, `he`.
fn update(v: u32, fe: vec3<f32>, he: mat3x3<f32>) {
    let x = positions[v].xyz;
    let s = steps[v];
    let c1 = s.velocity.w;
    let body = index[params.vertex_body + v];
    let body_record = records[params.bodies + 2u * body];
    // Inertia with gravity, −m/w (x − y), written with displacements from x^n.
    let dx = x - s.start.xyz;
    let m_over_w = s.inertia.w;
    let mass = m_over_w * s.predictor.w;
    var f = (s.inertia.xyz - dx) * m_over_w;
    var h = diag3(m_over_w);
    // Linear drag −α m v.
    let alpha = body_record.w;
    if alpha > 0.0 {
        let am = alpha * mass;
        f -= (dx * c1 + s.velocity.xyz) * am;
        h += diag3(am * c1);
    }
    // Obstacles: the contact layer within the offset, lagged friction.
    var in_contact = false;
    var k_c = params.stiffness;
    if (params.contact_flags & 1u) == 1u {
        k_c *= mass;
    }
    for (var k = 0u; k < params.obstacles.count; k++) {
        let o = params.obstacles.items[k];
        let sd = obstacle_distance(o, x);
        // Friction scaled by the normal force lagged from x^n; obstacles are static, so the
        // slip is the vertex's own displacement.
        let d_start = obstacle_distance(o, s.start.xyz).d;
        var lagged = k_c * max(params.offset - d_start, 0.0);
        var now = vec2<f32>(k_c, params.offset);
        if stiffening() {
            lagged = layer_force_stiffness(d_start, k_c, params.offset).x;
            now = stiffened_layer(k_c, params.offset, sd.d);
        }
        let touching = add_contact(&f, &h, sd.d, sd.n, 1.0, dx, 0.5 * (body_record.z + o.friction), lagged, now.x,
                                   now.y, params.static_slip);
        in_contact = in_contact || touching;
    }
    if params.spans == 1u {
        let touching = add_span_terms(v, &f, &h, body_record.z);
        in_contact = in_contact || touching;
    }
    f += fe;
    h += he;
    // Body–body and self contact pairs this vertex belongs to: the contact layer along the lagged normal
    // on the gap linearised at detection, friction against the pair's relative displacement.
    if params.bounds.enabled != 0u {
        let l = params.bounds.contact;
        for (var e = contacts[l.offsets + v]; e < contacts[l.offsets + v + 1u]; e++) {
            let entry = contacts[l.entries + e];
            let p = load_pair(l, entry >> 2u);
            if !(p.stiffness > 0.0) {
                continue;
            }
            let pv = p.vertices;
            let w = p.weights;
            let x0 = positions[pv.x].xyz;
            let x1 = positions[pv.y].xyz;
            let x2 = positions[pv.z].xyz;
            let x3 = positions[pv.w].xyz;
            let gap = pair_gap(p);
            let slip = (x0 - steps[pv.x].start.xyz) * w.x + (x1 - steps[pv.y].start.xyz) * w.y
                + (x2 - steps[pv.z].start.xyz) * w.z + (x3 - steps[pv.w].start.xyz) * w.w;
            var now = vec2<f32>(p.stiffness, params.offset);
            if stiffening() {
                now = stiffened_layer(p.stiffness, params.offset, gap);
            }
            let touching = add_contact(&f, &h, gap, p.normal, w[entry & 3u], slip, p.friction, p.friction_force,
                                       now.x, now.y, params.static_slip);
            in_contact = in_contact || touching;
        }
    }
    let residual2 = dot(f, f);
    if in_contact {
        atomicOr(&control[params.frozen + body], FROZEN_CONTACT);
    }
    var target_x = solve3(x, h, f);
    if in_contact && stiffening() {
        // The stiffening layer's curvature grows as it is pressed, so the step with its
        // curvature at x overshoots into it; with the curvature where the step would end the
        // step minimises a majorant of the vertex's energy (vertex.rs update_vertex).
        let extra = layer_majorant(v, x, target_x, k_c);
        if any(extra[0] != vec3<f32>(0.0)) || any(extra[1] != vec3<f32>(0.0)) || any(extra[2] != vec3<f32>(0.0)) {
            target_x = solve3(x, h + extra, f);
        }
    }
    // A span of the vertex may not enter a box or a sphere either. Its limit projects onto
    // planes, so it goes first: the two limits after it only shorten the move.
    if params.spans == 1u {
        target_x = limit_span_move(v, x, target_x);
    }
    // Within the displacement bound since the last detection (no surface can be crossed), then
    // exact CCD against the static obstacles: the step may end on a surface, never inside.
    // The residual's sign bit says the bound held the vertex (the safety check's clamp lock).
    var w = residual2;
    if params.bounds.enabled != 0u {
        let within = limit_move(params.bounds.contact, params.bounds.min_separation, v, target_x);
        if any(within != target_x) {
            atomicStore(&control[CONTROL_BOUND_HIT], 1u);
            // Only a vertex with a bound or a pair counts as held (a surface vertex, as the CPU
            // counts them): for the others the move differs from the goal by rounding alone.
            let l = params.bounds.contact;
            if vertex_clamp(l, v).w < UNBOUNDED || contacts[l.offsets + v] < contacts[l.offsets + v + 1u] {
                w = bitcast<f32>(bitcast<u32>(residual2) | BOUNDED_BIT);
            }
        }
        target_x = within;
    }
    let p = limit_step(params.obstacles, x, target_x);
    if params.staged == 1u {
        updates[v] = vec4<f32>(p, w);
    } else {
        positions[v] = vec4<f32>(p, 0.0);
        updates[v] = vec4<f32>(0.0, 0.0, 0.0, w);
    }
}

@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // A grid of workgroups when one row would exceed the device's limit.
    let slot = (group.y * groups.x + group.x) * (64u / LANES) + lid / LANES;
    let lane = lid % LANES;
    let live = slot < params.count;
    if params.phase == 1u {
        if live && lane == 0u {
            let v = index[params.first + slot];
            positions[v] = vec4<f32>(updates[v].xyz, 0.0);
        }
        return;
    }
    var fe = vec3<f32>(0.0);
    var he = mat3x3<f32>();
    if live {
        element_terms(index[params.first + slot], lane, &fe, &he);
    }
    lane_f[lid] = fe;
    lane_h[lid] = he;
    workgroupBarrier();
    for (var stride = LANES / 2u; stride > 0u; stride >>= 1u) {
        if lane < stride {
            lane_f[lid] += lane_f[lid + stride];
            lane_h[lid] += lane_h[lid + stride];
        }
        workgroupBarrier();
    }
    if live && lane == 0u {
        update(index[params.first + slot], lane_f[lid], lane_h[lid]);
    }
}
