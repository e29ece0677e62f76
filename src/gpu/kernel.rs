//! What every kernel's host wrapper is built on: [`ComputeKernel`] compiles a shader and binds
//! a dispatch, [`Bound`] records it, and [`SHADERS`] lists every kernel with its place in the
//! tree.
//!
//! A kernel lives in `shaders/<domain>/<name>.wgsl` and its host wrapper in
//! `src/gpu/<domain>/<name>.rs` (module `gpu::<domain>::<name>`); the name is unique across
//! domains and is also the pipeline's label. WGSL has no includes: code shared by several
//! kernels lives in `shaders/lib/`, and a wrapper's `SHADER` is the library files it needs
//! followed by its own file, joined at compile time ([`compose!`]).

use wgpu::util::DeviceExt;

use crate::gpu::GpuContext;

/// `SHADER` of a kernel: the `shaders/lib/` files it names, then `shaders/<domain>/<name>.wgsl`
/// (given as `"<domain>/<name>"`).
macro_rules! compose {
    ($kernel:literal $(, $lib:literal)*) => {
        concat!(
            $(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/lib/", $lib, ".wgsl")), "\n",)*
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/", $kernel, ".wgsl"))
        )
    };
}
pub(crate) use compose;

/// A kernel: `shaders/<domain>/<name>.wgsl`, its host wrapper `gpu::<domain>::<name>`, and its
/// composed source.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelSource {
    /// The folder of `shaders/` and the module of `gpu` it lives in.
    #[cfg_attr(not(test), allow(dead_code))]
    pub domain: &'static str,
    /// The kernel's name: its file, its wrapper module and its pipeline's label.
    pub name: &'static str,
    /// The library files it uses followed by its own file.
    pub source: &'static str,
}

/// The entry of [`SHADERS`] for the wrapper `gpu::<domain>::<name>` (which must exist).
macro_rules! kernel {
    ($domain:ident, $name:ident) => {
        KernelSource {
            domain: stringify!($domain),
            name: stringify!($name),
            source: crate::gpu::$domain::$name::SHADER,
        }
    };
}

/// Every kernel, for validation and for compiling them all ahead of the first step
/// ([`GpuContext::warm_up`]).
pub(crate) const SHADERS: &[KernelSource] = &[
    kernel!(al, al_commit),
    kernel!(al, al_elements),
    kernel!(al, al_gate),
    kernel!(al, al_merit),
    kernel!(al, al_outer),
    kernel!(al, al_pairs),
    kernel!(al, al_pcg),
    kernel!(al, al_search),
    kernel!(al, al_step_size),
    kernel!(al, al_surface),
    kernel!(al, al_surface_set),
    kernel!(check, step_check),
    kernel!(check, step_energy),
    kernel!(check, step_guard),
    kernel!(check, step_soft),
    kernel!(contact, bvh_build),
    kernel!(contact, bvh_refit),
    kernel!(contact, contact_advance),
    kernel!(contact, contact_bodies),
    kernel!(contact, contact_catch_up),
    kernel!(contact, contact_ccd),
    kernel!(contact, contact_csr),
    kernel!(contact, contact_detect),
    kernel!(contact, contact_groups),
    kernel!(contact, contact_rows),
    kernel!(contact, contact_schedule),
    kernel!(contact, scan),
    kernel!(rigid, rigid_apply),
    kernel!(rigid, rigid_groups),
    kernel!(rigid, rigid_reduce),
    kernel!(rigid, rigid_solve),
    kernel!(rigid, rigid_stretch),
    kernel!(vbd, vbd_advance),
    kernel!(vbd, vbd_chebyshev),
    kernel!(vbd, vbd_color),
    kernel!(vbd, vbd_divergence),
    kernel!(vbd, vbd_finish),
    kernel!(vbd, vbd_inertia),
    kernel!(vbd, vbd_spans),
    kernel!(vbd, vbd_spin),
];

