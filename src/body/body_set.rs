//! The set of soft bodies in a world.

use std::sync::atomic::{AtomicU64, Ordering};

use super::handle::Arena;
use super::{SoftBody, SoftBodyHandle};

/// Versions are unique across all sets, so a world notices when its set is replaced.
static NEXT_VERSION: AtomicU64 = AtomicU64::new(1);

fn next_version() -> u64 {
    NEXT_VERSION.fetch_add(1, Ordering::Relaxed)
}

/// Soft bodies, addressed by generational handles. `insert` never fails (builders validate).
#[derive(Clone, Debug)]
pub struct BodySet {
    arena: Arena<SoftBody>,
    /// Identity of this set (clones share it: their handles name the same bodies).
    pub(crate) id: u64,
    /// Changes on every insert and remove: the world rebuilds its packed state when it differs.
    pub(crate) topology_version: u64,
}

impl Default for BodySet {
    fn default() -> Self {
        let id = next_version();
        Self { arena: Arena::default(), id, topology_version: id }
    }
}

impl BodySet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts a body; it joins the simulation at the next step.
    pub fn insert(&mut self, body: SoftBody) -> SoftBodyHandle {
        self.topology_version = next_version();
        self.arena.insert(body)
    }

    /// Removes a body; its handle becomes invalid.
    pub fn remove(&mut self, handle: SoftBodyHandle) -> Option<SoftBody> {
        let b = self.arena.remove(handle);
        if b.is_some() {
            self.topology_version = next_version();
        }
        b
    }

    /// The body, if the handle is valid.
    pub fn get(&self, handle: SoftBodyHandle) -> Option<&SoftBody> {
        self.arena.get(handle)
    }

    /// The body, mutably (pins, friction), if the handle is valid.
    pub fn get_mut(&mut self, handle: SoftBodyHandle) -> Option<&mut SoftBody> {
        self.arena.get_mut(handle)
    }

    /// The first body with this name.
    pub fn find_by_name(&self, name: &str) -> Option<SoftBodyHandle> {
        self.iter().find(|(_, b)| b.name == name).map(|(h, _)| h)
    }

    /// Number of bodies.
    pub fn len(&self) -> usize {
        self.arena.len()
    }

    /// True if there are no bodies.
    pub fn is_empty(&self) -> bool {
        self.arena.len() == 0
    }

    /// Bodies in a deterministic order (by slot).
    pub fn iter(&self) -> impl Iterator<Item = (SoftBodyHandle, &SoftBody)> {
        self.arena.iter()
    }
}

impl std::ops::Index<SoftBodyHandle> for BodySet {
    type Output = SoftBody;

    /// # Panics
    /// If the handle is invalid; use [`BodySet::get`] to check.
    fn index(&self, handle: SoftBodyHandle) -> &SoftBody {
        match self.get(handle) {
            Some(b) => b,
            None => panic!("invalid soft body handle {handle:?}"),
        }
    }
}
