//! Worlds: creation with a configuration, destruction, the step and what it reports, events.

use pliant::prelude::*;

use crate::input::{reference, write, write_optional};
use crate::registry::{self, Entry, PliantBody, PliantWorld};
use crate::status::{Failure, PliantStatus, guard};
use crate::types::{PliantEvent, PliantIslandReport, PliantStepConfig, PliantStepReport};

/// Fills `out` with Pliant's default step configuration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_step_config_default(out: *mut PliantStepConfig) -> PliantStatus {
    guard("pliant_step_config_default", || unsafe {
        write(out, "out", PliantStepConfig::from_config(&StepConfig::default()))
    })
}

/// Makes a world stepped with `config` (null: the defaults) and writes its id to `out_world`
/// (`{0}` on failure). Fails with `PLIANT_STATUS_CONFIG` on a configuration out of range or a
/// GPU backend that cannot be opened.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_create(
    config: *const PliantStepConfig,
    out_world: *mut PliantWorld,
) -> PliantStatus {
    guard("pliant_world_create", || {
        unsafe { write(out_world, "out_world", PliantWorld { id: 0 }) }?;
        // SAFETY: null or a valid config, by contract.
        let config = match unsafe { config.as_ref() } {
            None => StepConfig::default(),
            Some(c) => c.applied_to(StepConfig::default())?,
        };
        let mut entry = Entry::new(World::new(config)?);
        entry.collect_events();
        unsafe { write(out_world, "out_world", registry::insert(entry)) }
    })
}

/// Destroys `world` and everything in it; its id and its bodies' ids become invalid.
#[unsafe(no_mangle)]
pub extern "C" fn pliant_world_destroy(world: PliantWorld) -> PliantStatus {
    guard("pliant_world_destroy", || registry::remove(world))
}

/// Writes `world`'s step configuration to `out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_get_config(world: PliantWorld, out: *mut PliantStepConfig) -> PliantStatus {
    guard("pliant_world_get_config", || {
        registry::with(world, |e| unsafe { write(out, "out", PliantStepConfig::from_config(e.world.config())) })
    })
}

/// Replaces `world`'s step configuration (fields this struct does not carry are kept). On
/// failure the world keeps its old configuration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_set_config(world: PliantWorld, config: *const PliantStepConfig) -> PliantStatus {
    guard("pliant_world_set_config", || {
        let c = *unsafe { reference(config, "config") }?;
        registry::with(world, |e| {
            let next = c.applied_to(e.world.config().clone())?;
            let result = e.world.set_config(next);
            e.collect_events();
            Ok(result?)
        })
    })
}

/// Sets `world`'s frame budget (ms): every later step is planned to fit it. 0 removes the
/// budget (the sweep count is then the configured one).
#[unsafe(no_mangle)]
pub extern "C" fn pliant_world_set_budget_ms(world: PliantWorld, budget_ms: f64) -> PliantStatus {
    guard("pliant_world_set_budget_ms", || {
        registry::with(world, |e| {
            let budget_ms = (budget_ms != 0.0).then_some(budget_ms);
            Ok(e.world.set_config(StepConfig { budget_ms, ..e.world.config().clone() })?)
        })
    })
}

/// Advances `world` by one frame (`dt`) and, when `report` is not null, says what the step did.
/// A state that goes non-finite is rolled back and reported (`nan_detected`, an event), never
/// handed back.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_step(world: PliantWorld, report: *mut PliantStepReport) -> PliantStatus {
    guard("pliant_world_step", || {
        registry::with(world, |e| {
            let r = e.world.step();
            e.collect_events();
            let summary = PliantStepReport::from_report(&r);
            e.last = r;
            unsafe { write_optional(report, summary) };
            Ok(())
        })
    })
}

/// Writes `world`'s simulated time (s) and frame count (either pointer may be null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_time(
    world: PliantWorld,
    out_time: *mut f64,
    out_frame: *mut u64,
) -> PliantStatus {
    guard("pliant_world_time", || {
        registry::with(world, |e| {
            unsafe {
                write_optional(out_time, e.world.time());
                write_optional(out_frame, e.world.frame());
            }
            Ok(())
        })
    })
}

fn island(e: &Entry, index: u32) -> Result<&pliant::IslandReport, Failure> {
    let n = e.last.islands.len();
    e.last
        .islands
        .get(index as usize)
        .ok_or_else(|| Failure::invalid(format!("island {index} does not exist: the last step had {n} island(s)")))
}

/// Writes island `index` of the last step (0 <= index < the report's `islands`) to `out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_island(
    world: PliantWorld,
    index: u32,
    out: *mut PliantIslandReport,
) -> PliantStatus {
    guard("pliant_world_island", || {
        registry::with(world, |e| unsafe { write(out, "out", PliantIslandReport::from_report(island(e, index)?)) })
    })
}

/// Copies the bodies of island `index` of the last step into `out[0..capacity]`; the count
/// goes to `out_count` (which may be null) even when the buffer is too small.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_island_bodies(
    world: PliantWorld,
    index: u32,
    out: *mut PliantBody,
    capacity: usize,
    out_count: *mut usize,
) -> PliantStatus {
    guard("pliant_world_island_bodies", || {
        registry::with(world, |e| {
            let bodies = &island(e, index)?.bodies;
            let dst = unsafe { crate::input::buffer(out, capacity, bodies.len(), out_count, "out") }?;
            for (d, &h) in dst.iter_mut().zip(bodies) {
                *d = PliantBody::from_handle(e.id, h);
            }
            Ok(())
        })
    })
}

/// Takes the oldest event not yet polled: writes it to `out` and 1 to `has_event`, or 0 to
/// `has_event` when there is none. Events are queued by steps and configuration changes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_poll_event(
    world: PliantWorld,
    out: *mut PliantEvent,
    has_event: *mut u32,
) -> PliantStatus {
    guard("pliant_world_poll_event", || {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        unsafe { write(has_event, "has_event", 0) }?;
        registry::with(world, |e| {
            if let Some(event) = e.events.pop_front() {
                unsafe {
                    write(out, "out", PliantEvent::from_event(e.id, &event))?;
                    write(has_event, "has_event", 1)
                }
            } else {
                Ok(())
            }
        })
    })
}
