// The rigid correction's state on the GPU (src/gpu/rigid/rigid_groups.rs RigidLayout): one
// record of RIGID_WORDS u32 per body, each group's dense Newton matrix in a pool, and the
// rotation and stretch of a motion. Not a kernel: host wrappers prepend this file.

struct RigidLayout {
    bodies: u32,
    // Word offsets in `rigid`: per body its pool words (at group roots: the group's Newton
    // matrix and its obstacle candidates), scanned in place into where each root's region ends;
    // the scan's block sums; the pool.
    sizes: u32,
    sums: u32,
    pool: u32,
}

const RIGID_WORDS: u32 = 128u;
// Record words: group label (a smaller body of the group, or the body itself for the root),
// members (at the root), slot in the group, flags.
const RB_LABEL: u32 = 0u;
const RB_SIZE: u32 = 1u;
const RB_SLOT: u32 = 2u;
const RB_FLAGS: u32 = 3u;
// At a root: the vertices of its group's bodies.
const RB_VERTICES: u32 = 4u;
// The body's coarse quadratic (f32 bits): A-weighted centre and ΣA, J = ΣA(|r|² I − r rᵀ)
// (xx, yy, zz, xy, xz, yz), force, torque, the largest arm.
const RB_CENTER: u32 = 5u;
const RB_STIFF: u32 = 8u;
const RB_INERTIA: u32 = 9u;
const RB_FORCE: u32 = 15u;
const RB_TORQUE: u32 = 18u;
const RB_ARM: u32 = 21u;
// The correction: translation, rotation vector, and 1 when the body moves.
const RB_TRANSLATION: u32 = 22u;
const RB_ROTATION: u32 = 25u;
const RB_MOVES: u32 = 28u;
// The affine coarse space (src/solver/vbd/rigid_energy.rs BodyQuadratic, CoarseSpace::Affine):
// the motion's stretch s (six, Voigt order xx, yy, zz, yz, xz, xy; zero for the rigid space),
// then the quadratic's K_θs (3 × 6, row-major), K_ss (6 × 6, row-major, elasticity included)
// and σ (the stretch load less the elastic gradient).
const RB_STRETCH: u32 = 29u;
const RB_CROSS: u32 = 35u;
const RB_SS: u32 = 53u;
const RB_SIGMA: u32 = 89u;

// Flags: set by the host for the stepper's life...
const RIGID_ELIGIBLE: u32 = 1u;
const RIGID_VOLUMETRIC: u32 = 2u;
// ... and from the last detection's pairs each step.
const RIGID_COUPLED: u32 = 4u;
const RIGID_TOUCHING: u32 = 8u;

// src/solver/vbd/rigid_correction.rs MAX_GROUP_BODIES: larger groups are left to the sweeps.
const MAX_GROUP_BODIES: u32 = 48u;

fn rigid_record(b: u32) -> u32 {
    return RIGID_WORDS * b;
}

// The rotation by vector θ (axis θ/|θ|, angle |θ|), as glam's Mat3A::from_axis_angle builds it.
fn rotation_of(theta: vec3<f32>) -> mat3x3<f32> {
    let angle = length(theta);
    if !(angle > 0.0) {
        return mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
    }
    let a = theta / angle;
    let s = sin(angle);
    let c = cos(angle);
    let omc = 1.0 - c;
    let xy = a.x * a.y * omc;
    let xz = a.x * a.z * omc;
    let yz = a.y * a.z * omc;
    return mat3x3<f32>(
        vec3<f32>(a.x * a.x * omc + c, xy + a.z * s, xz - a.y * s),
        vec3<f32>(xy - a.z * s, a.y * a.y * omc + c, yz + a.x * s),
        vec3<f32>(xz + a.y * s, yz - a.x * s, a.z * a.z * omc + c),
    );
}

// The inverse of a 3×3 matrix (garbage for a singular one; callers check first).
fn inverse3(m: mat3x3<f32>) -> mat3x3<f32> {
    let a0 = cross(m[1], m[2]);
    let a1 = cross(m[2], m[0]);
    let a2 = cross(m[0], m[1]);
    let det = dot(m[0], a0);
    return transpose(mat3x3<f32>(a0, a1, a2)) * (1.0 / det);
}

// A point's share `w (|r|² I − r rᵀ)` of an inertia tensor, as (xx, yy, zz, xy, xz, yz).
fn inertia_terms(r: vec3<f32>, w: f32) -> array<f32, 6> {
    let r2 = dot(r, r);
    return array<f32, 6>(
        (r2 - r.x * r.x) * w,
        (r2 - r.y * r.y) * w,
        (r2 - r.z * r.z) * w,
        -r.x * r.y * w,
        -r.x * r.z * w,
        -r.y * r.z * w,
    );
}


// Unit stretch E_k (Voigt order xx, yy, zz, yz, xz, xy; an off-diagonal E_k has both entries 1).
fn unit_stretch(k: u32) -> mat3x3<f32> {
    var m = mat3x3<f32>();
    let pairs = array<vec2<u32>, 6>(vec2<u32>(0u, 0u), vec2<u32>(1u, 1u), vec2<u32>(2u, 2u), vec2<u32>(1u, 2u),
                                    vec2<u32>(0u, 2u), vec2<u32>(0u, 1u));
    let p = pairs[k];
    m[p.x][p.y] = 1.0;
    m[p.y][p.x] = 1.0;
    return m;
}

// E_k r.
fn stretch_of(k: u32, r: vec3<f32>) -> vec3<f32> {
    switch k {
        case 0u: { return vec3<f32>(r.x, 0.0, 0.0); }
        case 1u: { return vec3<f32>(0.0, r.y, 0.0); }
        case 2u: { return vec3<f32>(0.0, 0.0, r.z); }
        case 3u: { return vec3<f32>(0.0, r.z, r.y); }
        case 4u: { return vec3<f32>(r.z, 0.0, r.x); }
        default: { return vec3<f32>(r.y, r.x, 0.0); }
    }
}

// The symmetric S of six stretch coordinates.
fn stretch_matrix(s: array<f32, 6>) -> mat3x3<f32> {
    return mat3x3<f32>(vec3<f32>(s[0], s[5], s[4]), vec3<f32>(s[5], s[1], s[3]), vec3<f32>(s[4], s[3], s[2]));
}
