//! Adapter and device selection.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use thiserror::Error;

/// How to pick the GPU.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Preferred adapter class when no name is given.
    pub power_preference: wgpu::PowerPreference,
    /// Use the first adapter whose name contains this (case-insensitive), e.g. `"llvmpipe"`
    /// or `"H100"`.
    pub adapter_name: Option<String>,
}

/// Why no GPU context could be made.
#[derive(Debug, Error)]
pub enum GpuError {
    /// The platform offers no adapter at all.
    #[error("no GPU adapter: {reason}")]
    NoAdapter {
        /// What wgpu reported.
        reason: String,
    },
    /// No adapter matched [`GpuOptions::adapter_name`].
    #[error("no GPU adapter whose name contains {wanted:?}; adapters: {found:?}")]
    AdapterNotFound {
        /// The requested name.
        wanted: String,
        /// Names of the adapters present.
        found: Vec<String>,
    },
    /// The adapter refused the device.
    #[error("GPU adapter {adapter:?} refused a device: {reason}")]
    Device {
        /// Adapter name.
        adapter: String,
        /// What wgpu reported.
        reason: String,
    },
    /// The scene uses something the GPU step does not do (yet); the CPU path does.
    #[error("the GPU step does not support {feature}")]
    Unsupported {
        /// What, with the offending value.
        feature: String,
    },
    /// The thread that feeds the queue could not start.
    #[error("cannot start the GPU submission thread: {reason}")]
    Thread {
        /// What the OS reported.
        reason: String,
    },
    /// Reading a buffer back failed.
    #[error("GPU readback of {buffer:?} failed: {reason}")]
    Readback {
        /// Buffer label.
        buffer: String,
        /// What wgpu reported.
        reason: String,
    },
}

/// A kernel's name and its source's hash.
type PipelineKey = (&'static str, u64);

/// A context [`GpuContext::shared`] opened: the options' adapter name and power preference, and
/// the context while some world holds it.
type OpenContext = (Option<String>, wgpu::PowerPreference, Weak<GpuContext>);

/// A device and queue with what Pliant needs to know about them.
pub struct GpuContext {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// Adapter name, backend and driver (recorded with every benchmark row).
    pub adapter_info: wgpu::AdapterInfo,
    /// The first error the device reported outside any error scope, or its loss (only for a
    /// device Pliant opened: a shared device keeps its owner's handlers).
    errors: Arc<Mutex<Option<String>>>,
    /// Nanoseconds per timestamp tick, when the device takes timestamp queries.
    pub(crate) timestamp_period: Option<f32>,
    /// Compiled kernels by name and source, shared by every stepper on the device: a stepper
    /// is made again when bodies come or go, and compiling ~25 pipelines takes from tens of
    /// milliseconds to a second (lavapipe), too long for a game thread.
    pipelines: Mutex<HashMap<PipelineKey, Arc<OnceLock<wgpu::ComputePipeline>>>>,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext").field("adapter", &self.adapter_info.name).finish_non_exhaustive()
    }
}

