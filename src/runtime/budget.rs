//! The frame-budget planner (`ARCHITECTURE.md`, "The fallback"): picks the fast path's fixed sweep
//! count so that a step fits the caller's budget.
//!
//! Cost per sweep is estimated as the step's measured time (fast path and safety check) over
//! its sweeps, smoothed by an exponential moving average. With a true cost `F + n c` (fixed
//! part `F`), planning `n' = B / ((F + n c)/n)` has its fixed point at `F + n c = B`: the
//! estimate settles on the count that fills the budget exactly, fixed costs included.

/// Share of the budget the fast path may use; the rest is kept for fallbacks.
pub const FAST_PATH_SHARE: f64 = 0.7;
/// Weight of the newest measurement in the moving average.
const SMOOTHING: f64 = 0.2;
/// Most sweeps a planned step takes.
pub const MAX_PLANNED_ITERATIONS: u32 = 200;

/// Measured cost per sweep.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct BudgetPlanner {
    /// Milliseconds per sweep (per substep's sweep), smoothed; `None` before the first step.
    ms_per_iteration: Option<f64>,
}

impl BudgetPlanner {
    /// Sweeps per substep for the next step: `pinned` without a budget or before the first
    /// measurement.
    pub fn iterations(&self, budget_ms: Option<f64>, substeps: u32, pinned: u32) -> u32 {
        match (budget_ms, self.ms_per_iteration) {
            (Some(b), Some(c)) if c > 0.0 => {
                let n = FAST_PATH_SHARE * b / (c * substeps.max(1) as f64);
                (n.floor() as u32).clamp(1, MAX_PLANNED_ITERATIONS)
            }
            _ => pinned,
        }
    }

    /// Records a step of `substeps × iterations` sweeps that took `ms` (fast path and check).
    pub fn observe(&mut self, ms: f64, substeps: u32, iterations: u32) {
        let sweeps = (substeps.max(1) * iterations.max(1)) as f64;
        let c = ms / sweeps;
        if !(c.is_finite() && c > 0.0) {
            return;
        }
        self.ms_per_iteration = Some(match self.ms_per_iteration {
            Some(old) => old + SMOOTHING * (c - old),
            None => c,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a cost model `F + n c`, the planner settles where a step fills 70 % of the
    /// budget.
    #[test]
    fn plan_settles_on_the_budget() {
        let (fixed, per) = (0.5, 0.05);
        let mut p = BudgetPlanner::default();
        assert_eq!(p.iterations(Some(4.0), 1, 20), 20, "pinned until measured");
        let mut n = 20;
        for _ in 0..60 {
            p.observe(fixed + n as f64 * per, 1, n);
            n = p.iterations(Some(4.0), 1, 20);
        }
        let expected = ((FAST_PATH_SHARE * 4.0 - fixed) / per) as u32;
        assert!(n.abs_diff(expected) <= 1, "{n} vs {expected}");
        assert_eq!(p.iterations(None, 1, 20), 20, "no budget: pinned");
    }
}
