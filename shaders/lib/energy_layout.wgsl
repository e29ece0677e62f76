// The `energy` buffer of the safety check's energy test (src/gpu/lib/step_energy.rs): per
// body ENERGY_WORDS u32 words (f32 bits unless said), then one word per element (its energy,
// written by step_energy). Not a kernel: step_energy and step_soft prepend this file.

const ENERGY_WORDS: u32 = 8u;
// Kinetic + elastic energy at the substep's start [J].
const E_BEFORE: u32 = 0u;
// Gravitational + obstacle-contact energy at the start [J].
const P_BEFORE: u32 = 1u;
const E_AFTER: u32 = 2u;
const P_AFTER: u32 = 3u;
// Lowest and highest y of the body's vertices over the substep [m].
const Y_LOW: u32 = 4u;
const Y_HIGH: u32 = 5u;
// u32, set by the host per frame: a pin of the body moved (its island is not tested).
const DRIVEN: u32 = 6u;
// u32: the body's island label (step_soft's union-find).
const LABEL: u32 = 7u;
