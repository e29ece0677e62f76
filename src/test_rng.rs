//! A deterministic random source shared by the crate's tests, so failures reproduce from the
//! seed alone.

use glam::DVec3;

/// Uniform numbers from a 64-bit LCG (top 53 bits).
pub(crate) struct Rng(pub u64);

impl Rng {
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [−1, 1).
    pub fn signed(&mut self) -> f64 {
        self.uniform() * 2.0 - 1.0
    }

    /// Uniform in [0, 1) as f32.
    pub fn uniform_f32(&mut self) -> f32 {
        self.uniform() as f32
    }

    /// Uniform in the cube [−1, 1)³.
    pub fn vec(&mut self) -> DVec3 {
        DVec3::new(self.uniform(), self.uniform(), self.uniform()) * 2.0 - DVec3::ONE
    }
}
