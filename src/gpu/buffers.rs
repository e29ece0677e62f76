//! Storage buffers packed straight from the state's arrays, and a blocking readback for tests
//! and tools (a step never blocks: its readback goes through a staging ring).

use bytemuck::Pod;
use wgpu::util::DeviceExt;

use crate::gpu::{GpuContext, GpuError};

/// The step's state buffers as the contact and rigid-correction programs bind them (owned by
/// [`crate::gpu::step::GpuStepper`]).
pub(crate) struct StateBuffers<'a> {
    pub positions: &'a wgpu::Buffer,
    pub steps: &'a wgpu::Buffer,
    pub index: &'a wgpu::Buffer,
    pub records: &'a wgpu::Buffer,
    pub masses: &'a wgpu::Buffer,
    pub flags: &'a wgpu::Buffer,
    pub targets: &'a wgpu::Buffer,
    pub initial: &'a wgpu::Buffer,
    pub previous: &'a wgpu::Buffer,
    pub before_previous: &'a wgpu::Buffer,
    pub control: &'a wgpu::Buffer,
    pub tets: &'a wgpu::Buffer,
}

/// A storage buffer initialised with `data` (byte for byte, as bytemuck lays it out).
pub fn storage<T: Pod>(ctx: &GpuContext, label: &str, data: &[T], writable: bool) -> wgpu::Buffer {
    let mut usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
    if !writable {
        usage -= wgpu::BufferUsages::COPY_SRC;
    }
    // wgpu rejects zero-sized bindings; an empty array still gets one element of room.
    let bytes = bytemuck::cast_slice::<T, u8>(data);
    let contents: std::borrow::Cow<'_, [u8]> =
        if bytes.is_empty() { vec![0; std::mem::size_of::<T>().max(4)].into() } else { bytes.into() };
    ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents: &contents, usage })
}

/// A zeroed storage buffer for `count` elements of `T` that kernels write.
pub fn output<T: Pod>(ctx: &GpuContext, label: &str, count: usize) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (count.max(1) * std::mem::size_of::<T>()) as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// A zeroed buffer of `words` u32 that kernels write and later dispatches read their workgroup
/// counts from (`INDIRECT`).
pub fn control_words(ctx: &GpuContext, label: &str, words: usize) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (words.max(1) * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::INDIRECT
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// Copies `count` elements of `buffer` back to the host, waiting for the GPU.
pub fn read_blocking<T: Pod>(ctx: &GpuContext, buffer: &wgpu::Buffer, count: usize) -> Result<Vec<T>, GpuError> {
    let label = format!("{buffer:?}");
    let size = (count * std::mem::size_of::<T>()) as u64;
    if size == 0 {
        return Ok(Vec::new());
    }
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("pliant readback"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("readback") });
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
    ctx.queue.submit([encoder.finish()]);
    let (tx, rx) = std::sync::mpsc::channel();
    staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| GpuError::Readback { buffer: label.clone(), reason: e.to_string() })?;
    rx.recv()
        .map_err(|e| GpuError::Readback { buffer: label.clone(), reason: e.to_string() })?
        .map_err(|e| GpuError::Readback { buffer: label.clone(), reason: e.to_string() })?;
    let view = staging
        .slice(..)
        .get_mapped_range()
        .map_err(|e| GpuError::Readback { buffer: label.clone(), reason: e.to_string() })?;
    let out = bytemuck::cast_slice::<u8, T>(&view).to_vec();
    drop(view);
    staging.unmap();
    Ok(out)
}
