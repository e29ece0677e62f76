// 3×3 matrix builders shared by kernels (src/math/real.rs outer and skew). Not a kernel: host
// wrappers prepend this file; it uses no bindings.

// a bᵀ.
fn outer3(a: vec3<f32>, b: vec3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(a * b.x, a * b.y, a * b.z);
}

// d I.
fn diag3(d: f32) -> mat3x3<f32> {
    return mat3x3<f32>(vec3<f32>(d, 0.0, 0.0), vec3<f32>(0.0, d, 0.0), vec3<f32>(0.0, 0.0, d));
}

// [v]×, so that [v]× w = v × w.
fn skew3(v: vec3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(vec3<f32>(0.0, v.z, -v.y), vec3<f32>(-v.z, 0.0, v.x), vec3<f32>(v.y, -v.x, 0.0));
}
