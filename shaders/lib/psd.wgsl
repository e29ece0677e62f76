// Projection of a small symmetric matrix onto the positive semi-definite cone (src/math/dense.rs
// project_psd), for element Hessians in Newton solves. Not a kernel: host wrappers prepend this
// file; it uses no bindings.
//
// The CPU first tries a Cholesky factorisation and leaves a matrix that passes it alone; here
// every thread runs the same Jacobi sweeps instead, so no thread of a workgroup waits on a
// neighbour that took the other branch, and a PSD matrix comes back up to rounding. f32 sets
// the thresholds: rotations skip entries below 1e-7 of the Frobenius norm, and the sweeps stop
// once the off-diagonal mass is below that share.

// `a`: n ≤ 12, row-major in the first n² entries (a tet's 12×12 fills it).
fn project_psd(a: ptr<function, array<f32, 144>>, n: u32) {
    var norm2 = 0.0;
    for (var i = 0u; i < n * n; i++) {
        norm2 += (*a)[i] * (*a)[i];
    }
    // Not finite (or zero): nothing to rotate, and the caller's finite tests see it.
    if !(norm2 > 0.0 && norm2 < 3.0e38) {
        return;
    }
    // Eigenvectors accumulate in the columns of v.
    var v: array<f32, 144>;
    for (var i = 0u; i < n; i++) {
        v[i * n + i] = 1.0;
    }
    let tiny = 1e-7 * sqrt(norm2);
    for (var sweep = 0u; sweep < 6u; sweep++) {
        var off = 0.0;
        for (var i = 0u; i < n; i++) {
            for (var j = 0u; j < n; j++) {
                if i != j {
                    off += (*a)[i * n + j] * (*a)[i * n + j];
                }
            }
        }
        if off <= 1e-14 * norm2 {
            break;
        }
        for (var p = 0u; p < n; p++) {
            for (var q = p + 1u; q < n; q++) {
                let apq = (*a)[p * n + q];
                if abs(apq) <= tiny {
                    continue;
                }
                // The rotation that zeroes a[p][q] (Golub & Van Loan, symmetric Schur).
                let theta = ((*a)[q * n + q] - (*a)[p * n + p]) / (2.0 * apq);
                var t = sign(theta) / (abs(theta) + sqrt(theta * theta + 1.0));
                if theta == 0.0 {
                    t = 1.0;
                }
                let c = inverseSqrt(t * t + 1.0);
                let s = t * c;
                for (var k = 0u; k < n; k++) {
                    let akp = (*a)[k * n + p];
                    let akq = (*a)[k * n + q];
                    (*a)[k * n + p] = c * akp - s * akq;
                    (*a)[k * n + q] = s * akp + c * akq;
                }
                for (var k = 0u; k < n; k++) {
                    let apk = (*a)[p * n + k];
                    let aqk = (*a)[q * n + k];
                    (*a)[p * n + k] = c * apk - s * aqk;
                    (*a)[q * n + k] = s * apk + c * aqk;
                }
                for (var k = 0u; k < n; k++) {
                    let vkp = v[k * n + p];
                    let vkq = v[k * n + q];
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    // A⁺ = V max(Λ, 0) Vᵀ.
    var l: array<f32, 12>;
    for (var k = 0u; k < n; k++) {
        l[k] = max((*a)[k * n + k], 0.0);
    }
    for (var i = 0u; i < n; i++) {
        for (var j = i; j < n; j++) {
            var sum = 0.0;
            for (var k = 0u; k < n; k++) {
                sum += v[i * n + k] * l[k] * v[j * n + k];
            }
            (*a)[i * n + j] = sum;
            (*a)[j * n + i] = sum;
        }
    }
}

// Eigenvalues and eigenvectors (columns) of a symmetric 3×3 matrix by cyclic Jacobi rotations
// (src/math/sym3.rs sym3_eigen).
struct Eigen3 {
    values: vec3<f32>,
    vectors: mat3x3<f32>,
}

fn sym3_eigen(m: mat3x3<f32>) -> Eigen3 {
    // a[c][r]: column c, row r, as WGSL stores it.
    var a = m;
    var v = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
    let ps = vec3<u32>(0u, 0u, 1u);
    let qs = vec3<u32>(1u, 2u, 2u);
    for (var sweep = 0u; sweep < 12u; sweep++) {
        let off = a[1][0] * a[1][0] + a[2][0] * a[2][0] + a[2][1] * a[2][1];
        let diag = a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2];
        if !(off > 1e-14 * diag) {
            break;
        }
        for (var n = 0u; n < 3u; n++) {
            let p = ps[n];
            let q = qs[n];
            let apq = a[q][p];
            if apq == 0.0 {
                continue;
            }
            let theta = (a[q][q] - a[p][p]) / (2.0 * apq);
            let t = select(-1.0, 1.0, theta >= 0.0) / (abs(theta) + sqrt(theta * theta + 1.0));
            let c = 1.0 / sqrt(t * t + 1.0);
            let s = t * c;
            for (var k = 0u; k < 3u; k++) {
                let akp = a[p][k];
                let akq = a[q][k];
                a[p][k] = c * akp - s * akq;
                a[q][k] = s * akp + c * akq;
            }
            for (var k = 0u; k < 3u; k++) {
                let apk = a[k][p];
                let aqk = a[k][q];
                a[k][p] = c * apk - s * aqk;
                a[k][q] = s * apk + c * aqk;
            }
            for (var k = 0u; k < 3u; k++) {
                let vkp = v[p][k];
                let vkq = v[q][k];
                v[p][k] = c * vkp - s * vkq;
                v[q][k] = s * vkp + c * vkq;
            }
        }
    }
    return Eigen3(vec3<f32>(a[0][0], a[1][1], a[2][2]), v);
}

// The rotation-variant SVD F = U diag(sigma) Vᵀ, U and V rotations, sigma descending with the
// last carrying the sign of det F (src/material/stable_neo_hookean.rs rotation_svd).
struct Svd3 {
    u: mat3x3<f32>,
    sigma: vec3<f32>,
    v: mat3x3<f32>,
}

fn rotation_svd(f: mat3x3<f32>) -> Svd3 {
    let e = sym3_eigen(transpose(f) * f);
    // Descending by compare-and-swap (stable: ties keep their order, as the CPU's sort does).
    var o = vec3<u32>(0u, 1u, 2u);
    if e.values[o.x] < e.values[o.y] {
        o = o.yxz;
    }
    if e.values[o.y] < e.values[o.z] {
        o = o.xzy;
    }
    if e.values[o.x] < e.values[o.y] {
        o = o.yxz;
    }
    var v = mat3x3<f32>(e.vectors[o.x], e.vectors[o.y], e.vectors[o.z]);
    if determinant(v) < 0.0 {
        v[2] = -v[2];
    }
    let f0 = f * v[0];
    let u0 = select(vec3<f32>(1.0, 0.0, 0.0), normalize(f0), length(f0) > 0.0);
    let f1 = f * v[1];
    let r1 = f1 - u0 * dot(u0, f1);
    let t = select(vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(1.0, 0.0, 0.0), abs(u0.x) < 0.9);
    let u1 = select(normalize(cross(u0, t)), normalize(r1), length(r1) > 1e-6 * length(f0));
    let u = mat3x3<f32>(u0, u1, cross(u0, u1));
    return Svd3(u, vec3<f32>(dot(u0, f0), dot(u1, f1), dot(u[2], f * v[2])), v);
}
