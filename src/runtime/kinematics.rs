//! Pins: which vertices are prescribed at a given time, and where they must be at the end of
//! a substep.

use glam::{Vec3, Vec4};

use super::assemble::BodySlot;
use crate::body::{BodySet, PinMotion};
use crate::state::{SimState, VERTEX_KINEMATIC};

/// Sets `VERTEX_KINEMATIC` from the pins active at time `t`; captures anchors of pins taking
/// hold. Returns whether the kinematic set changed (colors must then be rebuilt).
pub(crate) fn update_pin_flags(st: &mut SimState, bodies: &mut BodySet, slots: &[BodySlot], t: f64) -> bool {
    let mut changed = false;
    for s in slots {
        let Some(body) = bodies.get_mut(s.handle) else { continue };
        let base = s.vertex_start as usize;
        let mut kinematic = vec![false; s.vertex_count as usize];
        for pin in &mut body.pins {
            if !pin.active_at(t) {
                continue;
            }
            if pin.anchors.is_empty() {
                pin.anchors = pin.vertices.iter().map(|&v| st.positions[base + v as usize].truncate()).collect();
            }
            for &v in &pin.vertices {
                kinematic[v as usize] = true;
            }
        }
        for (local, k) in kinematic.into_iter().enumerate() {
            let f = &mut st.flags[base + local];
            let was = *f & VERTEX_KINEMATIC != 0;
            if was != k {
                changed = true;
                *f ^= VERTEX_KINEMATIC;
            }
        }
    }
    changed
}

/// Writes the end-of-substep targets (time `t`) of every active pin into `targets`.
pub(crate) fn write_targets(bodies: &BodySet, slots: &[BodySlot], t: f64, targets: &mut [Vec4]) {
    for s in slots {
        let Some(body) = bodies.get(s.handle) else { continue };
        let base = s.vertex_start as usize;
        for pin in body.pins.iter().filter(|p| p.active_at(t) && !p.anchors.is_empty()) {
            match &pin.motion {
                PinMotion::Fixed => {
                    for (&v, &a) in pin.vertices.iter().zip(&pin.anchors) {
                        targets[base + v as usize] = a.extend(0.0);
                    }
                }
                PinMotion::Path(path) => {
                    let pivot =
                        path.pivot.unwrap_or_else(|| pin.anchors.iter().sum::<Vec3>() / pin.anchors.len() as f32);
                    let (translation, rotation) = path.pose(t);
                    for (&v, &a) in pin.vertices.iter().zip(&pin.anchors) {
                        targets[base + v as usize] = (rotation * (a - pivot) + pivot + translation).extend(0.0);
                    }
                }
                PinMotion::Scripted(goal) => {
                    for (&v, &g) in pin.vertices.iter().zip(goal) {
                        targets[base + v as usize] = g.extend(0.0);
                    }
                }
            }
        }
    }
}
