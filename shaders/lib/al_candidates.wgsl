// The surface pairs al_surface hands al_surface_set: the words of their `candidates` buffer
// (src/gpu/lib/al_surface.rs CandidateLayout), a header (candidates appended, candidates
// that did not fit, new pairs that found no free slot) and then the candidates, kind and four
// vertices each. Not a kernel: host wrappers prepend this file to kernels that bind
// `candidates` as atomic words.

const C_COUNT: u32 = 0u;
const C_DROPPED: u32 = 1u;
const C_SLOTS_DROPPED: u32 = 2u;
const C_FIRST: u32 = 4u;
const CANDIDATE_WORDS: u32 = 5u;

struct Key {
    kind: u32,
    v: array<u32, 4>,
}

fn candidate(i: u32) -> Key {
    let base = C_FIRST + i * CANDIDATE_WORDS;
    var k: Key;
    k.kind = atomicLoad(&candidates[base]);
    for (var j = 0u; j < 4u; j++) {
        k.v[j] = atomicLoad(&candidates[base + 1u + j]);
    }
    return k;
}
