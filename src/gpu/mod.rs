//! The GPU backend on wgpu: a device context, buffers packed straight from [`crate::state`]
//! with bytemuck ([`pack`]), one host wrapper per WGSL kernel, named as its shader
//! (`shaders/vbd/vbd_color.wgsl` ↔ [`vbd::vbd_color`]; see [`kernel`]), and the step that drives them
//! ([`step::GpuStepper`], used by `World` with `Backend::Gpu`/`Auto`).
//!
//! Every kernel stays within WebGPU's default limits (at most 8 storage buffers per stage, no
//! f64, no float atomics), so the same code runs on Vulkan, Metal, DX12 and in the browser.
//! The CPU path is the oracle: each kernel has a parity test against the CPU code it mirrors,
//! and `tests/gpu_scenes.rs` runs whole scenes on both.
//!
//! The whole step of the default configuration runs here: tets and cloth, damping, pins and
//! kinematic paths, analytic obstacles, body–body and self contact ([`contact::program`]) and the
//! rigid correction of the initial guess ([`rigid::program`]). Scenes with more analytic
//! obstacles than a kernel's uniform holds step on the CPU, with the reason reported.

pub mod al;
pub mod buffers;
pub mod check;
pub mod contact;
pub mod context;
pub mod kernel;
pub mod obstacles;
pub mod pack;
pub mod profile;
pub mod readback;
pub mod rigid;
pub mod step;
pub mod submit;
pub mod vbd;

pub use context::{GpuContext, GpuError, GpuOptions};

#[cfg(test)]
pub(crate) mod test_support {
    use crate::gpu::{GpuContext, GpuOptions};

    /// A context for a GPU test, or `None` (the test is skipped, with a message) when this
    /// machine has no adapter. With `PLIANT_REQUIRE_GPU=1` (CI, on Mesa lavapipe) a missing
    /// adapter fails the test instead.
    pub fn context() -> Option<GpuContext> {
        match GpuContext::new(&GpuOptions::default()) {
            Ok(ctx) => Some(ctx),
            Err(e) if std::env::var("PLIANT_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
                panic!("PLIANT_REQUIRE_GPU=1 but no GPU context: {e}")
            }
            Err(e) => {
                eprintln!("skipping a GPU test: {e}");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::kernel::{ComputeKernel, KernelSource, RENDER, SHADERS, record_pass};

    /// Lavapipe ends an invocation's loops after 65,535 iterations in all (shaders/README.md,
    /// "Lavapipe's loop budget"): a loop of 100,000 stops there, and a loop entered after it runs
    /// once. A hardware adapter runs both in full. The GPU tests on lavapipe are sized by this.
    #[test]
    fn lavapipe_budgets_an_invocations_loop_iterations() {
        let Some(ctx) = crate::gpu::test_support::context() else { return };
        const SOURCE: &str = "
struct Params { n: u32, m: u32, p0: u32, p1: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x != 0u {
        return;
    }
    var first = 0u;
    for (var i = 0u; i < params.n; i++) {
        first += 1u;
    }
    var second = 0u;
    for (var i = 0u; i < params.m; i++) {
        second += 1u;
    }
    out[0] = first;
    out[1] = second;
}";
        let kernel = ComputeKernel::new(&ctx, "loop_budget", SOURCE);
        let out = storage(&ctx, "loop budget", &[0u32; 2], true);
        let bound = kernel.bind_pod(&ctx, &[100_000u32, 100, 0, 0], &[&out], 64);
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        record_pass(&mut encoder, "loop budget", &[bound]);
        ctx.queue.submit([encoder.finish()]);
        let counts: Vec<u32> = read_blocking(&ctx, &out, 2).expect("counts");
        let lavapipe = ctx.adapter_info.name.contains("llvmpipe");
        eprintln!("{}: loops ran {} and {} iterations", ctx.adapter_info.name, counts[0], counts[1]);
        if lavapipe {
            assert_eq!(counts, [65_535, 1], "lavapipe's loop budget changed: update shaders/README.md");
        } else {
            assert_eq!(counts, [100_000, 100]);
        }
    }

    /// Every kernel, composed with the `shaders/lib/` files it uses, parses and validates for
    /// the WebGPU baseline: no capabilities beyond the default (in particular no f64). Every
    /// `shaders/<domain>/<name>.wgsl` outside `lib/` is a registered kernel (or the render
    /// shader), its registered source ends with that file, and its host wrapper is
    /// `src/gpu/<domain>/<name>.rs` (the render shader's, `src/debug/render_frame.rs`).
    #[test]
    fn every_shader_validates_and_pairs_with_its_wrapper() {
        let shaders: Vec<KernelSource> = SHADERS.iter().copied().chain([RENDER]).collect();
        for k in &shaders {
            let module = naga::front::wgsl::parse_str(k.source)
                .unwrap_or_else(|e| panic!("{}: {}", k.name, e.emit_to_string(k.source)));
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
                .validate(&module)
                .unwrap_or_else(|e| panic!("{}: {}", k.name, e.emit_to_string(k.source)));
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = 0;
        for domain in std::fs::read_dir(root.join("shaders")).expect("shaders/ exists") {
            let domain = domain.expect("directory entry").path();
            let Some(d) = domain.file_name().and_then(|s| s.to_str()).map(str::to_owned) else { continue };
            if domain.extension().is_some_and(|e| e == "wgsl") {
                panic!("{}: kernels live in shaders/<domain>/", domain.display());
            }
            if d == "lib" || !domain.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&domain).expect("a domain folder") {
                let path = file.expect("directory entry").path();
                if path.extension().is_none_or(|e| e != "wgsl") {
                    continue;
                }
                let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
                let k = shaders
                    .iter()
                    .find(|k| k.domain == d && k.name == name)
                    .unwrap_or_else(|| panic!("{} is not a registered kernel", path.display()));
                let text = std::fs::read_to_string(&path).expect("a shader file");
                assert!(k.source.ends_with(&text), "{d}/{name}: its source is not composed from its own file");
                let wrapper = if d == "render" {
                    root.join("src/debug/render_frame.rs")
                } else {
                    root.join(format!("src/gpu/{d}/{name}.rs"))
                };
                assert!(wrapper.is_file(), "{d}/{name}: no host wrapper at {}", wrapper.display());
                files += 1;
            }
        }
        assert_eq!(files, shaders.len());
        let mut names: Vec<&str> = shaders.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), shaders.len(), "kernel names are unique across domains");
    }

    /// A kernel is compiled once per device: a stepper made again (bodies added or removed)
    /// takes the pipelines compiled before, or by `warm_up`; another source under the same
    /// name is another pipeline.
    #[test]
    fn kernels_are_compiled_once_per_device() {
        use std::sync::Arc;

        let Some(ctx) = crate::gpu::test_support::context() else { return };
        let ctx = Arc::new(ctx);
        ctx.warm_up();
        for k in SHADERS {
            assert!(ctx.pipeline(k.name, k.source) == ctx.pipeline(k.name, k.source), "{}", k.name);
        }
        assert!(ctx.pipeline(SHADERS[0].name, SHADERS[0].source) != ctx.pipeline(SHADERS[1].name, SHADERS[1].source));
        let (name, source) = (SHADERS[0].name, SHADERS[0].source);
        let other = format!("{source}\n// another variant\n");
        assert!(ctx.pipeline(name, source) != ctx.pipeline(name, &other));
    }
}
