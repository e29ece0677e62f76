//! Host wrappers, one per WGSL kernel in `shaders/` and named as it, over one shared
//! [`ComputeKernel`] that compiles a shader and records a dispatch.
//!
//! WGSL has no includes: code shared by several kernels lives in `shaders/lib/` and a wrapper's
//! `SHADER` is the library files it needs followed by its own file, joined at compile time.

use wgpu::util::DeviceExt;

use crate::gpu::GpuContext;

pub mod al_commit;
pub mod al_elements;
#[cfg(test)]
pub(crate) mod al_fixture;
pub mod al_gate;
pub mod al_merit;
pub mod al_outer;
pub mod al_pairs;
pub mod al_pcg;
pub mod al_search;
pub mod al_step_size;
pub mod al_surface;
pub mod al_surface_set;
pub mod bvh_build;
pub mod bvh_refit;
pub mod contact_advance;
pub mod contact_bodies;
pub mod contact_catch_up;
pub mod contact_ccd;
pub mod contact_csr;
pub mod contact_detect;
pub mod contact_groups;
pub mod contact_rows;
pub mod contact_schedule;
pub mod rigid_apply;
pub mod rigid_groups;
pub mod rigid_reduce;
pub mod rigid_solve;
pub mod scan;
pub mod step_check;
pub mod step_energy;
pub mod step_guard;
pub mod step_soft;
pub mod vbd_advance;
pub mod vbd_chebyshev;
pub mod vbd_color;
pub mod vbd_divergence;
pub mod vbd_finish;
pub mod vbd_inertia;

/// `SHADER` of a kernel: the `shaders/lib/` files it names, then `shaders/<kernel>.wgsl`.
macro_rules! compose {
    ($kernel:literal $(, $lib:literal)*) => {
        concat!($(include_str!(concat!("../../../shaders/lib/", $lib, ".wgsl")), "\n",)* include_str!(concat!("../../../shaders/", $kernel, ".wgsl")))
    };
}
pub(crate) use compose;

/// Every kernel's name (its file in `shaders/`) and composed source, for validation and for
/// compiling them all ahead of the first step ([`GpuContext::warm_up`]).
pub const SHADERS: &[(&str, &str)] = &[
    ("al_commit", al_commit::SHADER),
    ("al_elements", al_elements::SHADER),
    ("al_gate", al_gate::SHADER),
    ("al_merit", al_merit::SHADER),
    ("al_outer", al_outer::SHADER),
    ("al_pairs", al_pairs::SHADER),
    ("al_pcg", al_pcg::SHADER),
    ("al_search", al_search::SHADER),
    ("al_step_size", al_step_size::SHADER),
    ("al_surface", al_surface::SHADER),
    ("al_surface_set", al_surface_set::SHADER),
    ("bvh_build", bvh_build::SHADER),
    ("bvh_refit", bvh_refit::SHADER),
    ("contact_advance", contact_advance::SHADER),
    ("contact_bodies", contact_bodies::SHADER),
    ("contact_catch_up", contact_catch_up::SHADER),
    ("contact_ccd", contact_ccd::SHADER),
    ("contact_csr", contact_csr::SHADER),
    ("contact_detect", contact_detect::SHADER),
    ("contact_groups", contact_groups::SHADER),
    ("contact_rows", contact_rows::SHADER),
    ("contact_schedule", contact_schedule::SHADER),
    ("rigid_apply", rigid_apply::SHADER),
    ("rigid_groups", rigid_groups::SHADER),
    ("rigid_reduce", rigid_reduce::SHADER),
    ("rigid_solve", rigid_solve::SHADER),
    ("scan", scan::SHADER),
    ("step_check", step_check::SHADER),
    ("step_energy", step_energy::SHADER),
    ("step_soft", step_soft::SHADER),
    ("step_guard", step_guard::SHADER),
    ("vbd_advance", vbd_advance::SHADER),
    ("vbd_chebyshev", vbd_chebyshev::SHADER),
    ("vbd_color", vbd_color::SHADER),
    ("vbd_divergence", vbd_divergence::SHADER),
    ("vbd_finish", vbd_finish::SHADER),
    ("vbd_inertia", vbd_inertia::SHADER),
];

/// Kernels' entry points besides `main`: name, composed source, entry.
pub const OTHER_ENTRIES: &[(&str, &str, &str)] =
    &[("al_pcg", al_pcg::SHADER, al_pcg::WHOLE), ("al_search", al_search::SHADER, al_search::WHOLE)];

