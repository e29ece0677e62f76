//! Chebyshev semi-iterative acceleration of VBD sweeps (\[VBD\] §3.8, Eq. 18–19, after Wang 2015).

/// The over-relaxation schedule `ω_n` for spectral-radius estimate `ρ`:
/// `ω_1 = 1`, `ω_2 = 2/(2 − ρ²)`, `ω_n = 4/(4 − ρ² ω_{n−1})`.
#[derive(Clone, Copy, Debug)]
pub struct ChebyshevSchedule {
    rho2: f32,
    omega: f32,
    n: u32,
}

impl ChebyshevSchedule {
    /// A fresh schedule.
    pub fn new(rho: f32) -> Self {
        Self { rho2: rho * rho, omega: 1.0, n: 0 }
    }

    /// `ω` for the next iteration.
    pub fn next_omega(&mut self) -> f32 {
        self.n += 1;
        self.omega = match self.n {
            1 => 1.0,
            2 => 2.0 / (2.0 - self.rho2),
            _ => 4.0 / (4.0 - self.rho2 * self.omega),
        };
        self.omega
    }
}

/// `x^(n) = ω (x̄^(n) − x^(n−2)) + x^(n−2)` for one vertex.
#[inline(always)]
pub fn mix(omega: f32, x_bar: glam::Vec3A, x_nm2: glam::Vec3A) -> glam::Vec3A {
    (x_bar - x_nm2) * omega + x_nm2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_converges_to_the_optimal_relaxation() {
        let rho = 0.9f32;
        let mut s = ChebyshevSchedule::new(rho);
        assert_eq!(s.next_omega(), 1.0);
        assert!((s.next_omega() - 2.0 / (2.0 - 0.81)).abs() < 1e-6);
        let mut w = 0.0;
        for _ in 0..200 {
            w = s.next_omega();
        }
        // Fixed point of ω = 4/(4 − ρ²ω): ω* = 2 (1 − sqrt(1 − ρ²))/ρ².
        let star = 2.0 * (1.0 - (1.0 - rho * rho).sqrt()) / (rho * rho);
        assert!((w - star).abs() < 1e-4, "{w} vs {star}");
    }
}