/// The pipeline-overridable constants kernel `name` takes on the adapter `info` describes
/// (none for most kernels): what [`GpuContext::compile_all`] compiles ahead, so that it is the
/// pipeline a stepper then asks for.
pub(crate) fn adapter_constants(info: &wgpu::AdapterInfo, name: &str) -> Vec<(&'static str, f64)> {
    match name {
        "vbd_color" => crate::gpu::vbd::vbd_color::constants(crate::gpu::vbd::vbd_color::lanes_for(info)).to_vec(),
        _ => Vec::new(),
    }
}

/// The debug renderer's shader (vertex and fragment stages; host side `debug::render_frame`),
/// kept here with the kernels so that every shader is validated whatever the features.
pub(crate) const RENDER: KernelSource = KernelSource {
    domain: "render",
    name: "render_frame",
    source: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/render/render_frame.wgsl")),
};

/// Kernels' entry points besides `main`: name, composed source, entry.
pub(crate) const OTHER_ENTRIES: &[(&str, &str, &str)] = &[
    ("al_pcg", crate::gpu::al::al_pcg::SHADER, crate::gpu::al::al_pcg::WHOLE),
    ("al_search", crate::gpu::al::al_search::SHADER, crate::gpu::al::al_search::WHOLE),
];

thread_local! {
    /// Dispatches recorded on this thread, every kernel together: what a frame costs the
    /// driver and the GPU's front end whatever each dispatch does (several µs each on an H200,
    /// even with no workgroups).
    static DISPATCHES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Dispatches recorded on the calling thread so far (differences of two readings count what
/// was recorded between them).
pub(crate) fn dispatches_recorded() -> u64 {
    DISPATCHES.with(|d| d.get())
}

/// How many workgroups a bound dispatch runs.
#[derive(Clone)]
enum Workgroups {
    /// A grid fixed when the dispatch was bound.
    Direct([u32; 3]),
    /// Read by the GPU from `(x, y, z)` at a byte offset of a buffer that an earlier kernel of
    /// the same frame wrote: for counts only the GPU knows (contact pairs) and for work only
    /// the GPU decides on (a detection, a CCD pass), with no round trip to the host.
    Indirect(wgpu::Buffer, u64),
}

/// A kernel with its uniform and buffers bound: one dispatch, recorded again every step.
#[derive(Clone)]
pub struct Bound {
    /// The kernel's name (its pipeline's label), for profiles.
    label: &'static str,
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
        DISPATCHES.with(|d| d.set(d.get() + 1));
        pass.set_bind_group(0, &self.bind_group, &[]);
        match &self.workgroups {
            Workgroups::Direct([x, y, z]) => pass.dispatch_workgroups(*x, *y, *z),
            Workgroups::Indirect(buffer, offset) => pass.dispatch_workgroups_indirect(buffer, *offset),
        }
        crate::gpu::profile::mark(pass, self.label);
    }

    /// The workgroups of a direct dispatch, all dimensions together (0 for an indirect one).
    pub fn workgroups(&self) -> u32 {
        match self.workgroups {
            Workgroups::Direct([x, y, z]) => x * y * z,
            Workgroups::Indirect(..) => 0,
        }
    }

    /// The same dispatch over a grid of `x` × `y` workgroups (`workgroup_id` runs over both).
    pub fn grid(mut self, x: u32, y: u32) -> Self {
        self.workgroups = Workgroups::Direct([x, y, 1]);
        self
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
#[cfg(test)]
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

    /// The kernel of `source` (entry point `main`) with its pipeline-overridable `constants`
    /// set (name, value).
    pub fn with_constants(ctx: &GpuContext, label: &'static str, source: &str, constants: &[(&str, f64)]) -> Self {
        Self { pipeline: ctx.pipeline_with(label, source, "main", constants), label }
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
            label: self.label,
            pipeline: self.pipeline.clone(),
            bind_group,
            _uniform: uniform,
            workgroups: Workgroups::Direct([invocations.div_ceil(WORKGROUP), 1, 1]),
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
