// The rigid correction of one group (src/solver/vbd/rigid_correction.rs solve_group and newton,
// src/solver/vbd/rigid_energy.rs Problem::energy): the best coarse motion q_b = (t_b, θ_b) of each
// body of a group linked by surface pairs, with the affine space (params.dof = 12) its stretch
// s_b as well, minimising inertia and drag (and elasticity: the bodies' quadratics from
// rigid_reduce and rigid_stretch), obstacle contact and friction of the vertices that can reach
// an obstacle, and the group's surface pairs' contact layer and friction with each side moving
// with its body. Newton steps on the dense dof·G × dof·G system (Cholesky) with a backtracking
// line search, in f32 (the CPU solves in f64); each body's motion is then scaled back so that no
// vertex enters an obstacle. One workgroup per body: a group's root solves it, the others return.
//
// Every sum runs in a fixed order (per-invocation strides, then a tree), so the result does not
// depend on scheduling. The Hessian is assembled block by block: for block (i, j) every
// invocation sums the terms of the items it strides over that touch both bodies, then the
// partial blocks are summed in a tree.
// Host wrapper: src/gpu/rigid/rigid_solve.rs; prepended: lib/step.wgsl, lib/obstacles.wgsl,
// lib/distance.wgsl, lib/mat3.wgsl, lib/friction.wgsl,
// lib/contact_layout.wgsl, lib/contact.wgsl, lib/layer.wgsl, lib/rigid.wgsl.

