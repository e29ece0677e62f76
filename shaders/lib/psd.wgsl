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
