//! # Pliant's C ABI
//!
//! Soft bodies and cloth for C, C++ and C# engines (Unity, Unreal, Godot, your own): the
//! header is `include/pliant.h`, generated from this crate by cbindgen; the library is
//! `libpliant_capi.so` / `.dylib` / `pliant_capi.dll`, or the static `libpliant_capi.a`.
//!
//! ```c
//! PliantWorld world;
//! pliant_world_create(NULL, &world);                  /* the default step: 1/60 s, 20 sweeps */
//! pliant_world_add_ground(world, 0.0f, 0.5f, NULL);
//! PliantSolidDesc jelly;
//! pliant_solid_desc_default(&jelly);
//! jelly.translation[1] = 0.6f;
//! float size[3] = {0.2f, 0.2f, 0.2f};
//! uint32_t cells[3] = {10, 10, 10};
//! PliantBody cube;
//! if (pliant_world_add_box(world, &jelly, size, cells, &cube) != PLIANT_STATUS_OK)
//!     fprintf(stderr, "%s\n", pliant_last_error_message());
//! for (int i = 0; i < 300; i++) pliant_world_step(world, NULL);
//! pliant_world_destroy(world);
//! ```
//!
//! ## The contract
//! - Every function returns a `PliantStatus`. On anything but `PLIANT_STATUS_OK`,
//!   `pliant_last_error_message()` names the function, the argument and the value that was
//!   wrong (thread-local; valid until the next failing call on the thread).
//! - Worlds and bodies are ids (`PliantWorld`, `PliantBody`), not pointers: a destroyed world
//!   or a removed body is reported as `PLIANT_STATUS_INVALID_HANDLE`, never dereferenced.
//! - Pointers must be null or point to what the function documents (an array pointer to as
//!   many elements as its length says). Null where something is required is
//!   `PLIANT_STATUS_NULL_POINTER`. NaN, infinities, negative stiffness or density, unknown enum
//!   constants and bodies over `2^20` vertices or `2^23` elements are `PLIANT_STATUS_INVALID_ARGUMENT` or the
//!   status of the part that rejected them (mesh, material, body, obstacle, config).
//! - No panic crosses into C: a panic inside Pliant is caught, reported as
//!   `PLIANT_STATUS_PANIC`; a world the call held is poisoned (`PLIANT_STATUS_POISONED`
//!   from then on; destroy it). This needs the library built with `panic = "unwind"` (the
//!   default).
//! - Calls on one world from several threads take turns; different worlds step in parallel.
//! - A running world never hands back NaN: a non-finite state is rolled back and reported
//!   (`nan_detected`, a `PLIANT_EVENT_NON_FINITE_STATE` event).

// Every `unsafe extern "C"` function has one contract, stated above: its pointer arguments are
// null or valid for what its doc says. Repeating it in a `# Safety` section on each adds
// nothing.
#![allow(clippy::missing_safety_doc)]
// `!(x > 0.0)` is deliberate, as in `pliant`: unlike `x <= 0.0` it also rejects NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod bodies;
mod input;
mod obstacles;
mod read;
mod registry;
mod status;
mod types;
mod world;

pub use bodies::*;
pub use obstacles::*;
pub use read::*;
pub use registry::{PliantBody, PliantWorld};
pub use status::*;
pub use types::*;
pub use world::*;

/// Pliant's version, `"major.minor.patch"`, static and NUL-terminated.
#[unsafe(no_mangle)]
pub extern "C" fn pliant_version() -> *const std::ffi::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
