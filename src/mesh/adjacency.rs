//! Vertex → element adjacency in compressed sparse row form: what VBD's per-vertex gather walks.

/// Compressed sparse rows: row `v` is `entries[offsets[v]..offsets[v + 1]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csr {
    /// Row starts, `row_count + 1` entries, the last one the total length.
    pub offsets: Vec<u32>,
    /// Row contents.
    pub entries: Vec<u32>,
}

impl Csr {
    /// Row `v`.
    #[inline]
    pub fn row(&self, v: usize) -> &[u32] {
        &self.entries[self.offsets[v] as usize..self.offsets[v + 1] as usize]
    }

    /// Number of rows.
    pub fn row_count(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Appends `other`'s rows after ours, adding `entry_offset` to each entry's element part
    /// (entries are `element << 2 | slot`).
    pub fn append_shifted(&mut self, other: &Csr, element_offset: u32) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        let base = *self.offsets.last().unwrap_or(&0);
        self.offsets.extend(other.offsets.iter().skip(1).map(|o| o + base));
        self.entries.extend(other.entries.iter().map(|e| e + (element_offset << 2)));
    }
}

/// Packs an element index and a local vertex slot (0..4) into one adjacency entry.
#[inline(always)]
pub const fn pack_entry(element: u32, slot: u32) -> u32 {
    (element << 2) | slot
}

/// Splits an adjacency entry into `(element, slot)`.
#[inline(always)]
pub const fn unpack_entry(entry: u32) -> (u32, u32) {
    (entry >> 2, entry & 3)
}

/// Vertex → (element, local slot) adjacency for elements with `K ≤ 4` vertices. Rows list the
/// elements in increasing index order, which fixes the summation order of every gather.
pub fn vertex_element_csr<const K: usize>(vertex_count: usize, elements: &[[u32; K]]) -> Csr {
    let mut csr = Csr::default();
    csr.fill_vertex_elements(vertex_count, elements.iter().copied(), |_| true);
    csr
}

impl Csr {
    /// Rebuilds this CSR in place (no allocation once it is large enough) as the vertex →
    /// (element, slot) adjacency of `elements`, keeping only vertices for which `include` holds.
    /// Rows list the elements in iteration order.
    pub fn fill_vertex_elements<const K: usize, I>(
        &mut self,
        vertex_count: usize,
        elements: I,
        include: impl Fn(u32) -> bool,
    ) where
        I: Iterator<Item = [u32; K]> + Clone,
    {
        const { assert!(K <= 4) };
        let offsets = &mut self.offsets;
        offsets.clear();
        offsets.resize(vertex_count + 1, 0);
        for el in elements.clone() {
            for v in el.into_iter().filter(|&v| include(v)) {
                offsets[v as usize + 1] += 1;
            }
        }
        for i in 0..vertex_count {
            offsets[i + 1] += offsets[i];
        }
        self.entries.clear();
        self.entries.resize(offsets[vertex_count] as usize, 0);
        // Row starts serve as insertion cursors; afterwards each holds its row's end, which is
        // the next row's start: shifting by one restores the offsets.
        for (e, el) in elements.enumerate() {
            for (slot, v) in el.into_iter().enumerate() {
                if include(v) {
                    let c = &mut offsets[v as usize];
                    self.entries[*c as usize] = pack_entry(e as u32, slot as u32);
                    *c += 1;
                }
            }
        }
        offsets.copy_within(0..vertex_count, 1);
        offsets[0] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_lists_every_incidence_once() {
        let tets = [[0u32, 1, 2, 3], [1, 2, 3, 4]];
        let csr = vertex_element_csr(5, &tets);
        assert_eq!(csr.row_count(), 5);
        assert_eq!(csr.row(0), &[pack_entry(0, 0)]);
        assert_eq!(csr.row(1), &[pack_entry(0, 1), pack_entry(1, 0)]);
        assert_eq!(csr.row(4), &[pack_entry(1, 3)]);
        for v in 0..5 {
            for &e in csr.row(v) {
                let (el, slot) = unpack_entry(e);
                assert_eq!(tets[el as usize][slot as usize], v as u32);
            }
        }
    }
}
