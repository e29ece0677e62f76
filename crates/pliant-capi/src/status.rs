//! Status codes, the thread's last error message, and the guard every entry point runs in: a
//! panic inside Pliant becomes `PLIANT_STATUS_PANIC` and a message, never an unwind into C.

use std::cell::RefCell;
use std::ffi::{CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

use pliant::{BodyError, PliantError};

/// What a call did. Every entry point returns one; on anything but `PLIANT_STATUS_OK`,
/// `pliant_last_error_message()` says what was wrong and where.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PliantStatus {
    /// The call did what it says.
    Ok = 0,
    /// A required pointer was null (or a null array was given a non-zero length).
    NullPointer = 1,
    /// A value is out of its range: NaN or infinite, negative where it must not be, an unknown
    /// enum constant, a resolution too large to allocate.
    InvalidArgument = 2,
    /// The world or body handle names nothing: never created, destroyed, or removed.
    InvalidHandle = 3,
    /// The caller's buffer is smaller than the data; the count out-parameter holds the size
    /// needed.
    BufferTooSmall = 4,
    /// A mesh was rejected (degenerate or inverted element, bad index, unused vertex, ...).
    Mesh = 5,
    /// A material was rejected (stiffness not positive and finite, Poisson ratio out of range).
    Material = 6,
    /// A body parameter or pin was rejected (density, friction, damping, pin vertex, ...).
    Body = 7,
    /// An obstacle was rejected (non-finite or non-positive size, bad normal, negative friction).
    Obstacle = 8,
    /// The step configuration was rejected, or its backend could not be opened.
    Config = 9,
    /// No pin with that index, or one that is not scripted where a scripted pin is needed.
    NoSuchPin = 10,
    /// Pliant panicked inside the call (a bug: please report the message). A panic while the
    /// call held a world poisons that world: every later call on it returns
    /// `PLIANT_STATUS_POISONED`.
    Panic = 11,
    /// An earlier call panicked inside this world; destroy it.
    Poisoned = 12,
}

/// A failed call: its status and what to tell the caller.
#[derive(Debug)]
pub(crate) struct Failure {
    pub status: PliantStatus,
    pub message: String,
}

impl Failure {
    pub fn new(status: PliantStatus, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(PliantStatus::InvalidArgument, message)
    }

    pub fn null(what: &str) -> Self {
        Self::new(PliantStatus::NullPointer, format!("`{what}` is a null pointer"))
    }
}

impl From<PliantError> for Failure {
    fn from(e: PliantError) -> Self {
        let status = match &e {
            PliantError::Mesh(_) => PliantStatus::Mesh,
            PliantError::Material(_) | PliantError::Body(BodyError::Material { .. }) => PliantStatus::Material,
            PliantError::Body(BodyError::Mesh { .. }) => PliantStatus::Mesh,
            PliantError::Body(_) => PliantStatus::Body,
            PliantError::Obstacle(_) => PliantStatus::Obstacle,
            PliantError::Config(_) => PliantStatus::Config,
            PliantError::InvalidHandle(_) => PliantStatus::InvalidHandle,
            PliantError::NoSuchPin { .. } => PliantStatus::NoSuchPin,
            // A length mismatch, a non-finite input, a vertex out of range, ...
            _ => PliantStatus::InvalidArgument,
        };
        Self::new(status, e.to_string())
    }
}

macro_rules! failure_from {
    ($($t:ty),*) => {$(
        impl From<$t> for Failure {
            fn from(e: $t) -> Self {
                PliantError::from(e).into()
            }
        }
    )*};
}
failure_from!(pliant::MeshError, pliant::MaterialError, BodyError, pliant::ObstacleError, pliant::ConfigError);

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    // A message never holds a NUL of its own, but a name the caller passed in could.
    let text = CString::new(message.replace('\0', "\u{FFFD}")).unwrap_or_default();
    // `try_with`: a call from a thread-exit destructor, after this thread's storage is gone,
    // loses its message instead of panicking across the boundary.
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = text);
}

/// Runs `body` as entry point `name`: its error, or a panic caught on the way out, becomes a
/// status and this thread's last error message.
pub(crate) fn guard(name: &str, body: impl FnOnce() -> Result<(), Failure>) -> PliantStatus {
    let failure = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return PliantStatus::Ok,
        Ok(Err(f)) => f,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string());
            Failure::new(PliantStatus::Panic, format!("Pliant panicked: {what}"))
        }
    };
    set_last_error(&format!("{name}: {}", failure.message));
    failure.status
}

/// The message of the last call on this thread that did not return `PLIANT_STATUS_OK`
/// (`"function: what was wrong"`), or an empty string. NUL-terminated UTF-8, owned by the
/// library and valid until the next failing call on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn pliant_last_error_message() -> *const c_char {
    LAST_ERROR.try_with(|e| e.borrow().as_ptr()).unwrap_or(c"".as_ptr())
}

/// A short name of a status code (`"PLIANT_STATUS_INVALID_HANDLE"`, ...; `"unknown status"` for
/// a value that is none), static and NUL-terminated. Takes an `int` rather than the enum so
/// that any value a caller holds is safe to pass.
#[unsafe(no_mangle)]
pub extern "C" fn pliant_status_name(status: i32) -> *const c_char {
    let name: &'static [u8] = match status {
        0 => b"PLIANT_STATUS_OK\0",
        1 => b"PLIANT_STATUS_NULL_POINTER\0",
        2 => b"PLIANT_STATUS_INVALID_ARGUMENT\0",
        3 => b"PLIANT_STATUS_INVALID_HANDLE\0",
        4 => b"PLIANT_STATUS_BUFFER_TOO_SMALL\0",
        5 => b"PLIANT_STATUS_MESH\0",
        6 => b"PLIANT_STATUS_MATERIAL\0",
        7 => b"PLIANT_STATUS_BODY\0",
        8 => b"PLIANT_STATUS_OBSTACLE\0",
        9 => b"PLIANT_STATUS_CONFIG\0",
        10 => b"PLIANT_STATUS_NO_SUCH_PIN\0",
        11 => b"PLIANT_STATUS_PANIC\0",
        12 => b"PLIANT_STATUS_POISONED\0",
        _ => b"unknown status\0",
    };
    name.as_ptr().cast()
}
