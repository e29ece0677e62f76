//! Pins: which vertices are prescribed during a substep, and where they must be at its end.
//! Both use the pin set active at the substep's start, so a pin releasing mid-substep still
//! gets a proper target for that substep.

use glam::{Quat, Vec3, Vec4};

use super::assemble::BodySlot;
use crate::body::{BodySet, Pin, PinMotion};
use crate::state::{SimState, VERTEX_KINEMATIC};

/// Sets `VERTEX_KINEMATIC` from the pins active at time `t`; captures anchors of pins taking
/// hold. Returns whether the kinematic set changed (colors must then be rebuilt). `mark` is
/// reusable scratch.
pub(crate) fn update_pin_flags(
    st: &mut SimState,
    bodies: &mut BodySet,
    slots: &[BodySlot],
    t: f64,
    mark: &mut Vec<bool>,
) -> bool {
    let mut changed = false;
    for s in slots {
        let Some(body) = bodies.get_mut(s.handle) else { continue };
        if body.pins.is_empty() && !body.kinematic_marked {
            continue;
        }
        let base = s.vertex_start as usize;
        mark.clear();
        mark.resize(s.vertex_count as usize, false);
        for pin in &mut body.pins {
            if !pin.active_at(t) {
                continue;
            }
            if pin.anchors.is_empty() {
                pin.anchors = pin.vertices.iter().map(|&v| st.positions[base + v as usize].truncate()).collect();
                pin.anchor_pose = match &pin.motion {
                    PinMotion::Path(path) => path.pose(t),
                    _ => (Vec3::ZERO, Quat::IDENTITY),
                };
            }
            for &v in &pin.vertices {
                mark[v as usize] = true;
            }
        }
        for (local, &k) in mark.iter().enumerate() {
            let f = &mut st.flags[base + local];
            if (*f & VERTEX_KINEMATIC != 0) != k {
                changed = true;
                *f ^= VERTEX_KINEMATIC;
            }
        }
        body.kinematic_marked = mark.contains(&true);
    }
    changed
}

/// Whether [`update_pin_flags`] at time `t` would change the kinematic set (without capturing
/// anchors or touching the state).
#[cfg(feature = "gpu")]
pub(crate) fn pin_set_changes(st: &SimState, bodies: &BodySet, slots: &[BodySlot], t: f64) -> bool {
    slots.iter().any(|s| {
        let Some(body) = bodies.get(s.handle) else { return false };
        if body.pins.is_empty() && !body.kinematic_marked {
            return false;
        }
        let base = s.vertex_start as usize;
        let mut mark = vec![false; s.vertex_count as usize];
        for pin in body.pins.iter().filter(|p| p.active_at(t)) {
            for &v in &pin.vertices {
                mark[v as usize] = true;
            }
        }
        mark.iter().enumerate().any(|(local, &k)| (st.flags[base + local] & VERTEX_KINEMATIC != 0) != k)
    })
}

/// Forgets the anchors of a body's pins, so they are captured again from the current
/// positions (after the body was teleported).
pub(crate) fn reset_anchors(pins: &mut [Pin]) {
    for pin in pins {
        pin.anchors.clear();
    }
}

/// Writes the targets of every pin active at the substep's start `t0` for its end `t0 + h`.
/// `remaining` is the number of substeps left in the frame, this one included: scripted
/// goals are for the end of the frame and are approached linearly, one share per substep.
pub(crate) fn write_targets(
    bodies: &BodySet,
    slots: &[BodySlot],
    st: &SimState,
    t0: f64,
    h: f64,
    remaining: u32,
    targets: &mut [Vec4],
) {
    for s in slots {
        let Some(body) = bodies.get(s.handle) else { continue };
        let base = s.vertex_start as usize;
        for pin in body.pins.iter().filter(|p| p.active_at(t0) && !p.anchors.is_empty()) {
            match &pin.motion {
                PinMotion::Fixed => {
                    for (&v, &a) in pin.vertices.iter().zip(&pin.anchors) {
                        targets[base + v as usize] = a.extend(0.0);
                    }
                }
                PinMotion::Path(path) => {
                    // Rigid motion relative to the pose at capture, about the capture pivot.
                    let pivot =
                        path.pivot.unwrap_or_else(|| pin.anchors.iter().sum::<Vec3>() / pin.anchors.len() as f32);
                    let (t_c, r_c) = pin.anchor_pose;
                    let (t_e, r_e) = path.pose(t0 + h);
                    let rotation = r_e * r_c.inverse();
                    let shift = t_e - t_c;
                    for (&v, &a) in pin.vertices.iter().zip(&pin.anchors) {
                        targets[base + v as usize] = (rotation * (a - pivot) + pivot + shift).extend(0.0);
                    }
                }
                PinMotion::Scripted(goal) => {
                    let share = 1.0 / remaining.max(1) as f32;
                    for (&v, &g) in pin.vertices.iter().zip(goal) {
                        let x = st.positions[base + v as usize].truncate();
                        targets[base + v as usize] = (x + (g - x) * share).extend(0.0);
                    }
                }
            }
        }
    }
}
