// Contact as a vertex's Newton system sees it (src/collision/contact.rs add_contact) and the
// displacement bounds of surface contact (src/solver/vbd/contact.rs limit_move), for kernels
// that bind `contacts` read-only. Not a kernel: host wrappers prepend this file after
// lib/mat3.wgsl, lib/friction.wgsl and lib/contact_layout.wgsl.

// Bounds at least this large are no bound (vertices off the surface; f32 has no reliable
// infinity in WGSL).
const UNBOUNDED: f32 = 1.0e18;

// Whether a kernel applies the surface bounds, and what they need (src/gpu/contact/layout.rs
// SurfaceBounds).
struct SurfaceBounds {
    enabled: u32,
    // ξ [m].
    min_separation: f32,
    _pad0: u32,
    _pad1: u32,
    contact: ContactLayout,
}

struct Pair {
    vertices: vec4<u32>,
    normal: vec3<f32>,
    kind: u32,
    stiffness: f32,
    friction_force: f32,
    friction: f32,
    distance: f32,
    weights: vec4<f32>,
}

fn contact_word(i: u32) -> f32 {
    return bitcast<f32>(contacts[i]);
}

fn load_pair(l: ContactLayout, k: u32) -> Pair {
    let b = l.pairs + PAIR_WORDS * k;
    return Pair(
        vec4<u32>(contacts[b], contacts[b + 1u], contacts[b + 2u], contacts[b + 3u]),
        vec3<f32>(contact_word(b + 4u), contact_word(b + 5u), contact_word(b + 6u)),
        contacts[b + PAIR_KIND],
        contact_word(b + PAIR_STIFFNESS),
        contact_word(b + PAIR_FRICTION_FORCE),
        contact_word(b + PAIR_FRICTION),
        contact_word(b + PAIR_DISTANCE),
        vec4<f32>(contact_word(b + 12u), contact_word(b + 13u), contact_word(b + 14u), contact_word(b + 15u)),
    );
}

// xyz: the vertex's position at the last detection; w: its isotropic bound b_v [m].
fn vertex_clamp(l: ContactLayout, v: u32) -> vec4<f32> {
    let b = l.clamp + 4u * v;
    return vec4<f32>(contact_word(b), contact_word(b + 1u), contact_word(b + 2u), contact_word(b + 3u));
}

// The half-space a pair list entry (pair << 2 | slot) puts on its vertex: the vertex may
// approach the other side along n̂ (xyz) by at most the budget (w) γ_p (d − ξ).
fn half_space(l: ContactLayout, xi: f32, entry: u32) -> vec4<f32> {
    let b = l.pairs + PAIR_WORDS * (entry >> 2u);
    let slot = entry & 3u;
    var side_a = slot < 2u;
    if contacts[b + PAIR_KIND] == PAIR_POINT_TRIANGLE {
        side_a = slot == 0u;
    }
    var n = vec3<f32>(contact_word(b + 4u), contact_word(b + 5u), contact_word(b + 6u));
    if !side_a {
        n = -n;
    }
    return vec4<f32>(n, BOUND_FRACTION * max(contact_word(b + PAIR_DISTANCE) - xi, 0.0));
}

// The move of vertex v from its detection position towards `goal`, limited so that no
// surface can be crossed before the next detection: each of its pairs' half-spaces, then the
// isotropic ball, then a common scale towards x^det that keeps every half-space. Like the CPU's
// (src/solver/vbd/contact.rs limit_move) it returns x^det + (limited move), which a caller
// compares with `goal` to tell whether the bound was met.
fn limit_move(l: ContactLayout, xi: f32, v: u32, goal: vec3<f32>) -> vec3<f32> {
    let c = vertex_clamp(l, v);
    let center = c.xyz;
    var d = goal - center;
    let first = contacts[l.offsets + v];
    let last = contacts[l.offsets + v + 1u];
    for (var e = first; e < last; e++) {
        let hs = half_space(l, xi, contacts[l.entries + e]);
        let along = dot(hs.xyz, d);
        if along < -hs.w {
            d += hs.xyz * (-hs.w - along);
        }
    }
    let b = c.w;
    let len2 = dot(d, d);
    if b < UNBOUNDED && len2 > b * b {
        if b > 0.0 {
            d *= b / sqrt(len2);
        } else {
            d = vec3<f32>(0.0);
        }
    }
    var scale = 1.0;
    for (var e = first; e < last; e++) {
        let hs = half_space(l, xi, contacts[l.entries + e]);
        let along = dot(hs.xyz, d);
        if along < -hs.w {
            scale = min(scale, hs.w / -along);
        }
    }
    return center + d * scale;
}

// One contact's penalty and lagged friction in a vertex's Newton system (src/collision/
// contact.rs add_contact): E = ½ k (δ − d)₊² along the fixed normal n̂ with this vertex's
// closest-point weight w; friction μ λ f1(‖u‖) against the tangential slip u of the relative
// displacement, while the penalty acts. Returns whether the contact is active.
fn add_contact(f: ptr<function, vec3<f32>>, h: ptr<function, mat3x3<f32>>, distance: f32, n: vec3<f32>,
               w: f32, slip: vec3<f32>, mu: f32, friction_force: f32, stiffness: f32, offset: f32,
               static_slip: f32) -> bool {
    let d = offset - distance;
    if !(d > 0.0) {
        return false;
    }
    *f += n * (stiffness * d * w);
    *h += outer3(n, n) * (stiffness * w * w);
    if mu > 0.0 && friction_force > 0.0 {
        let u = slip - n * dot(n, slip);
        let k = mu * friction_force * friction_f1_over_u(length(u), static_slip);
        *f -= u * (k * w);
        *h += (diag3(1.0) - outer3(n, n)) * (k * w * w);
    }
    return true;
}
