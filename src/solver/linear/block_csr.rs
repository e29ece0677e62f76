//! A symmetric matrix of 3×3 blocks with both triangles stored (the GPU kernels of the same
//! solve cannot scatter a transposed half without float atomics; docs/algorithms.md §4.6), built once
//! per pattern and refilled per Newton iteration.

use glam::{DMat3, DVec3};

/// Block compressed rows: row `i` holds the blocks `blocks[offsets[i]..offsets[i + 1]]` in
/// columns `columns[..]` (ascending, the diagonal included).
#[derive(Clone, Debug, Default)]
pub(crate) struct BlockCsr {
    pub offsets: Vec<u32>,
    pub columns: Vec<u32>,
    pub blocks: Vec<DMat3>,
    /// Index of each row's diagonal block.
    pub diagonal: Vec<u32>,
}

impl BlockCsr {
    /// The pattern of `rows` rows whose off-diagonal neighbours are `neighbours(i)` (any order,
    /// repeats allowed); blocks zeroed.
    pub fn with_pattern(rows: usize, mut neighbours: impl FnMut(usize, &mut Vec<u32>)) -> Self {
        let mut m = Self { offsets: Vec::with_capacity(rows + 1), ..Self::default() };
        m.offsets.push(0);
        let mut row = Vec::new();
        for i in 0..rows {
            row.clear();
            row.push(i as u32);
            neighbours(i, &mut row);
            row.sort_unstable();
            row.dedup();
            let start = m.columns.len();
            m.columns.extend_from_slice(&row);
            let d = row.binary_search(&(i as u32)).unwrap_or(0);
            m.diagonal.push((start + d) as u32);
            m.offsets.push(m.columns.len() as u32);
        }
        m.blocks = vec![DMat3::ZERO; m.columns.len()];
        m
    }

    /// Number of block rows.
    pub fn rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Index of block `(i, j)`, if the pattern has it.
    pub fn slot(&self, i: u32, j: u32) -> Option<u32> {
        let (a, b) = (self.offsets[i as usize] as usize, self.offsets[i as usize + 1] as usize);
        self.columns[a..b].binary_search(&j).ok().map(|k| (a + k) as u32)
    }

    /// Zeroes every block.
    pub fn clear(&mut self) {
        self.blocks.fill(DMat3::ZERO);
    }

    /// `y = A p`.
    pub fn multiply(&self, p: &[DVec3], y: &mut [DVec3]) {
        for (i, yi) in y.iter_mut().enumerate().take(self.rows()) {
            let (a, b) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
            let mut s = DVec3::ZERO;
            for k in a..b {
                s += self.blocks[k] * p[self.columns[k] as usize];
            }
            *yi = s;
        }
    }

    /// The diagonal block of row `i`.
    pub fn diagonal_block(&self, i: usize) -> DMat3 {
        self.blocks[self.diagonal[i] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiplies_like_the_dense_matrix() {
        // A 3-row chain 0–1–2 with distinct blocks.
        let mut m = BlockCsr::with_pattern(3, |i, row| {
            if i > 0 {
                row.push(i as u32 - 1);
            }
            if i < 2 {
                row.push(i as u32 + 1);
            }
        });
        assert_eq!(m.columns, vec![0, 1, 0, 1, 2, 1, 2]);
        assert_eq!(m.slot(0, 2), None);
        let blk = |s: f64| DMat3::from_cols_array(&[s, 1.0, 0.0, 1.0, s, 2.0, 0.0, 2.0, s]);
        for i in 0..3u32 {
            for j in 0..3u32 {
                if let Some(k) = m.slot(i, j) {
                    m.blocks[k as usize] = blk((1 + i + 2 * j) as f64);
                }
            }
        }
        let p = [DVec3::new(1.0, 2.0, 3.0), DVec3::new(-1.0, 0.5, 2.0), DVec3::new(0.0, 1.0, -2.0)];
        let mut y = [DVec3::ZERO; 3];
        m.multiply(&p, &mut y);
        for i in 0..3u32 {
            let mut e = DVec3::ZERO;
            for j in 0..3u32 {
                if (i as i32 - j as i32).abs() <= 1 {
                    e += blk((1 + i + 2 * j) as f64) * p[j as usize];
                }
            }
            assert!((y[i as usize] - e).length() < 1e-12);
        }
        assert_eq!(m.diagonal_block(1), blk(4.0));
    }
}
