//! The outer iterations' schedule of an augmented-Lagrangian step (\[ALPF\] Eq. 7–9 and §4.2):
//! the weights of the iterates in the safe iterate, termination, and the penalty and offset
//! a stalled step stiffens. The CPU step runs it; the GPU's `al_outer` kernel is its twin.

use super::{AlSettings, STALL_ITERATIONS};

/// A step size below which an outer iteration counts as stalled.
pub(crate) const SMALL_STEP: f64 = 1e-4;

/// Where the outer iterations stand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Schedule {
    /// Outer iterations taken.
    pub iterations: u32,
    /// Weight of the first iterates (`x^[1..K_min]`) in the safe iterate.
    pub first_weight: f64,
    /// Weight of the start `x^[0]`: `1 − travelled`.
    pub start_weight: f64,
    /// Consecutive iterations with a step below [`SMALL_STEP`].
    pub small_steps: u32,
    /// Penalty μ \[N/m\] and offset δ \[m\].
    pub mu: f64,
    /// See `mu`.
    pub delta: f64,
}

impl Schedule {
    /// The schedule of a step starting at penalty `mu` and offset `delta`.
    pub fn new(mu: f64, delta: f64) -> Self {
        Self { iterations: 0, first_weight: 1.0, start_weight: 1.0, small_steps: 0, mu, delta }
    }

    /// Accounts for an outer iteration that moved the safe iterate by `alpha` towards its
    /// targets: the new target enters the safe iterate with weight α (Eq. 7–9).
    pub fn weigh(&mut self, alpha: f64, s: &AlSettings) {
        self.iterations += 1;
        self.first_weight = if self.iterations < s.min_iterates {
            self.first_weight * (1.0 - alpha) + alpha
        } else {
            self.first_weight * (1.0 - alpha)
        };
        self.start_weight *= 1.0 - alpha;
    }

    /// Whether the step has converged: the first iterates weigh less than ε.
    pub fn converged(&self, s: &AlSettings) -> bool {
        self.first_weight < s.epsilon
    }

    /// \[ALPF\] §4.2: a step pinned at α ≈ 0 for [`STALL_ITERATIONS`] iterations means the
    /// penalty is too weak: μ doubles and δ halves.
    pub fn stall(&mut self, alpha: f64) {
        if alpha < SMALL_STEP {
            self.small_steps += 1;
            if self.small_steps >= STALL_ITERATIONS {
                self.mu *= 2.0;
                self.delta *= 0.5;
                self.small_steps = 0;
            }
        } else {
            self.small_steps = 0;
        }
    }
}