struct Params {
    rigid: RigidLayout,
    contact: ContactLayout,
    // Where vertex_body starts in `index`; the first body record in `records` (vec4s).
    vertex_body: u32,
    bodies: u32,
    // 1 when `contacts` holds the pairs of a last detection.
    pairs: u32,
    // Contact stiffness [N/m], or [N/m per kg] with bit 0 of contact_flags; bit 1: the
    // stiffening layer (lib/layer.wgsl) rather than the penalty.
    contact_flags: u32,
    stiffness: f32,
    // Contact offset δ [m] and ε_v h [m].
    offset: f32,
    static_slip: f32,
    // Coordinates per body: 6 (t, θ) or, with the affine space, 12 (t, θ, s).
    dof: u32,
    obstacles: ObstacleSet,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> masses: array<f32>;
@group(0) @binding(5) var<storage, read> index: array<u32>;
@group(0) @binding(6) var<storage, read> control: array<u32>;
@group(0) @binding(7) var<storage, read> contacts: array<u32>;
@group(0) @binding(8) var<storage, read_write> rigid: array<u32>;

const NEWTON_STEPS: u32 = 4u;
const LINE_SEARCH_STEPS: u32 = 30u;
const NONE: u32 = 0xffffffffu;
const MAX_DOFS: u32 = 576u;
// Values reduced at once: a dof × dof block and a gradient (42 or 156 in all) in passes of WIDTH.
const WIDTH: u32 = 21u;
const MAX_BLOCK: u32 = 156u;

var<workgroup> members: array<u32, MAX_GROUP_BODIES>;
var<workgroup> q: array<f32, MAX_DOFS>;
var<workgroup> dq: array<f32, MAX_DOFS>;
var<workgroup> grad: array<f32, MAX_DOFS>;
// Where the energy is evaluated.
var<workgroup> point: array<f32, MAX_DOFS>;
var<workgroup> red: array<f32, 1344>;
// Bit i·48 + j: some pair of the group joins slots i and j.
var<workgroup> joined: array<atomic<u32>, 72>;
// Per invocation: its candidates, then where they go.
var<workgroup> chunks: array<u32, 64>;
// Per slot: the earliest obstacle entry of its motion (f32 bits).
var<workgroup> tois: array<atomic<u32>, MAX_GROUP_BODIES>;
var<workgroup> flag: u32;
var<workgroup> value: f32;
var<workgroup> value2: f32;
var<workgroup> count_u: u32;

// A side of a contact point: its body's slot, its weight, its arm from the body's centre, and
// whether the body turns and stretches (1 or 0). The point moves by coef (t + θ × arm + S arm).
struct Side {
    slot: u32,
    coef: f32,
    arm: vec3<f32>,
    turn: f32,
    stretch: f32,
}

const NO_SIDE: Side = Side(NONE, 0.0, vec3<f32>(0.0), 0.0, 0.0);

struct Term {
    e: f32,
    g: vec3<f32>,
    h: mat3x3<f32>,
}

fn word(b: u32, w: u32) -> f32 {
    return bitcast<f32>(rigid[rigid_record(b) + w]);
}

fn vec_at(b: u32, w: u32) -> vec3<f32> {
    return vec3<f32>(word(b, w), word(b, w + 1u), word(b, w + 2u));
}

fn inertia_of(b: u32) -> mat3x3<f32> {
    let j = array<f32, 6>(word(b, RB_INERTIA), word(b, RB_INERTIA + 1u), word(b, RB_INERTIA + 2u),
                          word(b, RB_INERTIA + 3u), word(b, RB_INERTIA + 4u), word(b, RB_INERTIA + 5u));
    return mat3x3<f32>(vec3<f32>(j[0], j[3], j[4]), vec3<f32>(j[3], j[1], j[5]), vec3<f32>(j[4], j[5], j[2]));
}

fn body_flags(b: u32) -> u32 {
    return rigid[rigid_record(b) + RB_FLAGS];
}

fn rotates(b: u32) -> bool {
    return (body_flags(b) & (RIGID_COUPLED | RIGID_VOLUMETRIC)) == (RIGID_COUPLED | RIGID_VOLUMETRIC);
}

// Whether body b is solved in some group (and which: its label is that group's root).
fn solved(b: u32) -> bool {
    if (body_flags(b) & RIGID_ELIGIBLE) == 0u {
        return false;
    }
    let root = rigid[rigid_record(b) + RB_LABEL];
    return rigid[rigid_record(root) + RB_SIZE] <= MAX_GROUP_BODIES;
}

fn member_of(b: u32, root: u32) -> bool {
    return solved(b) && rigid[rigid_record(b) + RB_LABEL] == root;
}

fn body_of_vertex(v: u32) -> u32 {
    return index[params.vertex_body + v];
}

fn stretches(b: u32) -> bool {
    return params.dof == 12u && (body_flags(b) & RIGID_VOLUMETRIC) != 0u;
}

// Body b's side of a point at p.
fn side_of(slot: u32, coef: f32, b: u32, p: vec3<f32>) -> Side {
    return Side(slot, coef, p - vec_at(b, RB_CENTER), f32(rotates(b)), f32(stretches(b)));
}

// J's 3 × 3 block p of a side (without its weight): the point's move per unit of t (p = 0), θ
// (1), the diagonal stretches (2) and the shears (3). Blocks, not columns, keep the loops over
// them short enough to unroll (lavapipe's loop budget: shaders/README.md).
fn jacobian_block(s: Side, p: u32) -> mat3x3<f32> {
    let r = s.arm;
    switch p {
        case 0u: {
            return diag3(1.0);
        }
        case 1u: {
            // θ × r = −[r]× θ.
            return skew3(r) * (-s.turn);
        }
        case 2u: {
            return mat3x3<f32>(vec3<f32>(r.x, 0.0, 0.0), vec3<f32>(0.0, r.y, 0.0), vec3<f32>(0.0, 0.0, r.z)) * s.stretch;
        }
        default: {
            return mat3x3<f32>(vec3<f32>(0.0, r.z, r.y), vec3<f32>(r.z, 0.0, r.x), vec3<f32>(r.y, r.x, 0.0)) * s.stretch;
        }
    }
}

// Displacement of a side's point under the motions at `point`.
fn shift(s: Side) -> vec3<f32> {
    if s.slot == NONE {
        return vec3<f32>(0.0);
    }
    let i = params.dof * s.slot;
    var d = vec3<f32>(point[i], point[i + 1u], point[i + 2u])
        + cross(vec3<f32>(point[i + 3u], point[i + 4u], point[i + 5u]), s.arm) * s.turn;
    if params.dof == 12u {
        d += jacobian_block(s, 2u) * vec3<f32>(point[i + 6u], point[i + 7u], point[i + 8u])
            + jacobian_block(s, 3u) * vec3<f32>(point[i + 9u], point[i + 10u], point[i + 11u]);
    }
    return d * s.coef;
}

// Entry (r, c) of body b's K over ψ = (θ, s) (src/solver/vbd/rigid_energy.rs BodyQuadratic::inner).
fn inner(b: u32, r: u32, c: u32) -> f32 {
    if r < 3u && c < 3u {
        return inertia_of(b)[c][r];
    }
    if r < 3u {
        return word(b, RB_CROSS + 6u * r + c - 3u);
    }
    if c < 3u {
        return word(b, RB_CROSS + 6u * c + r - 3u);
    }
    return word(b, RB_SS + 6u * (r - 3u) + c - 3u);
}

// Entry r of body b's load w over ψ.
fn load(b: u32, r: u32) -> f32 {
    if r < 3u {
        return word(b, RB_TORQUE + r);
    }
    return word(b, RB_SIGMA + r - 3u);
}

// The minimiser of body b's quadratic alone (free flight) into q; false where its K is not
// positive definite.
fn free_motion(b: u32, q: ptr<function, array<f32, 12>>) -> bool {
    let t = vec_at(b, RB_FORCE) / word(b, RB_STIFF);
    (*q)[0] = t.x;
    (*q)[1] = t.y;
    (*q)[2] = t.z;
    let n = params.dof - 3u;
    var a = array<f32, 81>();
    var y = array<f32, 9>();
    for (var r = 0u; r < n; r++) {
        y[r] = load(b, r);
        for (var c = 0u; c < n; c++) {
            a[9u * r + c] = inner(b, r, c);
        }
    }
    // Cholesky, then the two triangular solves.
    for (var j = 0u; j < n; j++) {
        var d = a[10u * j];
        for (var k = 0u; k < j; k++) {
            d -= a[9u * j + k] * a[9u * j + k];
        }
        if !(d > 0.0) {
            return false;
        }
        let l = sqrt(d);
        a[10u * j] = l;
        for (var i = j + 1u; i < n; i++) {
            var x = a[9u * i + j];
            for (var k = 0u; k < j; k++) {
                x -= a[9u * i + k] * a[9u * j + k];
            }
            a[9u * i + j] = x / l;
        }
    }
    for (var i = 0u; i < n; i++) {
        var x = y[i];
        for (var k = 0u; k < i; k++) {
            x -= a[9u * i + k] * y[k];
        }
        y[i] = x / a[10u * i];
    }
    for (var ii = 0u; ii < n; ii++) {
        let i = n - 1u - ii;
        var x = y[i];
        for (var k = i + 1u; k < n; k++) {
            x -= a[9u * k + i] * y[k];
        }
        y[i] = x / a[10u * i];
    }
    for (var r = 0u; r < n; r++) {
        (*q)[3u + r] = y[r];
    }
    return true;
}

// src/solver/vbd/rigid_energy.rs contact_term: the contact layer on the gap along n̂ (the
// penalty, or the stiffening layer of lib/layer.wgsl), lagged friction on the slip's part
// normal to n0.
fn contact_term(gap: f32, n: vec3<f32>, k: f32, n0: vec3<f32>, slip: vec3<f32>, mu_lambda: f32) -> Term {
    var t = Term(0.0, vec3<f32>(0.0), mat3x3<f32>());
    if gap < params.offset {
        let pen = params.offset - gap;
        var fs = vec2<f32>(k * pen, k);
        var e = 0.5 * k * pen * pen;
        if (params.contact_flags & 2u) != 0u {
            fs = layer_force_stiffness(gap, k, params.offset);
            e = layer_energy(gap, k, params.offset);
        }
        t.e += e;
        t.g -= n * fs.x;
        t.h += outer3(n, n) * fs.y;
    }
    if mu_lambda > 0.0 {
        let eps = params.static_slip;
        let u = slip - n0 * dot(n0, slip);
        let ul = length(u);
        t.e += mu_lambda * friction_f0(ul, eps);
        let tangent = diag3(1.0) - outer3(n0, n0);
        let f1u = friction_f1_over_u(ul, eps);
        if ul > 0.0 {
            let uh = u / ul;
            let along = outer3(uh, uh);
            t.g += u * (mu_lambda * f1u);
            t.h += (tangent - along) * (mu_lambda * f1u) + along * (mu_lambda * friction_f1_prime(ul, eps));
        } else {
            t.h += tangent * (mu_lambda * f1u);
        }
    }
    return t;
}

// An obstacle candidate or a surface coupling, with its sides and its energy terms.
struct Item {
    valid: bool,
    sides: array<Side, 2>,
    term: Term,
}

// Vertex v (of the group's slot s, body b) against obstacle k.
fn candidate(s: u32, b: u32, v: u32, k: u32) -> Item {
    var item: Item;
    item.valid = true;
    let o = params.obstacles.items[k];
    let x = positions[v].xyz;
    item.sides[0] = side_of(s, 1.0, b, x);
    item.sides[1] = NO_SIDE;
    var k_c = params.stiffness;
    if (params.contact_flags & 1u) == 1u {
        k_c *= masses[v];
    }
    // Normal force and friction frame lagged from x^n.
    let start = steps[v].start.xyz;
    let at_start = obstacle_distance(o, start);
    var lambda = k_c * max(params.offset - at_start.d, 0.0);
    if (params.contact_flags & 2u) != 0u {
        lambda = layer_force_stiffness(at_start.d, k_c, params.offset).x;
    }
    let mu = 0.5 * (records[params.bodies + 2u * b].z + o.friction);
    let p = x + shift(item.sides[0]);
    let sd = obstacle_distance(o, p);
    item.term = contact_term(sd.d, sd.n, k_c, at_start.n, p - start, mu * lambda);
    return item;
}

// Candidate e of the group's list at `list`: its vertex, and its slot << 8 | obstacle mask.
fn listed(list: u32, e: u32) -> vec2<u32> {
    return vec2<u32>(rigid[list + 2u * e], rigid[list + 2u * e + 1u]);
}

// Pair k, if it is one of group `root`'s couplings: a pair with energy between two bodies, the
// group's if its first body is solved in it, or its first body is solved in no group and its
// second is solved in this one.
fn coupling(k: u32, root: u32) -> Item {
    var item: Item;
    item.valid = false;
    let c = params.contact;
    let p = c.pairs + PAIR_WORDS * k;
    let v = vec4<u32>(contacts[p], contacts[p + 1u], contacts[p + 2u], contacts[p + 3u]);
    let a = body_of_vertex(v.x);
    let b = body_of_vertex(v.w);
    let stiffness = bitcast<f32>(contacts[p + PAIR_STIFFNESS]);
    if a == b || !(stiffness > 0.0) {
        return item;
    }
    let ours = member_of(a, root) || (!solved(a) && member_of(b, root));
    if !ours {
        return item;
    }
    item.valid = true;
    var w = vec4<f32>(bitcast<f32>(contacts[p + 12u]), bitcast<f32>(contacts[p + 13u]),
                      bitcast<f32>(contacts[p + 14u]), bitcast<f32>(contacts[p + 15u]));
    var x = array<vec3<f32>, 4>(positions[v.x].xyz, positions[v.y].xyz, positions[v.z].xyz, positions[v.w].xyz);
    let start = array<vec3<f32>, 4>(steps[v.x].start.xyz, steps[v.y].start.xyz, steps[v.z].start.xyz,
                                    steps[v.w].start.xyz);
    var vb = vec4<u32>(a, body_of_vertex(v.y), body_of_vertex(v.z), b);
    for (var i = 0u; i < 2u; i++) {
        var body = a;
        if i == 1u {
            body = b;
        }
        item.sides[i] = NO_SIDE;
        if !member_of(body, root) {
            continue;
        }
        // This side's weights and closest point (Σ w x / Σ w), written out rather than looped
        // (this runs for every stored pair in every block: lavapipe's loop budget,
        // shaders/README.md).
        let mine = (vb == vec4<u32>(a)) == vec4<bool>(i == 0u);
        let wm = select(vec4<f32>(0.0), w, mine);
        let coef = wm.x + wm.y + wm.z + wm.w;
        let at = x[0] * wm.x + x[1] * wm.y + x[2] * wm.z + x[3] * wm.w;
        var arm = vec3<f32>(0.0);
        if coef != 0.0 {
            arm = at / coef - vec_at(body, RB_CENTER);
        }
        item.sides[i] = Side(rigid[rigid_record(body) + RB_SLOT], coef, arm, f32(rotates(body)), f32(stretches(body)));
    }
    let n = vec3<f32>(bitcast<f32>(contacts[p + 4u]), bitcast<f32>(contacts[p + 5u]), bitcast<f32>(contacts[p + 6u]));
    let gap = dot(n, x[0] * w.x + x[1] * w.y + x[2] * w.z + x[3] * w.w);
    let slip = (x[0] - start[0]) * w.x + (x[1] - start[1]) * w.y + (x[2] - start[2]) * w.z + (x[3] - start[3]) * w.w;
    let s = shift(item.sides[0]) + shift(item.sides[1]);
    let mu_lambda = bitcast<f32>(contacts[p + PAIR_FRICTION]) * bitcast<f32>(contacts[p + PAIR_FRICTION_FORCE]);
    item.term = contact_term(gap + dot(n, s), n, stiffness, n, slip + s, mu_lambda);
    return item;
}

fn stored_pairs() -> u32 {
    if params.pairs == 0u {
        return 0u;
    }
    return min(control[CONTROL_PAIR_COUNT], params.contact.capacity);
}

// Tree sum of red[lane·WIDTH + k], k < width, into red[k]. Uniform control flow only.
fn reduce(lane: u32, width: u32) {
    workgroupBarrier();
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lane < stride {
            for (var k = 0u; k < width; k++) {
                red[lane * WIDTH + k] += red[(lane + stride) * WIDTH + k];
            }
        }
        workgroupBarrier();
    }
}

