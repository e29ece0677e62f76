//! A thread of its own for the queue: the game thread records a frame and hands it over; the
//! submission, which some drivers run synchronously (lavapipe executes the whole command
//! buffer inside `vkQueueSubmit`: 28 ms for a 10k-tet frame) or throttle, happens here.
//!
//! The thread also finishes the command encoders, polls the device (after each submission, and
//! every millisecond while work is in flight) and unmaps read staging buffers: wgpu's poll and
//! unmap take locks that a running submission holds, so on the game thread they would wait for
//! it. Polling here retires finished frames and maps readbacks; the game thread only looks at
//! what arrived.
//!
//! Queue writes go through the same thread so that they stay ordered with the submissions: a
//! `queue.write_buffer` lands before the *next* submission on the queue, whichever thread makes
//! it, so a write for frame k + 1 issued on the game thread before this thread has submitted
//! frame k would reach frame k.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use crossbeam::channel::{RecvTimeoutError, Sender, unbounded};

use crate::gpu::readback::{ReadbackRing, ReadbackTicket};
use crate::gpu::{GpuContext, GpuError};

/// How often the thread polls the device while frames are in flight.
const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1);

enum Job {
    Write { buffer: wgpu::Buffer, offset: u64, data: Vec<u8> },
    Submit { commands: wgpu::CommandEncoder, readback: Option<(Arc<ReadbackRing>, ReadbackTicket)> },
    Fence(Sender<()>),
}

/// The queue's thread. Dropping it finishes the queued work and joins the thread.
pub struct Submitter {
    tx: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    in_flight: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Submitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Submitter").field("in_flight", &self.in_flight()).finish_non_exhaustive()
    }
}

impl Submitter {
    /// Starts the thread for `ctx`'s queue.
    pub fn new(ctx: Arc<GpuContext>, ring: Option<Arc<ReadbackRing>>) -> Result<Self, GpuError> {
        let (tx, rx) = unbounded::<Job>();
        let in_flight = Arc::new(AtomicUsize::new(0));
        let counter = in_flight.clone();
        let thread = std::thread::Builder::new()
            .name("pliant-gpu-submit".into())
            .spawn(move || {
                // The ring whose slots this thread unmaps: the one of the newest submission
                // with a readback (a world's stepper, and so its ring, is made again when its
                // bodies change; the queue thread stays, so that submissions stay in order).
                let mut ring = ring;
                let poll = |ring: &Option<Arc<ReadbackRing>>| {
                    let _ = ctx.device.poll(wgpu::PollType::Poll);
                    if let Some(ring) = ring {
                        ring.recycle();
                    }
                };
                loop {
                    let job = if counter.load(Ordering::Acquire) > 0 {
                        match rx.recv_timeout(POLL_INTERVAL) {
                            Ok(job) => job,
                            Err(RecvTimeoutError::Timeout) => {
                                poll(&ring);
                                continue;
                            }
                            Err(RecvTimeoutError::Disconnected) => break,
                        }
                    } else {
                        match rx.recv() {
                            Ok(job) => job,
                            Err(_) => break,
                        }
                    };
                    match job {
                        Job::Write { buffer, offset, data } => ctx.queue.write_buffer(&buffer, offset, &data),
                        Job::Submit { commands, readback } => {
                            // Finishing validates the recorded passes: about as long as
                            // recording them, so it is done here too.
                            ctx.queue.submit([commands.finish()]);
                            if let Some((frames, ticket)) = readback {
                                frames.submitted(ticket);
                                ring = Some(frames);
                            }
                            let done = counter.clone();
                            ctx.queue.on_submitted_work_done(move || {
                                done.fetch_sub(1, Ordering::AcqRel);
                            });
                            poll(&ring);
                        }
                        Job::Fence(reply) => {
                            let _ = reply.send(());
                        }
                    }
                }
                // Let the last frames finish before the device may go.
                let _ = ctx.device.poll(wgpu::PollType::wait_indefinitely());
            })
            .map_err(|e| GpuError::Thread { reason: e.to_string() })?;
        Ok(Self { tx: Some(tx), thread: Some(thread), in_flight })
    }

    fn send(&self, job: Job) {
        // The thread ends only when `self` drops, or when a wgpu call on it panicked; then the
        // device is unusable and the next readback reports it.
        if let Some(tx) = &self.tx {
            let _ = tx.send(job);
        }
    }

    /// Queues `data` for `buffer` at `offset`, ordered with the submissions.
    pub fn write(&self, buffer: &wgpu::Buffer, offset: u64, data: &[u8]) {
        self.send(Job::Write { buffer: buffer.clone(), offset, data: data.to_vec() });
    }

    /// Hands the recorded `commands` to the queue thread, which finishes and submits them;
    /// `readback` starts mapping once they are submitted. Counts as a frame in flight until
    /// the GPU has run it.
    pub fn submit(&self, commands: wgpu::CommandEncoder, readback: Option<(Arc<ReadbackRing>, ReadbackTicket)>) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.send(Job::Submit { commands, readback });
    }

    /// Submissions handed over that the GPU has not finished (as of the last device poll).
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Blocks until every job handed over so far has been given to the queue.
    pub fn fence(&self) {
        let (reply, done) = crossbeam::channel::bounded(1);
        if let Some(tx) = &self.tx
            && tx.send(Job::Fence(reply)).is_ok()
        {
            let _ = done.recv();
        }
    }
}

impl Drop for Submitter {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
