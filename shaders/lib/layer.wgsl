// The contact layer (src/collision/contact.rs layer_force_stiffness, layer_energy): at signed
// distance d, E(d) = k δ² (d/δ − 1 − ln(d/δ)) over δ/10 ≤ d < δ, continued quadratically below
// δ/10 and 0 from δ. It is the penalty ½ k (δ − d)² to second order at δ, but its force grows as
// the layer is pressed, so a loaded contact (the bottom of a stack, the ground under a loaded
// mattress) holds short of the surface.

const LAYER_FLOOR: f32 = 0.1;

// (−E'(d), E''(d)): the layer's force and stiffness at d.
fn layer_force_stiffness(d: f32, k: f32, delta: f32) -> vec2<f32> {
    if !(d < delta) || !(k > 0.0) {
        return vec2<f32>(0.0);
    }
    let floor = LAYER_FLOOR * delta;
    let ratio = delta / max(d, floor);
    // Written as vbd_color's span contact had it (bit for bit), which predates the option.
    let force = k * delta * (ratio - 1.0) + k * (delta / floor) * (delta / floor) * max(floor - d, 0.0);
    return vec2<f32>(force, k * ratio * ratio);
}

// E(d).
fn layer_energy(d: f32, k: f32, delta: f32) -> f32 {
    if !(d < delta) || !(k > 0.0) {
        return 0.0;
    }
    let floor = LAYER_FLOOR * delta;
    let at = max(d, floor);
    // x − 1 − ln x with x = 1 − u: f32's log near 1 is good to about 5e-7 only, where the value
    // is u²/2, so close to the offset it is summed as u²/2 + u³/3 + … instead.
    let u = 1.0 - at / delta;
    var shape = at / delta - 1.0 - log(at / delta);
    if u < 0.1 {
        var term = u * u;
        shape = 0.0;
        for (var n = 2u; n <= 9u; n++) {
            shape += term / f32(n);
            term *= u;
        }
    }
    var e = k * delta * delta * shape;
    if d < floor {
        let fs = layer_force_stiffness(floor, k, delta);
        let below = floor - d;
        e += fs.x * below + 0.5 * fs.y * below * below;
    }
    return e;
}

// ContactParams::stiffened_at: the (stiffness, offset) with which add_contact (lib/contact.wgsl)
// applies the layer at d (unchanged from d ≥ δ on).
fn stiffened_layer(k: f32, delta: f32, d: f32) -> vec2<f32> {
    let fs = layer_force_stiffness(d, k, delta);
    if !(fs.y > 0.0) {
        return vec2<f32>(k, delta);
    }
    return vec2<f32>(fs.y, d + fs.x / fs.y);
}
