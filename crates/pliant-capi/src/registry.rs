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

/// A body of a world, by id (the world's generational body handle). `{0}` names no body.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PliantBody {
    /// Slot and generation; opaque to the caller.
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
    pub(crate) fn from_handle(h: SoftBodyHandle) -> Self {
        let (index, generation) = h.into_raw_parts();
        Self { id: pack(index, generation) }
    }

    /// The handle this id stands for; a zero or malformed id gives a handle that names nothing.
    pub(crate) fn handle(self) -> SoftBodyHandle {
        unpack(self.id).map_or(SoftBodyHandle::invalid(), |(i, g)| SoftBodyHandle::from_raw_parts(i, g))
    }
}

/// What the C side keeps beside a body: the tet mesh it was built from (a render mesh embeds
/// into it) and the embedded render mesh.
#[derive(Default)]
pub(crate) struct BodyExtra {
    pub tets: Option<TetMesh>,
    pub render: Option<EmbeddedMesh>,
}

/// One world and what the C side keeps with it.
pub(crate) struct Entry {
    pub world: World,
    pub bodies: HashMap<SoftBodyHandle, BodyExtra>,
    /// Events drained from the world, handed out one per `pliant_world_poll_event`.
    pub events: VecDeque<PliantEvent>,
    /// The last step's report (its islands are read one by one).
    pub last: StepReport,
}

impl Entry {
    pub fn new(world: World) -> Self {
        Self { world, bodies: HashMap::new(), events: VecDeque::new(), last: StepReport::default() }
    }

    /// Moves the world's new events into the queue the caller polls.
    pub fn collect_events(&mut self) {
        self.events.extend(self.world.drain_events());
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

pub(crate) fn insert(entry: Entry) -> PliantWorld {
    let mut slots = worlds();
    let entry = Some(Arc::new(Mutex::new(entry)));
    let index = match slots.iter().position(|s| s.entry.is_none()) {
        Some(i) => {
            slots[i].entry = entry;
            i
        }
        None => {
            slots.push(Slot { generation: 0, entry });
            slots.len() - 1
        }
    };
    PliantWorld { id: pack(index as u32, slots[index].generation) }
}

fn stale(world: PliantWorld) -> Failure {
    Failure::new(
        PliantStatus::InvalidHandle,
        format!("world {:#x} does not exist (destroyed, or never made)", world.id),
    )
}

/// The live slot `world` names, under the registry's lock.
fn slot_of(slots: &mut [Slot], world: PliantWorld) -> Result<&mut Slot, Failure> {
    let (index, generation) = unpack(world.id).ok_or_else(|| stale(world))?;
    slots
        .get_mut(index as usize)
        .filter(|s| s.generation == generation && s.entry.is_some())
        .ok_or_else(|| stale(world))
}

fn find(world: PliantWorld) -> Result<Arc<Mutex<Entry>>, Failure> {
    let mut slots = worlds();
    Ok(slot_of(&mut slots, world)?.entry.clone().expect("a live slot holds its entry"))
}

/// Removes `world`; a call running on it in another thread finishes first (it holds the world).
pub(crate) fn remove(world: PliantWorld) -> Result<(), Failure> {
    let mut slots = worlds();
    let slot = slot_of(&mut slots, world)?;
    let entry = slot.entry.take();
    slot.generation = slot.generation.wrapping_add(1);
    drop(slots);
    // The world is dropped outside the registry's lock (a GPU world waits for its device).
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
        assert_eq!(PliantBody { id: 0 }.handle(), SoftBodyHandle::invalid());
    }
}
