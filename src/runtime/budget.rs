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
//!
//! # Least sweeps
//!
//! The budget is not the only bound on the count: too few sweeps leave a step so far from its
//! minimiser that it gains energy. A cloth draping over a sphere at one sweep a frame stretches
//! (its membrane energy doubles every frame from about the 14th), gains energy in every step
//! from the 19th and falls back at the 22nd; at two sweeps it keeps within the energy test's
//! allowance. So the
//! planner also keeps a least count, learnt from the fallbacks its plans caused: a frame in
//! which an island fell back because its fast step gained energy raises the least count to one
//! above the count that frame took (at most the configured count; a frame that took fewer
//! sweeps than the least count teaches nothing), and `QUIET_FRAMES` frames in a row with every
//! energy-tested step under a quarter of the test's allowance (`StepReport::energy_share`)
//! lower it by one. Every raise after the first doubles the quiet frames needed (up to 16
//! times): the drape, back at one sweep after a second of quiet, fell back again 17 frames
//! later. The least count never takes more than twice the sweeps the budget plans, so a frame
//! costs at most about twice the budget's share for sweeps; the fallback it avoids costs a
//! multiple of the budget. A change of bodies (`World::sync`) forgets it.
//!
//! # Cloth
//!
//! A world with cloth starts with a least count of [`CLOTH_LEAST_SWEEPS`] instead of
//! learning it from a fallback, and quiet frames never lower it below that. The lesson is the
//! same in every cloth scene and costs a fallback each time: measured 2026-12-02 on
//! `cloth_drape_sphere`, a one-sweep frame gained energy at frame 22 (4 ms budget) or 52 (8
//! ms), and its fallback and the hold after it took 23–78 ms a frame and dropped 36 ms of
//! the sheet's time; with two sweeps from the start no frame fell back.
//!
//! Raising the count earlier, at a step that came near the allowance, does not save the first
//! fallback: the drape's gain grows from a third of the allowance to twice it within two
//! frames, and two and three sweeps from there still gained energy until the fallback
//! (measured: the count went from one to five and the island fell back all the same).

use crate::runtime::report::PhaseTimes;

/// Least sweeps per substep of a world with cloth (module docs, "Cloth").
pub const CLOTH_LEAST_SWEEPS: u32 = 2;

/// Share of the budget the fast path may use; the rest is kept for fallbacks.
pub const FAST_PATH_SHARE: f64 = 0.7;
/// Weight of the newest measurement in the moving average.
const SMOOTHING: f64 = 0.2;
/// Most sweeps a planned step takes.
pub const MAX_PLANNED_ITERATIONS: u32 = 200;
/// Frames in a row with every energy-tested step under a quarter of the energy test's
/// allowance after which the least sweep count comes down by one.
pub const QUIET_FRAMES: u32 = 60;
/// Most times the quiet frames that lower the least count are doubled (16 × `QUIET_FRAMES`).
const MAX_QUIET_DOUBLINGS: u32 = 4;
/// Share of the energy test's allowance below which a frame counts as quiet.
const QUIET_SHARE: f64 = 0.25;