// E at `point`, for group `root` of g bodies with `candidates` listed at `list` (every
// invocation returns it).
fn energy(lane: u32, root: u32, g: u32, list: u32, candidates: u32) -> f32 {
    var e = 0.0;
    for (var c = lane; c < candidates; c += 64u) {
        let entry = listed(list, c);
        let s = entry.y >> 8u;
        for (var k = 0u; k < params.obstacles.count; k++) {
            if (entry.y & (1u << k)) != 0u {
                e += candidate(s, members[s], entry.x, k).term.e;
            }
        }
    }
    for (var k = lane; k < stored_pairs(); k += 64u) {
        let it = coupling(k, root);
        if it.valid {
            e += it.term.e;
        }
    }
    if params.dof == 6u && lane == 0u {
        for (var s = 0u; s < g; s++) {
            let b = members[s];
            let i = 6u * s;
            let t = vec3<f32>(point[i], point[i + 1u], point[i + 2u]);
            let theta = vec3<f32>(point[i + 3u], point[i + 4u], point[i + 5u]);
            e += 0.5 * word(b, RB_STIFF) * dot(t, t) + 0.5 * dot(theta, inertia_of(b) * theta)
                - dot(vec_at(b, RB_FORCE), t) - dot(vec_at(b, RB_TORQUE), theta);
        }
    }
    // With the affine space each body's quadratic by its own invocation: its 9 × 9 loops on
    // one invocation ran out of lavapipe's loop budget (shaders/README.md).
    if params.dof == 12u && lane < g {
        let n = params.dof - 3u;
        let b = members[lane];
        let i = params.dof * lane;
        let t = vec3<f32>(point[i], point[i + 1u], point[i + 2u]);
        e += 0.5 * word(b, RB_STIFF) * dot(t, t) - dot(vec_at(b, RB_FORCE), t);
        {
            for (var r = 0u; r < n; r++) {
                var kr = 0.0;
                for (var c = 0u; c < n; c++) {
                    kr += inner(b, r, c) * point[i + 3u + c];
                }
                e += point[i + 3u + r] * (0.5 * kr - load(b, r));
            }
        }
    }
    red[lane * WIDTH] = e;
    reduce(lane, 1u);
    if lane == 0u {
        value = red[0];
    }
    return workgroupUniformLoad(&value);
}




