//! Worker threads for the CPU solver: a pool of threads kept between parallel phases, a
//! spinning barrier between the steps of a phase (per color), and a shared slice for the
//! disjoint writes the coloring guarantees.
//!
//! Work is split into fixed contiguous ranges and every per-vertex computation reads the same
//! inputs whatever thread runs it, so results are bit-identical for any thread count.

use std::any::Any;
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crossbeam::utils::Backoff;
use parking_lot::Mutex;

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

/// The work of one parallel phase: run by every thread with its index and the phase's barrier.
type Work<'a> = dyn Fn(usize, &SpinBarrier) + Sync + 'a;

/// A phase handed to the workers: the caller's closure and barrier, by address. `run` does not
/// return before every worker of the phase is done with them, which is what makes the erased
/// lifetime sound.
#[derive(Clone, Copy)]
struct Job {
    work: *const Work<'static>,
    barrier: *const SpinBarrier,
    threads: usize,
}

// SAFETY: the pointees are `Sync` and outlive every use (see `Job`).
unsafe impl Send for Job {}

/// The phase being handed out and which workers are alive: the caller publishes a phase and a
/// worker decides to end under the same lock, so no phase counts on a worker that has ended.
#[derive(Default)]
struct Roster {
    job: Option<Job>,
    /// Per worker (index − 1): running and waiting for phases.
    alive: Vec<bool>,
}

/// What the caller and the workers share.
#[derive(Default)]
struct PoolShared {
    /// Bumped for each phase handed out (under the roster's lock).
    epoch: AtomicU64,
    roster: Mutex<Roster>,
    /// Workers of the current phase not finished yet.
    pending: AtomicUsize,
    /// The first panic of any thread in the current phase, re-raised by the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    shutdown: AtomicBool,
}

/// How long a worker waits for the next phase, spinning and yielding its core, before it ends.
/// The phases of a substep follow each other at once and the check between substeps of a small
/// scene takes less, so a step reuses its workers; a game's frames, further apart, start them
/// anew.
const LINGER: std::time::Duration = std::time::Duration::from_millis(1);

/// Worker threads for the parallel phases of the CPU solver (a substep's predict, detect, solve
/// and finish, substep after substep). A phase starts the workers it lacks; between phases they
/// wait spinning and yielding their core, and end after [`LINGER`] without a phase. They never
/// park: on the 2-core CI machine a woken thread took tens of microseconds to run again and the
/// scheduler then kept it on its waker's core for a while, where the spinning barriers made a
/// 12,167-vertex box's two-thread step 10–15 % slower, while a new thread starts on an idle
/// core. Ending the workers after every substep instead (a thread start per substep, as before
/// the phases) measured slower there too. Starting a thread costs about 40 µs; the caller's
/// thread is thread 0 of every phase, and one thread starts none.
#[derive(Default)]
pub struct WorkerPool {
    shared: Arc<PoolShared>,
    /// Per worker (index − 1): its thread, once started (ended ones are joined when replaced).
    workers: Vec<Option<std::thread::JoinHandle<()>>>,
}

/// A copy of a pool is a new pool: threads are not shared.
impl Clone for WorkerPool {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPool").field("workers", &self.workers.len()).finish()
    }
}

impl WorkerPool {
    /// Runs `work(thread_index, barrier)` on `threads` threads (the caller is thread 0) and
    /// waits for all of them. A panic in any thread is re-raised here once every thread has
    /// stopped.
    pub fn run<F>(&mut self, threads: usize, work: F)
    where
        F: Fn(usize, &SpinBarrier) + Sync,
    {
        let threads = threads.max(1);
        let barrier = SpinBarrier::new(threads);
        if threads == 1 {
            work(0, &barrier);
            return;
        }
        let erased: &Work<'_> = &work;
        // SAFETY: only the lifetime is erased; `run` waits below until every worker of the
        // phase has finished with `work` and `barrier`.
        let erased: *const Work<'static> = unsafe { std::mem::transmute(erased as *const Work<'_>) };
        {
            let shared = self.shared.clone();
            let mut roster = shared.roster.lock();
            start_workers(&mut self.workers, &shared, &mut roster, threads - 1);
            roster.job = Some(Job { work: erased, barrier: &barrier, threads });
            self.shared.pending.store(threads - 1, Ordering::Release);
            self.shared.epoch.fetch_add(1, Ordering::AcqRel);
        }
        let own = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(0, &barrier)));
        if let Err(payload) = own {
            record_panic(&self.shared, &barrier, payload);
        }
        let backoff = Backoff::new();
        while self.shared.pending.load(Ordering::Acquire) != 0 {
            backoff.snooze();
        }
        self.shared.roster.lock().job = None;
        if let Some(payload) = self.shared.panic.lock().take() {
            std::panic::resume_unwind(payload);
        }
    }
}

/// Keeps the first panic of a phase and breaks its barrier. The panic is stored before the
/// barrier is poisoned, so the threads that follow it out of the barrier cannot take its place:
/// the caller re-raises the original message.
fn record_panic(shared: &PoolShared, barrier: &SpinBarrier, payload: Box<dyn Any + Send>) {
    shared.panic.lock().get_or_insert(payload);
    barrier.poison();
}

