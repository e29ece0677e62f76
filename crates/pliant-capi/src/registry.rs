//! The worlds a C program holds. A world is named by an id (slot and generation), not by a
//! pointer, so a destroyed world's id is recognised as stale instead of being dereferenced;
//! each world sits behind its own lock, so calls on one world from several threads take turns
//! and calls on different worlds do not wait for each other.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pliant::{EmbeddedMesh, PliantEvent, SoftBodyHandle, StepReport, TetMesh, World};

use crate::status::{Failure, PliantStatus};

/// A world, by id. `{0}` names no world.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PliantWorld {
    /// Slot and generation; opaque to the caller.
    pub id: u64,
}

/// A body of a world, by id: the world it belongs to and its generational handle there, so a
/// body passed with another world is recognised as not being in it. `{0, 0}` names no body.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PliantBody {
    /// The world's id.
    pub world: u64,
    /// Slot and generation in the world; opaque to the caller.
    pub id: u64,
}

/// `(slot + 1) | generation << 32`: never 0, so a zeroed handle is never valid.
fn pack(index: u32, generation: u32) -> u64 {
    (u64::from(generation) << 32) | (u64::from(index) + 1)
}

fn unpack(id: u64) -> Option<(u32, u32)> {
    let low = (id & 0xFFFF_FFFF) as u32;
    (low != 0).then(|| (low - 1, (id >> 32) as u32))
}

impl PliantBody {
    pub(crate) const NONE: Self = Self { world: 0, id: 0 };

    pub(crate) fn from_handle(world: PliantWorld, h: SoftBodyHandle) -> Self {
        let (index, generation) = h.into_raw_parts();
        Self { world: world.id, id: pack(index, generation) }
    }

    /// The handle this id stands for in `world`, or one that names nothing (a zero or
    /// malformed id, or a body of another world).
    pub(crate) fn handle(self, world: PliantWorld) -> SoftBodyHandle {
        match unpack(self.id) {
            Some((i, g)) if self.world == world.id => SoftBodyHandle::from_raw_parts(i, g),
            _ => SoftBodyHandle::invalid(),
        }
    }
}

/// What the C side keeps beside a body: the tet mesh it was built from (a render mesh embeds
/// into it) and the embedded render mesh.
#[derive(Default)]
pub(crate) struct BodyExtra {
    pub tets: Option<TetMesh>,
    pub render: Option<EmbeddedMesh>,
}

/// Events kept for the caller to poll; beyond this the oldest are dropped (and counted), so
/// a caller that never polls does not grow the queue without bound.
pub(crate) const MAX_EVENTS: usize = 4096;

/// One world and what the C side keeps with it.
pub(crate) struct Entry {
    /// This world's own id (set when it is registered).
    pub id: PliantWorld,
    pub world: World,
    pub bodies: HashMap<SoftBodyHandle, BodyExtra>,
    /// Events drained from the world, handed out one per `pliant_world_poll_event`.
    pub events: VecDeque<PliantEvent>,
    /// Events dropped because the queue was full.
    pub events_dropped: u64,
    /// The last step's report (its islands are read one by one).
    pub last: StepReport,
}

impl Entry {
    pub fn new(world: World) -> Self {
        Self {
            id: PliantWorld { id: 0 },
            world,
            bodies: HashMap::new(),
            events: VecDeque::new(),
            events_dropped: 0,
            last: StepReport::default(),
        }
    }

    /// Moves the world's new events into the queue the caller polls.
    pub fn collect_events(&mut self) {
        self.events.extend(self.world.drain_events());
        let over = self.events.len().saturating_sub(MAX_EVENTS);
        self.events.drain(..over);
        self.events_dropped += over as u64;
    }
}

struct Slot {
    generation: u32,
    entry: Option<Arc<Mutex<Entry>>>,
}

static WORLDS: Mutex<Vec<Slot>> = Mutex::new(Vec::new());

fn worlds() -> MutexGuard<'static, Vec<Slot>> {
    // Nothing that can panic runs under this lock; recover rather than fail every later call.
    WORLDS.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn insert(mut entry: Entry) -> PliantWorld {
    let mut slots = worlds();
    let index = slots.iter().position(|s| s.entry.is_none()).unwrap_or(slots.len());
    let generation = slots.get(index).map_or(0, |s| s.generation);
    entry.id = PliantWorld { id: pack(index as u32, generation) };
    let id = entry.id;
    let entry = Some(Arc::new(Mutex::new(entry)));
    match slots.get_mut(index) {
        Some(slot) => slot.entry = entry,
        None => slots.push(Slot { generation, entry }),
    }
    id
}

fn stale(world: PliantWorld) -> Failure {
    Failure::new(
        PliantStatus::InvalidHandle,
        format!("world {:#x} does not exist (destroyed, or never made)", world.id),
    )
}

/// The slot `world` names, if its generation is current, under the registry's lock.
fn slot_of(slots: &mut [Slot], world: PliantWorld) -> Result<&mut Slot, Failure> {
    let (index, generation) = unpack(world.id).ok_or_else(|| stale(world))?;
    slots.get_mut(index as usize).filter(|s| s.generation == generation).ok_or_else(|| stale(world))
}

fn find(world: PliantWorld) -> Result<Arc<Mutex<Entry>>, Failure> {
    let mut slots = worlds();
    slot_of(&mut slots, world)?.entry.clone().ok_or_else(|| stale(world))
}

/// Removes `world`. A call running on it in another thread finishes before this returns
/// (its lock is taken once more), so no work on the world outlives its destruction.
pub(crate) fn remove(world: PliantWorld) -> Result<(), Failure> {
    let mut slots = worlds();
    let slot = slot_of(&mut slots, world)?;
    let entry = slot.entry.take().ok_or_else(|| stale(world))?;
    slot.generation = slot.generation.wrapping_add(1);
    drop(slots);
    // Outside the registry's lock: waiting here must not stop calls on other worlds.
    drop(entry.lock().unwrap_or_else(PoisonError::into_inner));
    drop(entry);
    Ok(())
}

/// Runs `f` on `world`'s entry under its lock.
pub(crate) fn with<T>(world: PliantWorld, f: impl FnOnce(&mut Entry) -> Result<T, Failure>) -> Result<T, Failure> {
    let entry = find(world)?;
    let mut guard = entry.lock().map_err(|_| {
        Failure::new(
            PliantStatus::Poisoned,
            "an earlier call panicked inside this world; destroy it and make a new one",
        )
    })?;
    f(&mut guard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_zero_names_nothing() {
        for (i, g) in [(0, 0), (7, 3), (u32::MAX - 1, u32::MAX)] {
            assert_eq!(unpack(pack(i, g)), Some((i, g)));
            assert_ne!(pack(i, g), 0);
        }
        assert_eq!(unpack(0), None);
        let w = PliantWorld { id: pack(0, 0) };
        assert_eq!(PliantBody::NONE.handle(w), SoftBodyHandle::invalid());
        let h = SoftBodyHandle::from_raw_parts(3, 1);
        assert_eq!(PliantBody::from_handle(w, h).handle(w), h);
        // The same handle from another world names nothing here.
        let other = PliantWorld { id: pack(1, 0) };
        assert_eq!(PliantBody::from_handle(other, h).handle(w), SoftBodyHandle::invalid());
    }
}
