//! The GPU backend on wgpu: a device context, buffers packed straight from [`crate::state`]
//! with bytemuck ([`pack`]), one host wrapper per WGSL kernel, named as its shader
//! (`shaders/vbd_color.wgsl` ↔ [`kernels::vbd_color`]), and the step that drives them
//! ([`step::GpuStepper`], used by `World` with `Backend::Gpu`/`Auto`).
//!
//! Every kernel stays within WebGPU's default limits (at most 8 storage buffers per stage, no
//! f64, no float atomics), so the same code runs on Vulkan, Metal, DX12 and in the browser.
//! The CPU path is the oracle: each kernel has a parity test against the CPU code it mirrors,
//! and `tests/gpu_scenes.rs` runs whole scenes on both.
//!
//! The whole step of the default configuration runs here: tets and cloth, damping, pins and
//! kinematic paths, analytic obstacles, body–body and self contact ([`contact_program`]) and the
//! rigid correction of the initial guess ([`rigid_program`]). Scenes with more analytic
//! obstacles than a kernel's uniform holds step on the CPU, with the reason reported.

pub mod al_newton;
pub mod al_step;
pub mod al_surface;
pub mod buffers;
pub mod contact;
pub mod contact_program;
pub mod context;
pub mod fallback;
pub mod kernels;
pub mod obstacles;
pub mod pack;
pub mod readback;
pub mod rigid_program;
pub mod step;
pub mod submit;
pub mod surface;

pub use context::{GpuContext, GpuError, GpuOptions};

#[cfg(test)]
pub(crate) mod test_support {
    use super::{GpuContext, GpuOptions};

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
    /// Every kernel, composed with the `shaders/lib/` files it uses, parses and validates for
    /// the WebGPU baseline: no capabilities beyond the default (in particular no f64). Every
    /// `shaders/*.wgsl` file is a registered kernel or render shader.
    #[test]
    fn every_shader_validates_for_webgpu() {
        #[cfg(feature = "debug-render")]
        let render = crate::debug::SHADERS;
        // Without the feature the render shader is still a file in shaders/, and still valid.
        #[cfg(not(feature = "debug-render"))]
        let render: &[(&str, &str)] = &[("render_frame", include_str!("../../shaders/render_frame.wgsl"))];
        let shaders: Vec<(&str, &str)> = super::kernels::SHADERS.iter().chain(render).copied().collect();
        for &(name, source) in &shaders {
            let module =
                naga::front::wgsl::parse_str(source).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(source)));
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
                .validate(&module)
                .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(source)));
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).expect("shaders/ exists") {
            let path = entry.expect("directory entry").path();
            if path.extension().is_some_and(|e| e == "wgsl") {
                let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
                assert!(shaders.iter().any(|(name, _)| *name == stem), "{} is not a registered shader", path.display());
                files += 1;
            }
        }
        assert_eq!(files, shaders.len());
    }

    /// A kernel is compiled once per device: a stepper made again (bodies added or removed)
    /// takes the pipelines compiled before, or by `warm_up`; another source under the same
    /// name is another pipeline.
    #[test]
    fn kernels_are_compiled_once_per_device() {
        use std::sync::Arc;

        use super::kernels::SHADERS;
        let Some(ctx) = super::test_support::context() else { return };
        let ctx = Arc::new(ctx);
        ctx.warm_up();
        for (name, source) in SHADERS {
            assert!(ctx.pipeline(name, source) == ctx.pipeline(name, source), "{name}");
        }
        assert!(ctx.pipeline(SHADERS[0].0, SHADERS[0].1) != ctx.pipeline(SHADERS[1].0, SHADERS[1].1));
        let (name, source) = SHADERS[0];
        let other = format!("{source}\n// another variant\n");
        assert!(ctx.pipeline(name, source) != ctx.pipeline(name, &other));
    }
}