/// Starts the first `count` workers that are not running (under the roster's lock, before
/// the phase is published: a new worker waits for the epoch after the current one).
fn start_workers(
    workers: &mut Vec<Option<std::thread::JoinHandle<()>>>,
    shared: &Arc<PoolShared>,
    roster: &mut Roster,
    count: usize,
) {
    if roster.alive.len() < count {
        roster.alive.resize(count, false);
    }
    if workers.len() < count {
        workers.resize_with(count, || None);
    }
    for k in 0..count {
        if roster.alive[k] {
            continue;
        }
        if let Some(ended) = workers[k].take() {
            // It ended itself (under the lock we hold) and only returns now.
            let _ = ended.join();
        }
        let shared = shared.clone();
        let (index, seen) = (k + 1, shared.epoch.load(Ordering::Acquire));
        let spawned = std::thread::Builder::new()
            .name(format!("pliant-worker-{index}"))
            .spawn(move || worker_loop(&shared, index, seen));
        match spawned {
            Ok(handle) => workers[k] = Some(handle),
            // Without a thread of its own the phase cannot have this many: the caller's
            // thread count comes from the machine, so this is a resource failure.
            Err(e) => panic!("pliant: cannot start a solver worker thread: {e}"),
        }
        roster.alive[k] = true;
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        for w in self.workers.drain(..).flatten() {
            // A worker only ends by returning; a panic in a phase was caught and handed over.
            let _ = w.join();
        }
    }
}

/// A worker: waits for a phase, runs its part when its index is below the phase's thread
/// count, reports done, and waits again; ends after [`LINGER`] without a phase.
fn worker_loop(shared: &PoolShared, index: usize, mut seen: u64) {
    loop {
        let backoff = Backoff::new();
        let since = std::time::Instant::now();
        loop {
            if shared.shutdown.load(Ordering::Acquire) {
                return;
            }
            if shared.epoch.load(Ordering::Acquire) != seen {
                break;
            }
            if since.elapsed() > LINGER {
                let mut roster = shared.roster.lock();
                // A phase published under the lock before this check is run, not abandoned.
                if shared.epoch.load(Ordering::Acquire) == seen {
                    roster.alive[index - 1] = false;
                    return;
                }
                break;
            }
            backoff.snooze();
        }
        // The epoch and its job are read together: read apart, a worker that sat out one phase
        // could take the next phase's job with the old epoch and run it twice.
        let job = {
            let roster = shared.roster.lock();
            seen = shared.epoch.load(Ordering::Acquire);
            roster.job
        };
        let Some(job) = job else { continue };
        if index >= job.threads {
            continue;
        }
        // SAFETY: the caller of `run` keeps `work` and `barrier` alive until `pending` is 0,
        // which this worker's decrement below is part of.
        let (work, barrier) = unsafe { (&*job.work, &*job.barrier) };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(index, barrier)));
        if let Err(payload) = r {
            record_panic(shared, barrier, payload);
        }
        shared.pending.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs `work` on `threads` threads of a pool made for the call (tests and one-off helpers).
#[cfg(test)]
pub fn run_workers<F>(threads: usize, work: F)
where
    F: Fn(usize, &SpinBarrier) + Sync,
{
    WorkerPool::default().run(threads, work);
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

    /// One pool runs many phases, with any thread count, and re-raises a worker's panic after
    /// every thread has stopped (and keeps working after it).
    #[test]
    fn a_pool_runs_phases_and_reraises_panics() {
        let mut pool = WorkerPool::default();
        for threads in [2, 3, 1, 4, 2] {
            let mut data = vec![0usize; 1000];
            let shared = SharedSlice::new(&mut data);
            for round in 0..20 {
                pool.run(threads, |t, barrier| {
                    for i in chunk(1000, threads, t) {
                        // SAFETY: each thread writes only its chunk.
                        unsafe { shared.set(i, shared.get(i) + round) };
                    }
                    barrier.wait();
                });
            }
            // SAFETY: no phase is running.
            assert!(unsafe { shared.as_slice() }.iter().all(|&v| v == 190), "{threads} threads");
        }
        for panicking in [0, 1] {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.run(3, |t, barrier| {
                    if t == panicking {
                        panic!("worker {t} fails");
                    }
                    barrier.wait();
                })
            }));
            let payload = r.expect_err("a thread's panic is re-raised");
            let message = payload.downcast_ref::<String>().map(String::as_str);
            assert_eq!(message, Some(format!("worker {panicking} fails").as_str()), "the original panic is re-raised");
        }
        let count = AtomicUsize::new(0);
        pool.run(3, |_, barrier| {
            count.fetch_add(1, Ordering::Relaxed);
            barrier.wait();
        });
        assert_eq!(count.load(Ordering::Relaxed), 3);
        // Workers idle longer than LINGER end; the next phase starts them again, and a phase
        // published as one decides to end still runs on every thread.
        for pause in [LINGER * 3, LINGER, LINGER / 2, std::time::Duration::ZERO] {
            std::thread::sleep(pause);
            pool.run(3, |_, barrier| {
                count.fetch_add(1, Ordering::Relaxed);
                barrier.wait();
            });
        }
        assert_eq!(count.into_inner(), 15);
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
