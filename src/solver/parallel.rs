//! Worker threads for the CPU solver: one crossbeam scope per solve, a spinning barrier between
//! phases (per color), and a shared slice for the disjoint writes the coloring guarantees.
//!
//! Work is split into fixed contiguous ranges and every per-vertex computation reads the same
//! inputs whatever thread runs it, so results are bit-identical for any thread count.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crossbeam::utils::Backoff;

/// A sense-counting barrier that spins (then yields) instead of sleeping: a VBD step crosses
/// it ~30 times per iteration, and a futex wake-up (~5–10 µs) would cost more than a color of a
/// small mesh.
pub struct SpinBarrier {
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
}

impl SpinBarrier {
    /// A barrier for `threads` participants.
    pub fn new(threads: usize) -> Self {
        Self {
            threads,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            poisoned: AtomicBool::new(false),
        }
    }

    /// Marks the barrier broken: a participant panicked and will never arrive.
    fn poison(&self) {
        self.poisoned.store(true, Ordering::Release);
    }

    /// Blocks until all participants have called `wait` for this generation.
    pub fn wait(&self) {
        if self.threads <= 1 {
            return;
        }
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::AcqRel);
        } else {
            let backoff = Backoff::new();
            while self.generation.load(Ordering::Acquire) == generation {
                // A panicking peer never arrives; follow it instead of spinning forever.
                if self.poisoned.load(Ordering::Acquire) {
                    panic!("a solver worker thread panicked");
                }
                backoff.snooze();
            }
        }
    }
}

/// The `t`-th of `threads` contiguous chunks of `0..len`.
#[inline]
pub fn chunk(len: usize, threads: usize, t: usize) -> Range<usize> {
    (len * t / threads)..(len * (t + 1) / threads)
}

/// Runs `work(thread_index, barrier)` on `threads` threads (the caller is thread 0) and waits.
pub fn run_workers<F>(threads: usize, work: F)
where
    F: Fn(usize, &SpinBarrier) + Sync,
{
    let threads = threads.max(1);
    let barrier = SpinBarrier::new(threads);
    if threads == 1 {
        work(0, &barrier);
        return;
    }
    // A panic in a worker propagates through the scope: we re-raise it rather than continue
    // with half-updated state.
    let guarded = |t: usize| {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(t, &barrier)));
        if let Err(payload) = r {
            barrier.poison();
            std::panic::resume_unwind(payload);
        }
    };
    let result = crossbeam::scope(|s| {
        for t in 1..threads {
            let guarded = &guarded;
            s.spawn(move |_| guarded(t));
        }
        guarded(0);
    });
    if let Err(payload) = result {
        std::panic::resume_unwind(payload);
    }
}

/// A slice shared between workers that write disjoint elements.
///
/// The solver's phases guarantee that no element is written by two threads, and that no
/// element is read while another thread writes it (colors and barriers); this type only makes
/// that protocol expressible. Every access is `unsafe` and states which phase makes it sound.
pub struct SharedSlice<'a, T> {
    cells: &'a [UnsafeCell<T>],
    _marker: PhantomData<&'a mut [T]>,
}

// SAFETY: access is coordinated by the solver's phase protocol (see type docs).
unsafe impl<T: Send> Sync for SharedSlice<'_, T> {}
unsafe impl<T: Send> Send for SharedSlice<'_, T> {}

impl<'a, T: Copy> SharedSlice<'a, T> {
    /// Wraps a mutable slice for the duration of a parallel region.
    pub fn new(slice: &'a mut [T]) -> Self {
        let len = slice.len();
        let ptr = slice.as_mut_ptr() as *const UnsafeCell<T>;
        // SAFETY: `UnsafeCell<T>` has the same layout as `T`, and we hold the unique borrow.
        let cells = unsafe { std::slice::from_raw_parts(ptr, len) };
        Self { cells, _marker: PhantomData }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// The whole slice, for a phase in which nobody writes it.
    ///
    /// # Safety
    /// No thread may write any element while the returned slice is in use.
    #[inline(always)]
    pub unsafe fn as_slice(&self) -> &[T] {
        // SAFETY: same layout; the caller guarantees there is no concurrent writer.
        unsafe { std::slice::from_raw_parts(self.cells.as_ptr() as *const T, self.cells.len()) }
    }

    /// Reads element `i`.
    ///
    /// # Safety
    /// No other thread may write element `i` during this phase.
    #[inline(always)]
    pub unsafe fn get(&self, i: usize) -> T {
        // SAFETY: caller guarantees no concurrent writer.
        unsafe { *self.cells[i].get() }
    }

    /// Writes element `i`.
    ///
    /// # Safety
    /// No other thread may read or write element `i` during this phase.
    #[inline(always)]
    pub unsafe fn set(&self, i: usize, v: T) {
        // SAFETY: caller guarantees exclusive access to element `i`.
        unsafe { *self.cells[i].get() = v }
    }
}

/// A value that one thread rebuilds while the others wait at a barrier, and that every thread
/// reads in the phases between rebuilds (contact pair lists, broadphase trees).
pub struct PhaseCell<T> {
    cell: UnsafeCell<T>,
}

// SAFETY: access is coordinated by the solver's phase protocol (see `SharedSlice`).
unsafe impl<T: Send> Sync for PhaseCell<T> {}

impl<T> PhaseCell<T> {
    /// Wraps a value for a parallel region.
    pub fn new(value: T) -> Self {
        Self { cell: UnsafeCell::new(value) }
    }

    /// Shared access.
    ///
    /// # Safety
    /// No thread may hold the value mutably during this phase.
    #[inline(always)]
    pub unsafe fn get(&self) -> &T {
        // SAFETY: caller guarantees there is no concurrent writer.
        unsafe { &*self.cell.get() }
    }

    /// Exclusive access.
    ///
    /// # Safety
    /// No other thread may access the value during this phase.
    #[allow(clippy::mut_from_ref)]
    #[inline(always)]
    pub unsafe fn get_mut(&self) -> &mut T {
        // SAFETY: caller guarantees exclusive access.
        unsafe { &mut *self.cell.get() }
    }

    /// Unwraps the value after the parallel region.
    pub fn into_inner(self) -> T {
        self.cell.into_inner()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_partition_the_range() {
        for len in [0, 1, 7, 100] {
            for threads in 1..5 {
                let total: usize = (0..threads).map(|t| chunk(len, threads, t).len()).sum();
                assert_eq!(total, len);
            }
        }
    }

    #[test]
    fn barrier_orders_phases() {
        let mut data = vec![0u64; 64];
        let shared = SharedSlice::new(&mut data);
        run_workers(3, |t, barrier| {
            for phase in 0..50u64 {
                for i in chunk(64, 3, t) {
                    // SAFETY: each thread writes only its chunk in this phase.
                    unsafe { shared.set(i, shared.get(i) + phase) };
                }
                barrier.wait();
                // Every element must already hold this phase's update.
                for i in 0..64 {
                    // SAFETY: read-only phase.
                    let v = unsafe { shared.get(i) };
                    assert_eq!(v, phase * (phase + 1) / 2);
                }
                barrier.wait();
            }
        });
    }
}
