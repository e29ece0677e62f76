// IPC's smoothed friction (src/collision/contact.rs), shared by the VBD contact terms, the
// rigid correction and the augmented-Lagrangian pairs. Not a kernel: host wrappers prepend this
// file; it uses no bindings.

// f1(u)/u: the friction magnitude over the slip u, smoothed below eps [m].
fn friction_f1_over_u(u: f32, eps: f32) -> f32 {
    if u < eps {
        let inv = 1.0 / eps;
        return 2.0 * inv - u * inv * inv;
    }
    return 1.0 / u;
}

// f0(u): the smoothed friction potential (the integral of f1, f0(eps) = eps): a cubic while
// sticking, the slip itself once sliding (src/collision/contact.rs friction_f0).
fn friction_f0(u: f32, eps: f32) -> f32 {
    if u < eps {
        return -u * u * u / (3.0 * eps * eps) + u * u / eps + eps / 3.0;
    }
    return u;
}

// f1'(u): 2/eps − 2u/eps² while sticking, 0 once sliding (src/collision/contact.rs
// friction_f1_prime).
fn friction_f1_prime(u: f32, eps: f32) -> f32 {
    if u < eps {
        let inv = 1.0 / eps;
        return 2.0 * inv - 2.0 * u * inv * inv;
    }
    return 0.0;
}
