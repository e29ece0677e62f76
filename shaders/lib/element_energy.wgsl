// An element's elastic energy at given positions of its vertices (src/material/: tets' stable
// neo-Hookean or StVK, membrane triangles' StVK, hinges' dihedral bending), for kernels that
// sum or compare energies: elements are numbered tets, then triangles, then hinges. Not a
// kernel: host wrappers prepend this file after lib/step.wgsl and lib/elements.wgsl; it reads
// `tets` and `records` (src/gpu/pack.rs pack_records).

// Element counts, and where the triangles and the hinges start in `records` (in vec4s).
struct ElementTables {
    tets: u32,
    tris: u32,
    tri_records: u32,
    hinge_records: u32,
}

// Element e's vertices (a triangle's fourth repeats its first).
fn element_vertices(l: ElementTables, e: u32) -> vec4<u32> {
    if e < l.tets {
        return tets[e].vertices;
    }
    if e < l.tets + l.tris {
        let v = bitcast<vec4<u32>>(records[l.tri_records + 3u * (e - l.tets)]);
        return vec4<u32>(v.xyz, v.x);
    }
    return bitcast<vec4<u32>>(records[l.hinge_records + 2u * (e - l.tets - l.tris)]);
}

// Element e's energy [J] with its vertices (element_vertices' order) at x.
fn element_energy_at(l: ElementTables, e: u32, x: array<vec3<f32>, 4>) -> f32 {
    if e < l.tets {
        let t = tets[e];
        let f = mat3x3<f32>(x[1] - x[0], x[2] - x[0], x[3] - x[0]) * t.dm_inv;
        let m = records[t.material];
        return t.volume * tet_energy_density(bitcast<u32>(m.x) == MODEL_STABLE_NEO_HOOKEAN, f, m.y, m.z);
    }
    if e < l.tets + l.tris {
        let base = l.tri_records + 3u * (e - l.tets);
        let dm = records[base + 1u];
        let rest = records[base + 2u];
        let m = records[bitcast<u32>(rest.y)];
        let e1 = x[1] - x[0];
        let e2 = x[2] - x[0];
        return rest.x * membrane_energy_density(e1 * dm.x + e2 * dm.z, e1 * dm.y + e2 * dm.w, m.y, m.z);
    }
    let hinge = records[l.hinge_records + 2u * (e - l.tets - l.tris) + 1u];
    let d = hinge_angle_offset(x[0], x[1], x[2], x[3], hinge.x);
    return 0.5 * hinge.y * d * d;
}
