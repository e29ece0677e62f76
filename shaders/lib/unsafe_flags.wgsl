// How the safety check's kernels (step_check, step_soft) flag a body for step_guard's rollback
// (see shaders/check/step_guard.wgsl). Not a kernel: host wrappers prepend this file to kernels that
// bind `bad: array<atomic<u32>>` (two words per body, then the world's two).

// step_guard's own bits: a non-finite position, velocity or acceleration.
const NON_FINITE: u32 = 7u;

// Gives body b field `bits`, named by `vertex` (step_guard keeps the lowest flagged one), and
// the world word, so step_guard puts every body back for the host's redo; not for a body
// already non-finite, which is rolled back alone and not redone.
fn flag_unsafe(b: u32, vertex: u32, bits: u32) {
    atomicMax(&bad[2u * b], 0xffffffffu - vertex);
    let before = atomicOr(&bad[2u * b + 1u], bits);
    if (before & NON_FINITE) == 0u {
        atomicOr(&bad[arrayLength(&bad) - 1u], bits);
    }
}
