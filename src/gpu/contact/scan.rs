//! Host side of `shaders/contact/scan.wgsl`: an inclusive prefix sum of u32 words in place (the row
//! offsets of the vertex → pair lists from their counts), in levels of 256-word blocks.

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("contact/scan");

/// Words per block (64 invocations × 4 words).
pub const BLOCK: u32 = 256;

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    phase: u32,
    data: u32,
    sums: u32,
    count: u32,
}

/// `(words, blocks)` of each level of a scan of `count` words: the data, then the block sums of
/// each level that has more than one block.
pub fn levels(count: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut words = count.max(1);
    loop {
        let blocks = words.div_ceil(BLOCK);
        out.push((words, blocks));
        if blocks == 1 {
            return out;
        }
        words = blocks;
    }
}

/// The compiled kernel.
pub struct Scan {
    kernel: ComputeKernel,
}

impl Scan {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "scan", SHADER) }
    }

    /// The dispatches of an inclusive scan of the `count` words of `buffer` from word `data`,
    /// with the block sums of every level from word `sums` on (as many words as
    /// [`levels`] gives blocks in all).
    pub fn bind(&self, ctx: &GpuContext, buffer: &wgpu::Buffer, data: u32, count: u32, sums: u32) -> Vec<Bound> {
        let levels = levels(count);
        // Where each level's data and sums live.
        let mut at = Vec::with_capacity(levels.len());
        let (mut from, mut next) = (data, sums);
        for &(_, blocks) in &levels {
            at.push((from, next));
            from = next;
            next += blocks;
        }
        let dispatch = |phase: u32, level: usize| {
            let (words, blocks) = levels[level];
            let (data, sums) = at[level];
            let params = Params { phase, data, sums, count: words };
            self.kernel.bind_pod(ctx, &params, &[buffer], blocks * WORKGROUP)
        };
        let mut out: Vec<Bound> = (0..levels.len()).map(|l| dispatch(0, l)).collect();
        out.extend((0..levels.len().saturating_sub(1)).rev().map(|l| dispatch(1, l)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::test_support;
    use crate::test_rng::Rng;

    #[test]
    fn prefix_sums_match_the_cpu_at_every_level_count() {
        let Some(ctx) = test_support::context() else { return };
        let kernel = Scan::new(&ctx);
        let mut rng = Rng(3);
        // One block, a partial second block, two levels, three levels.
        for count in [1u32, 200, 256, 257, 5000, 65_536, 70_001] {
            let lead = 7u32;
            let sums_words: u32 = levels(count).iter().map(|&(_, b)| b).sum();
            let mut words: Vec<u32> = (0..lead + count + sums_words).map(|_| (rng.uniform() * 9.0) as u32).collect();
            let original = words.clone();
            let buffer = storage(&ctx, "words", &words, true);
            let bound = kernel.bind(&ctx, &buffer, lead, count, lead + count);
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            record_pass(&mut encoder, "scan", &bound);
            ctx.queue.submit([encoder.finish()]);
            let gpu: Vec<u32> = read_blocking(&ctx, &buffer, words.len()).expect("words");
            let mut run = 0;
            for k in 0..count as usize {
                run += original[lead as usize + k];
                words[lead as usize + k] = run;
            }
            assert_eq!(&gpu[..lead as usize], &original[..lead as usize], "count {count}: words before the data");
            assert_eq!(
                &gpu[lead as usize..(lead + count) as usize],
                &words[lead as usize..(lead + count) as usize],
                "count {count}"
            );
        }
    }
}