impl GpuContext {
    /// Picks an adapter and opens a device. Limits are WebGPU's defaults, raised to what the
    /// adapter has only for buffer sizes (large meshes); timestamp queries are asked for where
    /// the adapter offers them, and no other optional feature.
    pub fn new(options: &GpuOptions) -> Result<Self, GpuError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = match &options.adapter_name {
            Some(wanted) => {
                let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
                let found: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
                let key = wanted.to_lowercase();
                adapters
                    .into_iter()
                    .find(|a| a.get_info().name.to_lowercase().contains(&key))
                    .ok_or(GpuError::AdapterNotFound { wanted: wanted.clone(), found })?
            }
            None => pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: options.power_preference,
                force_fallback_adapter: false,
                compatible_surface: None,
                // A native library, not untrusted web content: report the adapter's own limits.
                apply_limit_buckets: false,
            }))
            .map_err(|e| GpuError::NoAdapter { reason: e.to_string() })?,
        };
        let adapter_info = adapter.get_info();
        let available = adapter.limits();
        let required_limits = wgpu::Limits {
            max_storage_buffer_binding_size: available.max_storage_buffer_binding_size,
            max_buffer_size: available.max_buffer_size,
            ..wgpu::Limits::default()
        };
        // Timestamps, where the adapter has them, time each frame on the GPU itself
        // (`StepReport::gpu_ms`) and, inside passes, each kernel (`gpu::profile`); nothing
        // else is optional.
        let required_features = adapter.features()
            & (wgpu::Features::TIMESTAMP_QUERY
                | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
                | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES);
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("pliant"),
            required_features,
            required_limits,
            ..Default::default()
        }))
        .map_err(|e| GpuError::Device { adapter: adapter_info.name.clone(), reason: e.to_string() })?;
        // wgpu's default for an error outside an error scope is a panic, on whatever thread
        // hit it (our queue thread, say); record it instead, so the world can fall back to the
        // CPU with the reason.
        let errors = Arc::new(Mutex::new(None));
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            sink.lock().get_or_insert_with(|| e.to_string());
        }));
        let sink = errors.clone();
        device.set_device_lost_callback(move |reason, message| {
            sink.lock().get_or_insert_with(|| format!("device lost ({reason:?}): {message}"));
        });
        let timestamp_period =
            device.features().contains(wgpu::Features::TIMESTAMP_QUERY).then(|| queue.get_timestamp_period());
        Ok(Self { device, queue, adapter_info, errors, timestamp_period, pipelines: Mutex::default() })
    }

    /// The context the worlds of this process open for `options`: one device, and its kernels
    /// compiled once, for every world alive at the same time (compiling Pliant's ~45 kernels
    /// takes 9 s on lavapipe and is redone for every new device); a new one when none is open,
    /// or when the open one reported an error (a lost device is not handed out again). The last
    /// world to drop its context releases the device.
    pub fn shared(options: &GpuOptions) -> Result<Arc<Self>, GpuError> {
        static OPEN: Mutex<Vec<OpenContext>> = Mutex::new(Vec::new());
        let mut open = OPEN.lock();
        // Released contexts and failed ones leave the list (a failed one lives on with its holders).
        open.retain(|(.., ctx)| ctx.upgrade().is_some_and(|c| c.error().is_none()));
        let same = open
            .iter()
            .find(|(name, preference, _)| *name == options.adapter_name && *preference == options.power_preference);
        if let Some(ctx) = same.and_then(|(.., ctx)| ctx.upgrade()) {
            return Ok(ctx);
        }
        let ctx = Arc::new(Self::new(options)?);
        open.push((options.adapter_name.clone(), options.power_preference, Arc::downgrade(&ctx)));
        Ok(ctx)
    }

    /// A context on a device the caller already has (a renderer's, so that
    /// `World::gpu_position_buffer` can be bound without a copy). The device must offer
    /// WebGPU's default limits; its error handlers stay the caller's.
    pub fn from_device(device: wgpu::Device, queue: wgpu::Queue, adapter_info: wgpu::AdapterInfo) -> Self {
        let timestamp_period =
            device.features().contains(wgpu::Features::TIMESTAMP_QUERY).then(|| queue.get_timestamp_period());
        Self {
            device,
            queue,
            adapter_info,
            errors: Arc::new(Mutex::new(None)),
            timestamp_period,
            pipelines: Mutex::default(),
        }
    }

    /// The compute pipeline of WGSL `source` (entry point `main`), compiled on first use and
    /// kept. A caller asking for one that another thread is compiling waits for it.
    pub fn pipeline(&self, label: &'static str, source: &str) -> wgpu::ComputePipeline {
        self.pipeline_at(label, source, "main")
    }

    /// [`GpuContext::pipeline`] of the entry point `entry` (a shader's other entry points are
    /// not compiled into it: on lavapipe, code a pipeline carries but never runs still made
    /// every dispatch of it allocate for it).
    pub fn pipeline_at(&self, label: &'static str, source: &str, entry: &'static str) -> wgpu::ComputePipeline {
        self.pipeline_with(label, source, entry, &[])
    }

    /// [`GpuContext::pipeline_at`] with the shader's pipeline-overridable `constants` set
    /// (name, value); each set of values is a pipeline of its own.
    pub fn pipeline_with(
        &self,
        label: &'static str,
        source: &str,
        entry: &'static str,
        constants: &[(&str, f64)],
    ) -> wgpu::ComputePipeline {
        let mut hasher = DefaultHasher::new();
        source.hash(&mut hasher);
        entry.hash(&mut hasher);
        for (name, value) in constants {
            name.hash(&mut hasher);
            value.to_bits().hash(&mut hasher);
        }
        let cell = self.pipelines.lock().entry((label, hasher.finish())).or_default().clone();
        cell.get_or_init(|| {
            let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
            self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions { constants, ..Default::default() },
                cache: None,
            })
        })
        .clone()
    }

    /// Compiles every Pliant kernel on a thread of its own, so that the first GPU step (and a
    /// stepper made again later) finds them ready instead of compiling on the caller's
    /// thread. Returns at once; a step that comes first waits only for the kernels it uses
    /// that are still compiling.
    pub fn warm_up(self: &Arc<Self>) {
        let ctx = self.clone();
        let spawned = std::thread::Builder::new().name("pliant-gpu-compile".into()).spawn(move || ctx.compile_all());
        if let Err(e) = spawned {
            // The kernels are then compiled when first used.
            log::warn!("pliant: cannot start the GPU kernel compilation thread: {e}");
        }
    }

    /// Compiles every Pliant kernel not compiled yet, here, and waits for those another thread
    /// is compiling (a loading screen's call; benchmarks call it before timing).
    pub fn compile_all(&self) {
        for k in crate::gpu::kernel::SHADERS {
            self.pipeline_with(
                k.name,
                k.source,
                "main",
                &crate::gpu::kernel::adapter_constants(&self.adapter_info, k.name),
            );
        }
        for (name, source, entry) in crate::gpu::kernel::OTHER_ENTRIES {
            self.pipeline_at(name, source, entry);
        }
    }

    /// The first error the device reported outside an error scope, or its loss, if any: the
    /// GPU state is then not to be trusted.
    pub fn error(&self) -> Option<String> {
        self.errors.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Worlds opened while a context is open get that context, its compiled kernels included;
    /// one whose device reported an error is not handed out again, and the last holder's drop
    /// releases a context. Low-power options, which no world asks for, keep this test's
    /// deliberately failed device apart from the other tests' worlds.
    #[test]
    fn open_contexts_are_shared_but_not_a_failed_one() {
        let options = GpuOptions { power_preference: wgpu::PowerPreference::LowPower, adapter_name: None };
        let a = match GpuContext::shared(&options) {
            Ok(ctx) => ctx,
            Err(e) if std::env::var("PLIANT_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
                panic!("PLIANT_REQUIRE_GPU=1 but no GPU context: {e}")
            }
            Err(e) => return eprintln!("skipping a GPU test: {e}"),
        };
        let b = GpuContext::shared(&options).expect("the open context");
        assert!(Arc::ptr_eq(&a, &b), "a second world got a device of its own");
        let _ = a.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("too large"),
            size: u64::MAX / 4,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        assert!(a.error().is_some());
        let c = GpuContext::shared(&options).expect("a new context");
        assert!(!Arc::ptr_eq(&a, &c) && c.error().is_none(), "a failed device was handed out again");
        drop((a, b));
        let released = Arc::downgrade(&c);
        drop(c);
        assert!(released.upgrade().is_none(), "the context outlived its last holder");
    }
}
