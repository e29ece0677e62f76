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