// Adds an item's terms for block (i, j) to a partial block (row-major 6×6, then the gradient
// of slot i when i = j).
fn add_item(acc: ptr<function, array<f32, 42>>, it: Item, i: u32, j: u32) {
    for (var a = 0u; a < 2u; a++) {
        let si = it.sides[a];
        if si.slot != i {
            continue;
        }
        if i == j {
            let gt = it.term.g * si.coef;
            let gr = cross(si.arm * si.turn, it.term.g) * si.coef;
            for (var r = 0u; r < 3u; r++) {
                (*acc)[36u + r] += gt[r];
                (*acc)[39u + r] += gr[r];
            }
        }
        let ski = skew3(si.arm * si.turn);
        for (var c = 0u; c < 2u; c++) {
            let sj = it.sides[c];
            if sj.slot != j {
                continue;
            }
            let h = it.term.h * (si.coef * sj.coef);
            let skj = skew3(sj.arm * sj.turn);
            let tr = (h * skj) * -1.0;
            let rt = ski * h;
            let rr = (ski * h * skj) * -1.0;
            for (var r = 0u; r < 3u; r++) {
                for (var col = 0u; col < 3u; col++) {
                    (*acc)[r * 6u + col] += h[col][r];
                    (*acc)[r * 6u + col + 3u] += tr[col][r];
                    (*acc)[(r + 3u) * 6u + col] += rt[col][r];
                    (*acc)[(r + 3u) * 6u + col + 3u] += rr[col][r];
                }
            }
        }
    }
}