/// Measured costs of a substep's phases.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct BudgetPlanner {
    /// Milliseconds per substep outside the sweeps, smoothed; `None` before the first step.
    fixed_ms: Option<f64>,
    /// Milliseconds per sweep, smoothed.
    sweep_ms: Option<f64>,
    /// Least sweeps per substep (module docs, "Least sweeps"); 0 until a step gained energy.
    least: u32,
    /// Quiet frames in a row since the least count last changed.
    quiet: u32,
    /// Times the least count was raised: each doubles the quiet frames it takes to lower it.
    raises: u32,
    /// Least sweeps the bodies always need, below which quiet frames do not lower the least
    /// count (module docs, "Cloth").
    floor: u32,
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
    /// measurement, and never fewer than the least count the energy test has taught.
    pub fn iterations(&self, budget_ms: Option<f64>, substeps: u32, pinned: u32) -> u32 {
        match (budget_ms, self.fixed_ms, self.sweep_ms) {
            (Some(b), Some(fixed), Some(c)) if c > 0.0 => {
                let n = (FAST_PATH_SHARE * b / substeps.max(1) as f64 - fixed) / c;
                let planned = (n.max(0.0).floor() as u32).max(1);
                planned.max(self.least.min(2 * planned)).min(MAX_PLANNED_ITERATIONS)
            }
            _ => pinned,
        }
    }

    /// Learns from a swept frame of `iterations` sweeps per substep (module docs, "Least
    /// sweeps"): `energy_fell_back`, an island fell back because its fast step gained energy;
    /// `energy_share`, the largest share of the energy test's allowance a fast step used.
    /// `pinned` caps the least count: the configured count is the one the scene was set up
    /// with.
    pub fn observe_energy(&mut self, energy_fell_back: bool, energy_share: f64, iterations: u32, pinned: u32) {
        if energy_fell_back {
            self.quiet = 0;
            // Only a frame that took the least count (or more) teaches a higher one.
            let raised = (iterations + 1).min(pinned.max(1));
            if iterations >= self.least && raised > self.least {
                self.least = raised;
                self.raises = (self.raises + 1).min(MAX_QUIET_DOUBLINGS + 1);
            }
        } else if energy_share < QUIET_SHARE && self.least > self.floor {
            self.quiet += 1;
            if self.quiet >= QUIET_FRAMES << self.raises.saturating_sub(1) {
                self.least -= 1;
                self.quiet = 0;
            }
        } else {
            self.quiet = 0;
        }
    }

    /// Forgets the least sweep count and its history (the bodies it was learnt on changed);
    /// the count starts again from `floor`, the least the new bodies always need.
    pub fn forget_least(&mut self, floor: u32) {
        (self.least, self.quiet, self.raises, self.floor) = (floor, 0, 0, floor);
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

    /// A fallback for an energy gain raises the least count to one above the count of its
    /// frame, up to the pinned count, whatever the budget; quiet frames bring it back down one
    /// at a time, and a frame near the allowance restarts the count of quiet ones.
    #[test]
    fn a_fallback_for_energy_raises_the_least_sweep_count() {
        let mut p = BudgetPlanner::default();
        // Detection alone fills the share: one sweep.
        p.observe(&phases(5.0, 0.05, 1), 1, 1);
        assert_eq!(p.iterations(Some(4.0), 1, 20), 1);
        p.observe_energy(false, 1.7, 1, 20);
        assert_eq!(p.iterations(Some(4.0), 1, 20), 1, "a soft flag alone");
        p.observe_energy(true, 1.7, 1, 20);
        assert_eq!(p.iterations(Some(4.0), 1, 20), 2);
        p.observe_energy(true, 1.2, 2, 20);
        assert_eq!(p.least, 3);
        // The least count takes at most twice the budget's plan.
        assert_eq!(p.iterations(Some(4.0), 1, 20), 2);
        // A frame of fewer sweeps than the least teaches nothing, and neither does a raise
        // capped by the pinned count.
        p.observe_energy(true, 1.2, 2, 20);
        p.observe_energy(true, 5.0, 3, 3);
        assert_eq!((p.least, p.raises), (3, 2));
        // Two raises: lowered after 2 × QUIET_FRAMES quiet frames.
        let quiet = 2 * QUIET_FRAMES;
        for _ in 0..quiet - 1 {
            p.observe_energy(false, 0.0, 3, 20);
        }
        p.observe_energy(false, 0.5, 3, 20);
        for _ in 0..quiet - 1 {
            p.observe_energy(false, 0.1, 3, 20);
        }
        assert_eq!(p.least, 3, "the frame at half the allowance was not quiet");
        p.observe_energy(false, 0.1, 3, 20);
        assert_eq!(p.least, 2);
        for _ in 0..2 * quiet {
            p.observe_energy(false, 0.0, 2, 20);
        }
        assert_eq!(p.least, 0);
        assert_eq!(p.iterations(Some(4.0), 1, 20), 1);
        // A budget the sweeps fit in is planned as before, above the least count.
        p.observe_energy(true, 2.0, 1, 20);
        assert_eq!(p.iterations(Some(12.0), 1, 20), ((FAST_PATH_SHARE * 12.0 - 5.0) / 0.05) as u32);
        p.forget_least(0);
        assert_eq!((p.least, p.quiet, p.raises), (0, 0, 0));
        // A floor: the count starts there, and quiet frames do not take it below.
        p.forget_least(2);
        assert_eq!(p.least, 2);
        for _ in 0..10 * QUIET_FRAMES {
            p.observe_energy(false, 0.0, 2, 20);
        }
        assert_eq!(p.least, 2);
    }
}
