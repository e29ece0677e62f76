//! The step as a transaction: dynamic state is saved before a substep and restored per body
//! when the result is unusable (non-finite now; unsafe by the safety check later).

use glam::Vec4;

use crate::state::{SimState, VERTEX_NO_HISTORY};

/// Saved dynamic state (positions, velocities, accelerations, flags).
#[derive(Clone, Debug, Default)]
pub(crate) struct Snapshot {
    positions: Vec<Vec4>,
    velocities: Vec<Vec4>,
    accelerations: Vec<Vec4>,
    flags: Vec<u32>,
}

impl Snapshot {
    /// Saves the state's dynamic arrays (reusing the buffers).
    pub fn save(&mut self, st: &SimState) {
        fn copy<T: Copy>(dst: &mut Vec<T>, src: &[T]) {
            dst.clear();
            dst.extend_from_slice(src);
        }
        copy(&mut self.positions, &st.positions);
        copy(&mut self.velocities, &st.velocities);
        copy(&mut self.accelerations, &st.accelerations);
        copy(&mut self.flags, &st.flags);
    }

    /// Saved positions.
    pub fn positions(&self) -> &[Vec4] {
        &self.positions
    }

    /// Saved velocities.
    pub fn velocities(&self) -> &[Vec4] {
        &self.velocities
    }

    /// Saved accelerations.
    pub fn accelerations(&self) -> &[Vec4] {
        &self.accelerations
    }

    /// Saved flags.
    pub fn flags(&self) -> &[u32] {
        &self.flags
    }

    /// Restores the vertices in `range` exactly as saved (the step is to be redone).
    pub fn restore(&self, st: &mut SimState, range: std::ops::Range<usize>) {
        for i in range {
            st.positions[i] = self.positions[i];
            st.velocities[i] = self.velocities[i];
            st.accelerations[i] = self.accelerations[i];
            st.flags[i] = self.flags[i];
        }
    }

    /// Restores the vertices in `range` to the saved positions with zero velocity and no
    /// integrator history (`ARCHITECTURE.md`, "The fallback": put back at rest and reported).
    pub fn restore_at_rest(&self, st: &mut SimState, range: std::ops::Range<usize>) {
        for i in range {
            st.positions[i] = self.positions[i];
            st.velocities[i] = Vec4::ZERO;
            st.accelerations[i] = Vec4::ZERO;
            st.flags[i] = self.flags[i] | VERTEX_NO_HISTORY;
        }
    }
}