// Block (i, j) of the Hessian (and slot i's gradient when i = j) at `point` = q, written to
// the matrix at `base` (n × n, row-major) and `grad`.
fn assemble_block(lane: u32, root: u32, i: u32, j: u32, list: u32, candidates: u32, base: u32, n: u32) {
    var acc = array<f32, 42>();
    if i == j {
        for (var c = lane; c < candidates; c += 64u) {
            let entry = listed(list, c);
            if (entry.y >> 8u) != i {
                continue;
            }
            for (var k = 0u; k < params.obstacles.count; k++) {
                if (entry.y & (1u << k)) != 0u {
                    add_item(&acc, candidate(i, members[i], entry.x, k), i, j);
                }
            }
        }
    }
    for (var k = lane; k < stored_pairs(); k += 64u) {
        let it = coupling(k, root);
        if it.valid {
            add_item(&acc, it, i, j);
        }
    }
    for (var half = 0u; half < 2u; half++) {
        for (var k = 0u; k < WIDTH; k++) {
            red[lane * WIDTH + k] = acc[half * WIDTH + k];
        }
        reduce(lane, WIDTH);
        if lane == 0u {
            for (var k = 0u; k < WIDTH; k++) {
                let e = half * WIDTH + k;
                let x = red[k];
                if e < 36u {
                    let r = e / 6u;
                    let c = e % 6u;
                    rigid[base + (6u * i + r) * n + 6u * j + c] = bitcast<u32>(x);
                    if i != j {
                        rigid[base + (6u * j + c) * n + 6u * i + r] = bitcast<u32>(x);
                    }
                } else if i == j {
                    grad[6u * i + e - 36u] = x;
                }
            }
        }
        storageBarrier();
        workgroupBarrier();
    }
}

