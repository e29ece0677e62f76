//! The frame-budget planner (`ARCHITECTURE.md`, "The fallback"): picks the fast path's fixed sweep
//! count so that a step fits the caller's budget.
//!
//! A step's cost is modelled per substep as a fixed part `F` (prediction, detection, the
//! sweeps' finish and the safety check) plus `n c` for `n` sweeps, both measured phase by phase
//! (`StepReport::phases`) and smoothed by an exponential moving average. The plan is the count
//! that fills the fast path's share of the budget: `n = (s B / substeps − F) / c`. Fitting the
//! two parts apart settles at once on a change of cost instead of through a fixed point of their
//! ratio, and a fixed part that alone fills the share (detection of a large scene) plans one
//! sweep.

use crate::runtime::report::PhaseTimes;

/// Share of the budget the fast path may use; the rest is kept for fallbacks.
pub const FAST_PATH_SHARE: f64 = 0.7;
/// Weight of the newest measurement in the moving average.
const SMOOTHING: f64 = 0.2;
/// Most sweeps a planned step takes.
pub const MAX_PLANNED_ITERATIONS: u32 = 200;

/// Measured costs of a substep's phases.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct BudgetPlanner {
    /// Milliseconds per substep outside the sweeps, smoothed; `None` before the first step.
    fixed_ms: Option<f64>,
    /// Milliseconds per sweep, smoothed.
    sweep_ms: Option<f64>,
}

fn smooth(old: Option<f64>, new: f64) -> Option<f64> {
    if !(new.is_finite() && new >= 0.0) {
        return old;
    }
    Some(match old {
        Some(old) => old + SMOOTHING * (new - old),
        None => new,
    })
}

impl BudgetPlanner {
    /// Sweeps per substep for the next step: `pinned` without a budget or before the first
    /// measurement.
    pub fn iterations(&self, budget_ms: Option<f64>, substeps: u32, pinned: u32) -> u32 {
        match (budget_ms, self.fixed_ms, self.sweep_ms) {
            (Some(b), Some(fixed), Some(c)) if c > 0.0 => {
                let n = (FAST_PATH_SHARE * b / substeps.max(1) as f64 - fixed) / c;
                (n.max(0.0).floor() as u32).clamp(1, MAX_PLANNED_ITERATIONS)
            }
            _ => pinned,
        }
    }

    /// Records `substeps` swept substeps of `iterations` sweeps each whose phases took
    /// `phases` (summed over them).
    pub fn observe(&mut self, phases: &PhaseTimes, substeps: u32, iterations: u32) {
        let substeps = substeps.max(1) as f64;
        let fixed = (phases.predict + phases.detect + phases.finish + phases.check) / substeps;
        let sweep = phases.solve / (substeps * iterations.max(1) as f64);
        if sweep > 0.0 {
            self.fixed_ms = smooth(self.fixed_ms, fixed);
            self.sweep_ms = smooth(self.sweep_ms, sweep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The phases of a substep of `n` sweeps against a cost model `F + n c`.
    fn phases(fixed: f64, per: f64, n: u32) -> PhaseTimes {
        PhaseTimes {
            predict: 0.2 * fixed,
            detect: 0.5 * fixed,
            finish: 0.1 * fixed,
            check: 0.2 * fixed,
            solve: per * n as f64,
            fallback: 3.0,
        }
    }

    /// Against a cost model `F + n c`, the planner fills 70 % of the budget from the first
    /// measurement on, follows a change of cost, and plans one sweep when the fixed part alone
    /// fills the share. The fallback's time is not the fast path's.
    #[test]
    fn plan_fills_the_fast_paths_share_of_the_budget() {
        let (fixed, per) = (0.5, 0.05);
        let mut p = BudgetPlanner::default();
        assert_eq!(p.iterations(Some(4.0), 1, 20), 20, "pinned until measured");
        p.observe(&phases(fixed, per, 20), 1, 20);
        let expected = ((FAST_PATH_SHARE * 4.0 - fixed) / per) as u32;
        let n = p.iterations(Some(4.0), 1, 20);
        assert!(n.abs_diff(expected) <= 1, "{n} vs {expected}");
        // Two substeps share the budget.
        let n2 = p.iterations(Some(4.0), 2, 20);
        let expected2 = ((FAST_PATH_SHARE * 2.0 - fixed) / per) as u32;
        assert!(n2.abs_diff(expected2) <= 1, "{n2} vs {expected2}");
        // Sweeps twice as dear: the plan halves within a few dozen steps.
        let mut n = n;
        for _ in 0..40 {
            p.observe(&phases(fixed, 2.0 * per, n), 1, n);
            n = p.iterations(Some(4.0), 1, 20);
        }
        let expected = ((FAST_PATH_SHARE * 4.0 - fixed) / (2.0 * per)) as u32;
        assert!(n.abs_diff(expected) <= 1, "{n} vs {expected}");
        // Detection alone over the share: one sweep.
        for _ in 0..40 {
            p.observe(&phases(5.0, per, n), 1, n);
            n = p.iterations(Some(4.0), 1, 20);
        }
        assert_eq!(n, 1);
        assert_eq!(p.iterations(None, 1, 20), 20, "no budget: pinned");
    }
}
