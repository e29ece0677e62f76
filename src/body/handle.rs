//! Generational handles (as rapier's arena): a removed body's handle never aliases a new one.

/// Handle of a soft body in a [`super::BodySet`]: `Copy`, hashable, and invalidated (not
/// reused) when the body is removed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SoftBodyHandle {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl SoftBodyHandle {
    /// A handle that never refers to a body.
    pub const fn invalid() -> Self {
        Self { index: u32::MAX, generation: u32::MAX }
    }

    /// `(index, generation)`, e.g. to store in another system.
    pub fn into_raw_parts(self) -> (u32, u32) {
        (self.index, self.generation)
    }

    /// Rebuilds a handle from [`SoftBodyHandle::into_raw_parts`].
    pub fn from_raw_parts(index: u32, generation: u32) -> Self {
        Self { index, generation }
    }
}

#[derive(Clone, Debug)]
enum Slot<T> {
    Occupied { generation: u32, value: T },
    Free { generation: u32, next_free: u32 },
}

/// A generational arena.
#[derive(Clone, Debug)]
pub(crate) struct Arena<T> {
    slots: Vec<Slot<T>>,
    free_head: u32,
    len: usize,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Self { slots: Vec::new(), free_head: u32::MAX, len: 0 }
    }
}

impl<T> Arena<T> {
    pub fn insert(&mut self, value: T) -> SoftBodyHandle {
        self.len += 1;
        if self.free_head != u32::MAX {
            let index = self.free_head;
            let slot = &mut self.slots[index as usize];
            let (generation, next) = match slot {
                Slot::Free { generation, next_free } => (*generation, *next_free),
                Slot::Occupied { .. } => unreachable!("free list points at an occupied slot"),
            };
            self.free_head = next;
            *slot = Slot::Occupied { generation, value };
            SoftBodyHandle { index, generation }
        } else {
            let index = self.slots.len() as u32;
            self.slots.push(Slot::Occupied { generation: 0, value });
            SoftBodyHandle { index, generation: 0 }
        }
    }

    pub fn remove(&mut self, h: SoftBodyHandle) -> Option<T> {
        let slot = self.slots.get_mut(h.index as usize)?;
        match slot {
            Slot::Occupied { generation, .. } if *generation == h.generation => {
                let next = Slot::Free { generation: h.generation.wrapping_add(1), next_free: self.free_head };
                let old = std::mem::replace(slot, next);
                self.free_head = h.index;
                self.len -= 1;
                match old {
                    Slot::Occupied { value, .. } => Some(value),
                    Slot::Free { .. } => None,
                }
            }
            _ => None,
        }
    }

    pub fn get(&self, h: SoftBodyHandle) -> Option<&T> {
        match self.slots.get(h.index as usize)? {
            Slot::Occupied { generation, value } if *generation == h.generation => Some(value),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, h: SoftBodyHandle) -> Option<&mut T> {
        match self.slots.get_mut(h.index as usize)? {
            Slot::Occupied { generation, value } if *generation == h.generation => Some(value),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Occupied slots in index order (deterministic).
    pub fn iter(&self) -> impl Iterator<Item = (SoftBodyHandle, &T)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| match s {
            Slot::Occupied { generation, value } => {
                Some((SoftBodyHandle { index: i as u32, generation: *generation }, value))
            }
            Slot::Free { .. } => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_handles_are_not_reused() {
        let mut a = Arena::default();
        let h1 = a.insert(1);
        let h2 = a.insert(2);
        assert_eq!(a.remove(h1), Some(1));
        assert_eq!(a.get(h1), None);
        let h3 = a.insert(3);
        assert_eq!(h3.index, h1.index);
        assert_ne!(h3, h1);
        assert_eq!(a.get(h1), None);
        assert_eq!(a.get(h3), Some(&3));
        assert_eq!(a.get(h2), Some(&2));
        assert_eq!(a.len(), 2);
        assert_eq!(a.iter().map(|(_, v)| *v).collect::<Vec<_>>(), vec![3, 2]);
    }
}