// add_item for the affine space: block (i, j) row-major 12 × 12, then slot i's gradient when
// i = j; J_iᵀ g and J_iᵀ h J_j by 3 × 3 blocks of J. A separate function with its own, larger
// accumulator: zero-initialising 156 values in every rigid block ran the 8-body stack's solve
// out of lavapipe's loop budget (shaders/README.md).
fn add_item_affine(acc: ptr<function, array<f32, 156>>, it: Item, i: u32, j: u32) {
    let dof = params.dof;
    let blocks = dof / 3u;
    for (var a = 0u; a < 2u; a++) {
        let si = it.sides[a];
        if si.slot != i {
            continue;
        }
        if i == j {
            for (var p = 0u; p < 4u; p++) {
                if p < blocks {
                    let v = transpose(jacobian_block(si, p)) * it.term.g * si.coef;
                    for (var r = 0u; r < 3u; r++) {
                        (*acc)[dof * dof + 3u * p + r] += v[r];
                    }
                }
            }
        }
        for (var c = 0u; c < 2u; c++) {
            let sj = it.sides[c];
            if sj.slot != j {
                continue;
            }
            let h = it.term.h * (si.coef * sj.coef);
            for (var q = 0u; q < 4u; q++) {
                if q < blocks {
                    let hb = h * jacobian_block(sj, q);
                    for (var p = 0u; p < 4u; p++) {
                        if p < blocks {
                            let m = transpose(jacobian_block(si, p)) * hb;
                            for (var r = 0u; r < 3u; r++) {
                                for (var col = 0u; col < 3u; col++) {
                                    (*acc)[(3u * p + r) * dof + 3u * q + col] += m[col][r];
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

// Block (i, j) of the Hessian (and slot i's gradient when i = j) at `point` = q, written to
// the matrix at `base` (n × n, row-major) and `grad`.
fn assemble_block_affine(lane: u32, root: u32, i: u32, j: u32, list: u32, candidates: u32, base: u32, n: u32) {
    var acc = array<f32, 156>();
    if i == j {
        for (var c = lane; c < candidates; c += 64u) {
            let entry = listed(list, c);
            if (entry.y >> 8u) != i {
                continue;
            }
            for (var k = 0u; k < params.obstacles.count; k++) {
                if (entry.y & (1u << k)) != 0u {
                    add_item_affine(&acc, candidate(i, members[i], entry.x, k), i, j);
                }
            }
        }
    }
    for (var k = lane; k < stored_pairs(); k += 64u) {
        let it = coupling(k, root);
        if it.valid {
            add_item_affine(&acc, it, i, j);
        }
    }
    for (var round = 0u; round < (MAX_BLOCK + WIDTH - 1u) / WIDTH; round++) {
        assemble_round(lane, &acc, round, i, j, base, n);
    }
}

// Round `round` of a block's reduction: WIDTH of its values summed over the workgroup and
// written to the matrix at `base` (n × n) and to `grad`.
fn assemble_round(lane: u32, acc: ptr<function, array<f32, 156>>, round: u32, i: u32, j: u32, base: u32, n: u32) {
    let dof = params.dof;
    let block = dof * dof + dof;
    for (var k = 0u; k < WIDTH; k++) {
        let e = round * WIDTH + k;
        red[lane * WIDTH + k] = select(0.0, (*acc)[min(e, MAX_BLOCK - 1u)], e < block);
    }
    reduce(lane, WIDTH);
    if lane == 0u {
        for (var k = 0u; k < WIDTH; k++) {
            let e = round * WIDTH + k;
            let x = red[k];
            if e < dof * dof {
                let r = e / dof;
                let c = e % dof;
                rigid[base + (dof * i + r) * n + dof * j + c] = bitcast<u32>(x);
                if i != j {
                    rigid[base + (dof * j + c) * n + dof * i + r] = bitcast<u32>(x);
                }
            } else if i == j && e < block {
                grad[dof * i + e - dof * dof] = x;
            }
        }
    }
    storageBarrier();
    workgroupBarrier();
}

fn matrix(base: u32, n: u32, r: u32, c: u32) -> f32 {
    return bitcast<f32>(rigid[base + r * n + c]);
}

fn set_matrix(base: u32, n: u32, r: u32, c: u32, x: f32) {
    rigid[base + r * n + c] = bitcast<u32>(x);
}

// Cholesky factor of the n × n matrix at `base` in place (lower triangle), column by column;
// false when a pivot is not positive and finite.
fn factor(lane: u32, base: u32, n: u32) -> bool {
    for (var j = 0u; j < n; j++) {
        if lane == 0u {
            var d = matrix(base, n, j, j);
            for (var k = 0u; k < j; k++) {
                d -= matrix(base, n, j, k) * matrix(base, n, j, k);
            }
            flag = u32(d > 0.0 && d < 3.0e38);
            set_matrix(base, n, j, j, sqrt(max(d, 0.0)));
        }
        storageBarrier();
        if workgroupUniformLoad(&flag) == 0u {
            return false;
        }
        let d = matrix(base, n, j, j);
        for (var i = j + 1u + lane; i < n; i += 64u) {
            var s = matrix(base, n, i, j);
            for (var k = 0u; k < j; k++) {
                s -= matrix(base, n, i, k) * matrix(base, n, j, k);
            }
            set_matrix(base, n, i, j, s / d);
        }
        storageBarrier();
        workgroupBarrier();
    }
    return true;
}

// The stretch S of the coordinates at q[i..i + dof] (zero in the rigid space).
fn stretch_at(i: u32) -> mat3x3<f32> {
    if params.dof != 12u {
        return mat3x3<f32>();
    }
    return stretch_matrix(array<f32, 6>(q[i + 6u], q[i + 7u], q[i + 8u], q[i + 9u], q[i + 10u], q[i + 11u]));
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let l = params.rigid;
    let root = group.x;
    if lane == 0u {
        var go = root < l.bodies && (body_flags(root) & RIGID_ELIGIBLE) != 0u;
        go = go && rigid[rigid_record(root) + RB_LABEL] == root;
        go = go && rigid[rigid_record(root) + RB_SIZE] <= MAX_GROUP_BODIES;
        flag = u32(go);
    }
    if workgroupUniformLoad(&flag) == 0u {
        return;
    }
    if lane == 0u {
        count_u = rigid[rigid_record(root) + RB_SIZE];
    }
    let g = workgroupUniformLoad(&count_u);
    let dof = params.dof;
    let n = dof * g;
    var base = l.pool;
    if root > 0u {
        base += rigid[l.sizes + root - 1u];
    }
    // The group's bodies by slot; each one's largest unconstrained move.
    for (var b = root + lane; b < l.bodies; b += 64u) {
        if member_of(b, root) {
            members[rigid[rigid_record(b) + RB_SLOT]] = b;
        }
    }
    for (var k = lane; k < n; k += 64u) {
        q[k] = 0.0;
        point[k] = 0.0;
    }
    for (var k = lane; k < 72u; k += 64u) {
        atomicStore(&joined[k], 0u);
    }
    workgroupBarrier();
    if lane == 0u {
        var ok = true;
        var reach = 0.0;
        for (var s = 0u; s < g; s++) {
            let b = members[s];
            let stiff = word(b, RB_STIFF);
            ok = ok && stiff > 0.0;
            var free = array<f32, 12>();
            var turn = 0.0;
            if dof == 6u {
                // Written out: no loop (lavapipe's loop budget).
                let j = inertia_of(b);
                if determinant(j) > 0.0 {
                    turn = length(inverse3(j) * vec_at(b, RB_TORQUE));
                }
            } else if free_motion(b, &free) {
                turn = length(vec3<f32>(free[3], free[4], free[5]));
                var stretch = 0.0;
                for (var k = 6u; k < 12u; k++) {
                    // Off-diagonal stretches count twice in |S|.
                    stretch += free[k] * free[k] * select(1.0, 2.0, k >= 9u);
                }
                turn += sqrt(stretch);
            }
            reach = max(reach, length(vec_at(b, RB_FORCE) / stiff) + turn * word(b, RB_ARM));
        }
        // Nothing to move (no mass): the whole group is left to the sweeps.
        flag = u32(ok);
        value = reach + 2.0 * params.offset;
    }
    if workgroupUniformLoad(&flag) == 0u {
        return;
    }
    let reach = workgroupUniformLoad(&value);
    // The obstacle candidates, listed once (the positions do not change during the solve):
    // every vertex that can reach an obstacle's contact layer within the largest
    // unconstrained move, as (vertex, slot << 8 | obstacle mask), in the order of the group's
    // vertices. Each invocation lists a contiguous chunk; a prefix sum places the chunks.
    let list = base + n * n;
    if lane == 0u {
        count_u = rigid[rigid_record(root) + RB_VERTICES];
    }
    let group_vertices = workgroupUniformLoad(&count_u);
    let chunk = (group_vertices + 63u) / 64u;
    let lo = lane * chunk;
    let hi = min(lo + chunk, group_vertices);
    var found = 0u;
    for (var round = 0u; round < 2u; round++) {
        if round == 1u {
            chunks[lane] = found;
            workgroupBarrier();
            if lane == 0u {
                var sum = 0u;
                for (var t = 0u; t < 64u; t++) {
                    let c = chunks[t];
                    chunks[t] = sum;
                    sum += c;
                }
                count_u = sum;
            }
            workgroupBarrier();
            found = chunks[lane];
        }
        var at = 0u;
        for (var s = 0u; s < g; s++) {
            let b = members[s];
            let record = records[params.bodies + 2u * b];
            let first = bitcast<u32>(record.x);
            let count = bitcast<u32>(record.y);
            let begin = max(lo, at);
            let finish = min(hi, at + count);
            for (var k = begin; k < finish; k++) {
                let v = first + k - at;
                let x = positions[v].xyz;
                var mask = 0u;
                for (var o = 0u; o < params.obstacles.count; o++) {
                    if obstacle_distance(params.obstacles.items[o], x).d < params.offset + reach {
                        mask |= 1u << o;
                    }
                }
                if mask != 0u {
                    if round == 1u {
                        rigid[list + 2u * found] = v;
                        rigid[list + 2u * found + 1u] = (s << 8u) | mask;
                    }
                    found += 1u;
                }
            }
            at += count;
        }
        if round == 0u {
            workgroupBarrier();
        }
    }
    let candidates = workgroupUniformLoad(&count_u);
    storageBarrier();
    // Which slots pairs join, and whether there is anything but inertia at all.
    var items = 0u;
    for (var k = lane; k < stored_pairs(); k += 64u) {
        let it = coupling(k, root);
        if it.valid {
            items += 1u;
            let a = it.sides[0].slot;
            let c = it.sides[1].slot;
            if a != NONE && c != NONE {
                let bit = min(a, c) * MAX_GROUP_BODIES + max(a, c);
                atomicOr(&joined[bit / 32u], 1u << (bit % 32u));
            }
        }
    }
    red[lane * WIDTH] = f32(items);
    reduce(lane, 1u);
    if lane == 0u {
        flag = u32(red[0] > 0.0 || candidates > 0u);
    }
    if workgroupUniformLoad(&flag) == 0u {
        // Free flight: each body's quadratic alone.
        if lane < g {
            var free = array<f32, 12>();
            var ok = free_motion(members[lane], &free);
            for (var k = 0u; k < dof; k++) {
                // A singular quadratic leaves its body unmoved (not finite: see the end).
                q[dof * lane + k] = select(bitcast<f32>(0x7fc00000u), free[k], ok);
            }
        }
        workgroupBarrier();
    } else {
        for (var it = 0u; it < NEWTON_STEPS; it++) {
            for (var k = lane; k < n; k += 64u) {
                point[k] = q[k];
            }
            workgroupBarrier();
            let e0 = energy(lane, root, g, list, candidates);
            for (var i = 0u; i < g; i++) {
                for (var j = i; j < g; j++) {
                    let bit = i * MAX_GROUP_BODIES + j;
                    if lane == 0u {
                        flag = u32(i == j || (atomicLoad(&joined[bit / 32u]) & (1u << (bit % 32u))) != 0u);
                    }
                    if workgroupUniformLoad(&flag) == 1u && dof == 6u {
                        assemble_block(lane, root, i, j, list, candidates, base, n);
                    } else if workgroupUniformLoad(&flag) == 1u {
                        assemble_block_affine(lane, root, i, j, list, candidates, base, n);
                    } else {
                        for (var k = lane; k < dof * dof; k += 64u) {
                            set_matrix(base, n, dof * i + k / dof, dof * j + k % dof, 0.0);
                            set_matrix(base, n, dof * j + k % dof, dof * i + k / dof, 0.0);
                        }
                    }
                }
            }
            storageBarrier();
            workgroupBarrier();
            // Each body's inertia and drag (and elasticity).
            if lane < g {
                let b = members[lane];
                let i = dof * lane;
                let stiff = word(b, RB_STIFF);
                let t = vec3<f32>(q[i], q[i + 1u], q[i + 2u]);
                let gt = t * stiff - vec_at(b, RB_FORCE);
                for (var r = 0u; r < 3u; r++) {
                    grad[i + r] += gt[r];
                    set_matrix(base, n, i + r, i + r, matrix(base, n, i + r, i + r) + stiff);
                }
                if dof == 6u {
                    // Written out: no loop but the unrolled 3 × 3 (lavapipe's loop budget).
                    let jm = inertia_of(b);
                    let gr = jm * vec3<f32>(q[i + 3u], q[i + 4u], q[i + 5u]) - vec_at(b, RB_TORQUE);
                    for (var r = 0u; r < 3u; r++) {
                        grad[i + 3u + r] += gr[r];
                        for (var c = 0u; c < 3u; c++) {
                            set_matrix(base, n, i + 3u + r, i + 3u + c, matrix(base, n, i + 3u + r, i + 3u + c) + jm[c][r]);
                        }
                    }
                } else {
                    for (var r = 0u; r < dof - 3u; r++) {
                        var kr = 0.0;
                        for (var c = 0u; c < dof - 3u; c++) {
                            let k = inner(b, r, c);
                            kr += k * q[i + 3u + c];
                            set_matrix(base, n, i + 3u + r, i + 3u + c, matrix(base, n, i + 3u + r, i + 3u + c) + k);
                        }
                        grad[i + 3u + r] += kr - load(b, r);
                    }
                }
            }
            storageBarrier();
            workgroupBarrier();
            if !factor(lane, base, n) {
                break;
            }
            // L y = −g, then Lᵀ dq = y; the slope g·dq.
            if lane == 0u {
                for (var i = 0u; i < n; i++) {
                    var s = -grad[i];
                    for (var k = 0u; k < i; k++) {
                        s -= matrix(base, n, i, k) * dq[k];
                    }
                    dq[i] = s / matrix(base, n, i, i);
                }
                for (var ii = 0u; ii < n; ii++) {
                    let i = n - 1u - ii;
                    var s = dq[i];
                    for (var k = i + 1u; k < n; k++) {
                        s -= matrix(base, n, k, i) * dq[k];
                    }
                    dq[i] = s / matrix(base, n, i, i);
                }
                var slope = 0.0;
                var size = 0.0;
                for (var i = 0u; i < n; i++) {
                    slope += grad[i] * dq[i];
                    size += dq[i] * dq[i];
                }
                flag = u32(slope < 0.0);
                value = slope;
                value2 = sqrt(size);
            }
            if workgroupUniformLoad(&flag) == 0u {
                break;
            }
            let slope = workgroupUniformLoad(&value);
            let size = workgroupUniformLoad(&value2);
            var alpha = 1.0;
            var accepted = false;
            for (var ls = 0u; ls < LINE_SEARCH_STEPS; ls++) {
                // As on the CPU: a trial moving nothing by more than ~10 nm changes the energy by
                // less than its rounding, and halving on only evaluates noise (and spends
                // lavapipe's loop budget: shaders/README.md).
                if alpha * size < 1e-8 {
                    break;
                }
                for (var k = lane; k < n; k += 64u) {
                    point[k] = q[k] + alpha * dq[k];
                }
                workgroupBarrier();
                if energy(lane, root, g, list, candidates) <= e0 + 1e-4 * alpha * slope {
                    accepted = true;
                    break;
                }
                alpha *= 0.5;
            }
            if !accepted {
                break;
            }
            for (var k = lane; k < n; k += 64u) {
                q[k] = point[k];
            }
            workgroupBarrier();
            // Converged once the last step moves nothing by more than a nanometre.
            if alpha * size < 1e-9 {
                break;
            }
        }
    }
    // Apply: each body's motion, scaled back so that no vertex enters an obstacle. One pass
    // over the group's vertices keeps each slot's earliest entry with an atomic minimum (the
    // bits of non-negative floats order as the floats do, and a minimum does not depend on
    // the order), then one invocation per body writes its motion: fewer loop iterations and
    // barriers than a tree reduction per body (loop iterations are budgeted on lavapipe, see
    // shaders/README.md).
    for (var s = lane; s < g; s += 64u) {
        atomicStore(&tois[s], bitcast<u32>(1.0));
    }
    workgroupBarrier();
    for (var s = 0u; s < g; s++) {
        let b = members[s];
        let i = dof * s;
        let t = vec3<f32>(q[i], q[i + 1u], q[i + 2u]);
        let center = vec_at(b, RB_CENTER);
        let rot = rotation_of(vec3<f32>(q[i + 3u], q[i + 4u], q[i + 5u])) * (diag3(1.0) + stretch_at(i));
        let record = records[params.bodies + 2u * b];
        let first = bitcast<u32>(record.x);
        let end = first + bitcast<u32>(record.y);
        var toi = 1.0;
        for (var v = first + lane; v < end; v += 64u) {
            let x = positions[v].xyz;
            let moved = center + rot * (x - center) + t;
            for (var k = 0u; k < params.obstacles.count; k++) {
                let e = obstacle_entry(params.obstacles.items[k], x, moved);
                if e != NO_ENTRY {
                    toi = min(toi, e);
                }
            }
        }
        if toi < 1.0 {
            atomicMin(&tois[s], bitcast<u32>(max(toi, 0.0)));
        }
    }
    workgroupBarrier();
    if lane < g {
        let s = lane;
        let b = members[s];
        let i = dof * s;
        let t = vec3<f32>(q[i], q[i + 1u], q[i + 2u]);
        let theta = vec3<f32>(q[i + 3u], q[i + 4u], q[i + 5u]);
        let earliest = bitcast<f32>(atomicLoad(&tois[s]));
        var scale = 1.0;
        if earliest < 1.0 {
            scale = earliest * (1.0 - 1e-4);
        }
        var stretch = array<f32, 6>();
        var finite = !(non_finite(vec4<f32>(t, 0.0)) || non_finite(vec4<f32>(theta, 0.0)));
        if dof == 12u {
            for (var k = 0u; k < 6u; k++) {
                stretch[k] = q[i + 6u + k];
                finite = finite && !non_finite(vec4<f32>(stretch[k]));
            }
        }
        let r = rigid_record(b);
        rigid[r + RB_TRANSLATION] = bitcast<u32>(t.x * scale);
        rigid[r + RB_TRANSLATION + 1u] = bitcast<u32>(t.y * scale);
        rigid[r + RB_TRANSLATION + 2u] = bitcast<u32>(t.z * scale);
        rigid[r + RB_ROTATION] = bitcast<u32>(theta.x * scale);
        rigid[r + RB_ROTATION + 1u] = bitcast<u32>(theta.y * scale);
        rigid[r + RB_ROTATION + 2u] = bitcast<u32>(theta.z * scale);
        for (var k = 0u; k < 6u; k++) {
            rigid[r + RB_STRETCH + k] = bitcast<u32>(stretch[k] * scale);
        }
        rigid[r + RB_MOVES] = u32(finite);
    }
}

