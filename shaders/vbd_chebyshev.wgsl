// Chebyshev over-relaxation after a VBD sweep, one invocation per free vertex: the GPU twin of
// the mix in src/solver/vbd.rs (src/solver/chebyshev.rs mix), with the history shift
// x_{n−2} ← x_{n−1} ← x. Bodies flagged frozen (in contact, or diverging) keep the plain
// Gauss–Seidel result. Not yet on the GPU: the displacement bound and the obstacle clamp of
// the mixed position. Host wrapper: src/gpu/kernels/vbd_chebyshev.rs.

struct Params {
    omega: f32,
    count: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> previous: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> before_previous: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> color_vertices: array<u32>;
@group(0) @binding(5) var<storage, read> vertex_body: array<u32>;
@group(0) @binding(6) var<storage, read> frozen: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= params.count {
        return;
    }
    let v = color_vertices[id.x];
    let x_bar = positions[v].xyz;
    var x = x_bar;
    if frozen[vertex_body[v]] == 0u {
        let x_nm2 = before_previous[v].xyz;
        x = (x_bar - x_nm2) * params.omega + x_nm2;
    }
    let x4 = vec4<f32>(x, 0.0);
    positions[v] = x4;
    before_previous[v] = previous[v];
    previous[v] = x4;
}