/// How many workgroups a bound dispatch runs.
#[derive(Clone)]
enum Workgroups {
    /// A count fixed when the dispatch was bound.
    Direct(u32),
    /// Read by the GPU from `(x, y, z)` at a byte offset of a buffer that an earlier kernel of
    /// the same frame wrote: for counts only the GPU knows (contact pairs) and for work only
    /// the GPU decides on (a detection, a CCD pass), with no round trip to the host.
    Indirect(wgpu::Buffer, u64),
}

/// A kernel with its uniform and buffers bound: one dispatch, recorded again every step.
#[derive(Clone)]
pub struct Bound {
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    /// Kept alive with the bind group that names it.
    _uniform: wgpu::Buffer,
    workgroups: Workgroups,
}

impl Bound {
    /// Records the dispatch into `pass`.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        pass.set_pipeline(&self.pipeline);
        self.record_same_pipeline(pass);
    }

    /// Records the dispatch into `pass`, whose pipeline is already this one's (a step records
    /// about a hundred dispatches per frame; the colour passes share one pipeline).
    pub fn record_same_pipeline(&self, pass: &mut wgpu::ComputePass<'_>) {
        pass.set_bind_group(0, &self.bind_group, &[]);
        match &self.workgroups {
            Workgroups::Direct(n) => pass.dispatch_workgroups(*n, 1, 1),
            Workgroups::Indirect(buffer, offset) => pass.dispatch_workgroups_indirect(buffer, *offset),
        }
    }

    /// The workgroups of a direct dispatch (0 for an indirect one).
    pub fn workgroups(&self) -> u32 {
        match self.workgroups {
            Workgroups::Direct(n) => n,
            Workgroups::Indirect(..) => 0,
        }
    }

    /// The same dispatch with its workgroup count read from `buffer` at byte `offset` (three
    /// u32 written by an earlier kernel; the buffer needs `INDIRECT` usage).
    pub fn indirect(mut self, buffer: &wgpu::Buffer, offset: u64) -> Self {
        self.workgroups = Workgroups::Indirect(buffer.clone(), offset);
        self
    }

    /// Whether `other` runs the same pipeline.
    pub fn same_pipeline(&self, other: &Bound) -> bool {
        self.pipeline == other.pipeline
    }
}

/// Records `bounds` in order into one compute pass of their own.
pub fn record_pass(encoder: &mut wgpu::CommandEncoder, label: &str, bounds: &[Bound]) {
    let mut pass =
        encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes: None });
    for b in bounds {
        b.record(&mut pass);
    }
}

/// Invocations per workgroup: every kernel's `@workgroup_size(64)`.
pub const WORKGROUP: u32 = 64;

/// A compiled one-entry-point compute shader whose bind group 0 is a uniform at binding 0
/// followed by storage buffers at bindings 1, 2, …
pub struct ComputeKernel {
    pipeline: wgpu::ComputePipeline,
    label: &'static str,
}

impl ComputeKernel {
    /// The kernel of `source` (entry point `main`) on `ctx`'s device, compiled once per
    /// device ([`GpuContext::pipeline`]).
    pub fn new(ctx: &GpuContext, label: &'static str, source: &str) -> Self {
        Self { pipeline: ctx.pipeline(label, source), label }
    }

    /// The kernel of `source`'s entry point `entry`.
    pub fn at(ctx: &GpuContext, label: &'static str, source: &str, entry: &'static str) -> Self {
        Self { pipeline: ctx.pipeline_at(label, source, entry), label }
    }

    /// Binds uniform `params` and `buffers` (in order from binding 1) for dispatches of
    /// `invocations` threads. The binding is kept and recorded again every step, so a step
    /// creates no buffer and no bind group.
    pub fn bind(&self, ctx: &GpuContext, params: &[u8], buffers: &[&wgpu::Buffer], invocations: u32) -> Bound {
        let uniform = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(self.label),
            contents: params,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        });
        let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() }];
        entries.extend(
            buffers
                .iter()
                .enumerate()
                .map(|(k, buf)| wgpu::BindGroupEntry { binding: k as u32 + 1, resource: buf.as_entire_binding() }),
        );
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(self.label),
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        Bound {
            pipeline: self.pipeline.clone(),
            bind_group,
            _uniform: uniform,
            workgroups: Workgroups::Direct(invocations.div_ceil(WORKGROUP)),
        }
    }

    /// [`ComputeKernel::bind`] with a plain-old-data `params` struct passed as its bytes.
    pub fn bind_pod<P: bytemuck::Pod>(
        &self,
        ctx: &GpuContext,
        params: &P,
        buffers: &[&wgpu::Buffer],
        invocations: u32,
    ) -> Bound {
        self.bind(ctx, bytemuck::bytes_of(params), buffers, invocations)
    }
}
