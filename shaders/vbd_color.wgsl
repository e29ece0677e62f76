// One VBD colour pass over tet vertices by gather, one invocation per vertex of the colour: the
// GPU twin of update_vertex in src/solver/vbd_vertex.rs for tet bodies (stable neo-Hookean and
// StVK, Rayleigh and linear damping, inertia with gravity, obstacle contact with friction, the
// obstacle path clamp). Vertices of one colour share no element, so each invocation writes its
// own position in place while the others read only other colours; nothing is accumulated
// across invocations in floating point.
// Not yet on the GPU: membranes and hinges (cloth), body–body and self contact with the
// displacement bound. Host wrapper: src/gpu/kernels/vbd_color.rs; prepended: lib/step.wgsl,
// lib/obstacles.wgsl.

struct Params {
    // First entry of this colour in color_vertices (at the start of `index`), and its count.
    first: u32,
    count: u32,
    // Where the tet adjacency's n + 1 row offsets, its entries and vertex_body start in `index`.
    tet_offsets: u32,
    tet_entries: u32,
    vertex_body: u32,
    // Where the body records start in `records` (after the materials), in vec4s.
    bodies: u32,
    // Contact penalty: stiffness [N/m], or [N/m per kg] when stiffness_per_mass is 1.
    stiffness_per_mass: u32,
    stiffness: f32,
    // Contact offset δ [m] and ε_v h [m].
    offset: f32,
    static_slip: f32,
    _pad: vec2<u32>,
    obstacles: ObstacleSet,
}

const MODEL_STABLE_NEO_HOOKEAN: u32 = 0u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> index: array<u32>;
@group(0) @binding(4) var<storage, read> tets: array<Tet>;
// src/state.rs MaterialRecord (model bits, μ, λ, damping), then BodyRecord, two vec4 each.
@group(0) @binding(5) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> residuals: array<f32>;
@group(0) @binding(7) var<storage, read_write> frozen: array<atomic<u32>>;

fn outer3(a: vec3<f32>, b: vec3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(a * b.x, a * b.y, a * b.z);
}

fn diag3(d: f32) -> mat3x3<f32> {
    return mat3x3<f32>(vec3<f32>(d, 0.0, 0.0), vec3<f32>(0.0, d, 0.0), vec3<f32>(0.0, 0.0, d));
}

// Velocity of vertex i implied by the current iterate, v = c1 (x − x^n) + c0.
fn velocity_estimate(i: u32) -> vec3<f32> {
    let s = steps[i];
    return (positions[i].xyz - s.start.xyz) * s.velocity.w + s.velocity.xyz;
}

// IPC's smoothed friction magnitude over slip (src/collision/contact.rs friction_f1_over_u).
fn friction_f1_over_u(u: f32, eps: f32) -> f32 {
    if u < eps {
        let inv = 1.0 / eps;
        return 2.0 * inv - u * inv * inv;
    }
    return 1.0 / u;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= params.count {
        return;
    }
    let v = index[params.first + id.x];
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
    // Obstacles: penalty beyond the offset, friction scaled by the normal force lagged from x^n.
    var in_contact = false;
    var k_c = params.stiffness;
    if params.stiffness_per_mass == 1u {
        k_c *= mass;
    }
    for (var k = 0u; k < params.obstacles.count; k++) {
        let o = params.obstacles.items[k];
        let sd = obstacle_distance(o, x);
        let d = params.offset - sd.d;
        if d > 0.0 {
            in_contact = true;
            let n = sd.n;
            f += n * (k_c * d);
            h += outer3(n, n) * k_c;
            let mu = 0.5 * (body_record.z + o.friction);
            let lagged = k_c * max(params.offset - obstacle_distance(o, s.start.xyz).d, 0.0);
            if mu > 0.0 && lagged > 0.0 {
                let u = dx - n * dot(n, dx);
                let kf = mu * lagged * friction_f1_over_u(length(u), params.static_slip);
                f -= u * kf;
                h += (diag3(1.0) - outer3(n, n)) * kf;
            }
        }
    }
    for (var e = index[params.tet_offsets + v]; e < index[params.tet_offsets + v + 1u]; e++) {
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
                                velocity_estimate(t.vertices.w) - v0) * t.dm_inv;
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
        f -= grad;
        h += hb;
        if damping > 0.0 {
            // Rayleigh: −k_d Σ_b K_ab v_b, and +k_d c1 K_aa through v_a = c1 Δx_a + c0.
            f -= damp * damping;
            h += hb * (damping * c1);
        }
    }
    residuals[v] = dot(f, f);
    if in_contact {
        atomicOr(&frozen[body], FROZEN_CONTACT);
    }
    // Symmetric 3×3 solve through the adjugate, with src/math/sym3.rs's singularity guard.
    let a0 = cross(h[1], h[2]);
    let a1 = cross(h[2], h[0]);
    let a2 = cross(h[0], h[1]);
    let det = dot(h[0], a0);
    let tr = (h[0].x + h[1].y + h[2].z) * (1.0 / 3.0);
    var target_x = x;
    if abs(det) > 1e-6 * abs(tr * tr * tr) {
        target_x = x + vec3<f32>(dot(a0, f), dot(a1, f), dot(a2, f)) * (1.0 / det);
    }
    // Exact CCD against the static obstacles: the step may end on a surface, never inside.
    positions[v] = vec4<f32>(limit_step(params.obstacles, x, target_x), 0.0);
}
