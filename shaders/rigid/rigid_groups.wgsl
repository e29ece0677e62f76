// The groups of the rigid correction (src/solver/vbd/rigid_correction.rs build_groups): bodies that
// take it (no kinematic vertex) linked by a surface pair of the last detection form a group,
// solved together; larger groups than MAX_GROUP_BODIES are left to the sweeps. Groups are a
// union–find forest over the bodies' labels, joined lock-free (a root is hooked under the
// smaller root only by a compare-exchange that finds it still a root), so each group ends
// labelled by its smallest body whatever the order the invocations run in, and a body's slot
// is its rank among its group's bodies. Also per body: whether it has a pair with another body
// (its coarse space then turns), and whether it touches another correctable body through a pair
// with energy (src/solver/vbd/predict.rs: its adaptive initial guess starts from x^n). Phases (one
// dispatch each):
//   0  per body: its own group, flags from the host only;
//   1  per stored pair: join, flag (indirect: only the GPU knows how many pairs there are);
//   2  per body: its root, the root's member and vertex counts;
//   3  per body: its slot; at a root, the words of its group's pool region: the Newton matrix,
//      (6G)², and two words per vertex for the obstacle candidates;
//   4  per vertex: a free vertex of a touching body starts its initial guess from x^n.
// Host wrapper: src/gpu/rigid/rigid_groups.rs; prepended: lib/step.wgsl,
// lib/contact_layout.wgsl, lib/rigid.wgsl.

struct Params {
    contact: ContactLayout,
    rigid: RigidLayout,
    phase: u32,
    count: u32,
    // Where vertex_body starts in `index`; the first body record in `records` (vec4s).
    vertex_body: u32,
    bodies: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> index: array<u32>;
@group(0) @binding(2) var<storage, read> control: array<u32>;
@group(0) @binding(3) var<storage, read> contacts: array<u32>;
@group(0) @binding(4) var<storage, read_write> rigid: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> steps: array<VertexStep>;
@group(0) @binding(6) var<storage, read> flags: array<u32>;
@group(0) @binding(7) var<storage, read> records: array<vec4<f32>>;

fn body_flags(b: u32) -> u32 {
    return atomicLoad(&rigid[rigid_record(b) + RB_FLAGS]);
}

fn label(b: u32) -> u32 {
    return atomicLoad(&rigid[rigid_record(b) + RB_LABEL]);
}

fn group_root(b: u32) -> u32 {
    var r = b;
    var up = label(r);
    while up != r {
        r = up;
        up = label(r);
    }
    return r;
}

fn join(a: u32, b: u32) {
    loop {
        let ra = group_root(a);
        let rb = group_root(b);
        if ra == rb {
            return;
        }
        let hi = max(ra, rb);
        if atomicCompareExchangeWeak(&rigid[rigid_record(hi) + RB_LABEL], hi, min(ra, rb)).exchanged {
            return;
        }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let l = params.rigid;
    let i = id.x;
    switch params.phase {
        case 0u: {
            if i >= l.bodies {
                return;
            }
            let r = rigid_record(i);
            atomicStore(&rigid[r + RB_LABEL], i);
            atomicStore(&rigid[r + RB_SIZE], 0u);
            atomicStore(&rigid[r + RB_VERTICES], 0u);
            atomicStore(&rigid[r + RB_MOVES], 0u);
            atomicAnd(&rigid[r + RB_FLAGS], RIGID_ELIGIBLE | RIGID_VOLUMETRIC);
            atomicStore(&rigid[l.sizes + i], 0u);
        }
        case 1u: {
            let c = params.contact;
            if i >= min(control[CONTROL_PAIR_COUNT], c.capacity) {
                return;
            }
            let p = c.pairs + PAIR_WORDS * i;
            let a = index[params.vertex_body + contacts[p]];
            let b = index[params.vertex_body + contacts[p + 3u]];
            if a == b {
                return;
            }
            atomicOr(&rigid[rigid_record(a) + RB_FLAGS], RIGID_COUPLED);
            atomicOr(&rigid[rigid_record(b) + RB_FLAGS], RIGID_COUPLED);
            if (body_flags(a) & body_flags(b) & RIGID_ELIGIBLE) != 0u {
                join(a, b);
                if bitcast<f32>(contacts[p + PAIR_STIFFNESS]) > 0.0 {
                    atomicOr(&rigid[rigid_record(a) + RB_FLAGS], RIGID_TOUCHING);
                    atomicOr(&rigid[rigid_record(b) + RB_FLAGS], RIGID_TOUCHING);
                }
            }
        }
        case 2u: {
            if i >= l.bodies || (body_flags(i) & RIGID_ELIGIBLE) == 0u {
                return;
            }
            let root = group_root(i);
            atomicStore(&rigid[rigid_record(i) + RB_LABEL], root);
            atomicAdd(&rigid[rigid_record(root) + RB_SIZE], 1u);
            let vertices = bitcast<u32>(records[params.bodies + 2u * i].y);
            atomicAdd(&rigid[rigid_record(root) + RB_VERTICES], vertices);
        }
        case 3u: {
            if i >= l.bodies || (body_flags(i) & RIGID_ELIGIBLE) == 0u {
                return;
            }
            let root = label(i);
            var slot = 0u;
            for (var b = 0u; b < i; b++) {
                if (body_flags(b) & RIGID_ELIGIBLE) != 0u && label(b) == root {
                    slot += 1u;
                }
            }
            atomicStore(&rigid[rigid_record(i) + RB_SLOT], slot);
            let g = atomicLoad(&rigid[rigid_record(root) + RB_SIZE]);
            if i == root && g <= MAX_GROUP_BODIES {
                let vertices = atomicLoad(&rigid[rigid_record(root) + RB_VERTICES]);
                atomicStore(&rigid[l.sizes + i], 144u * g * g + 2u * vertices);
            }
        }
        default: {
            if i >= params.count || (flags[i] & VERTEX_KINEMATIC) != 0u {
                return;
            }
            if (body_flags(index[params.vertex_body + i]) & RIGID_TOUCHING) != 0u {
                steps[i].offset = vec4<f32>(0.0, 0.0, 0.0, steps[i].offset.w);
            }
        }
    }
}
