// Draws one frame for a picture (`pliant render`, `debug::Renderer`): shaded triangles for bodies,
// obstacles and contact markers, and a grid on every plane obstacle. Lighting is a key light
// plus a sky/ground ambient term; both sides of a triangle are lit (cloth has two).

struct View {
    view_proj: mat4x4<f32>,
    // Camera position (xyz).
    eye: vec4<f32>,
    // Direction towards the key light (xyz), unit.
    light: vec4<f32>,
    // x: minor grid spacing [m]; y: distance over which the grid fades out [m].
    grid: vec4<f32>,
}

@group(0) @binding(0) var<uniform> view: View;

struct MeshIn {
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) color: vec3<f32>,
}

struct MeshOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) color: vec3<f32>,
}

@vertex
fn vs_mesh(v: MeshIn) -> MeshOut {
    var out: MeshOut;
    out.clip = view.view_proj * vec4<f32>(v.position, 1.0);
    out.world = v.position;
    out.normal = v.normal;
    out.color = v.color;
    return out;
}

@fragment
fn fs_mesh(f: MeshOut, @builtin(front_facing) front: bool) -> @location(0) vec4<f32> {
    var n = normalize(f.normal);
    if !front {
        n = -n;
    }
    let l = view.light.xyz;
    let to_eye = normalize(view.eye.xyz - f.world);
    let diffuse = max(dot(n, l), 0.0);
    let h = normalize(l + to_eye);
    let specular = 0.2 * pow(max(dot(n, h), 0.0), 40.0);
    // Hemisphere ambient: brighter facing up, as under an overcast sky.
    let ambient = 0.32 + 0.12 * n.y;
    let c = f.color * (ambient + 0.68 * diffuse) + vec3<f32>(specular);
    return vec4<f32>(c, 1.0);
}

struct GroundIn {
    @location(0) position: vec3<f32>,
    // Coordinates in the plane [m], along two orthogonal in-plane axes.
    @location(1) uv: vec2<f32>,
}

struct GroundOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) uv: vec2<f32>,
}

@vertex
fn vs_ground(v: GroundIn) -> GroundOut {
    var out: GroundOut;
    out.clip = view.view_proj * vec4<f32>(v.position, 1.0);
    out.world = v.position;
    out.uv = v.uv;
    return out;
}

// How much of a grid line of spacing `s` covers this pixel: 1 on the line, falling to 0 one
// pixel away (screen-space derivatives keep lines one pixel wide at any distance).
fn grid_line(uv: vec2<f32>, s: f32) -> f32 {
    let g = uv / s;
    let w = max(fwidth(g), vec2<f32>(1e-6));
    let d = abs(fract(g - 0.5) - 0.5) / w;
    return 1.0 - min(min(d.x, d.y), 1.0);
}

@fragment
fn fs_ground(f: GroundOut) -> @location(0) vec4<f32> {
    let minor = grid_line(f.uv, view.grid.x);
    let major = grid_line(f.uv, 10.0 * view.grid.x);
    let fade = clamp(1.0 - length(f.world - view.eye.xyz) / view.grid.y, 0.0, 1.0);
    let base = vec3<f32>(0.80, 0.80, 0.78);
    let line = vec3<f32>(0.42, 0.44, 0.46);
    let c = mix(base, line, max(0.45 * minor, 0.9 * major) * fade);
    return vec4<f32>(c, 1.0);
}
