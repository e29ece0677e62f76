//! Typed mesh errors: each says what is wrong and where (element, vertex, value).

use std::path::PathBuf;

/// What went wrong with a mesh.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeshError {
    /// The mesh has no vertices or no elements.
    #[error("mesh is empty: it has no {what}")]
    Empty {
        /// `"vertices"` or `"elements"`.
        what: &'static str,
    },
    /// A coordinate is NaN or infinite.
    #[error("vertex {vertex} has a non-finite {axis} coordinate ({value})")]
    NonFiniteVertex {
        /// Vertex index.
        vertex: u32,
        /// `'x'`, `'y'` or `'z'`.
        axis: char,
        /// The offending value.
        value: f64,
    },
    /// An element refers to a vertex that does not exist.
    #[error("{kind} {element} refers to vertex {index}, but the mesh has {vertex_count} vertices")]
    IndexOutOfRange {
        /// `"tet"` or `"triangle"`.
        kind: &'static str,
        /// Element index.
        element: u32,
        /// The out-of-range vertex index.
        index: u32,
        /// Number of vertices in the mesh.
        vertex_count: u32,
    },
    /// An element uses the same vertex twice.
    #[error("{kind} {element} uses vertex {index} more than once")]
    RepeatedIndex {
        /// `"tet"` or `"triangle"`.
        kind: &'static str,
        /// Element index.
        element: u32,
        /// The repeated vertex index.
        index: u32,
    },
    /// A tet with zero, negative or vanishing rest volume.
    #[error("tet {element} has non-positive or degenerate rest volume {volume:e} m³ (longest edge {longest_edge:e} m)")]
    DegenerateTet {
        /// Tet index.
        element: u32,
        /// Signed rest volume \[m³\].
        volume: f64,
        /// Longest edge \[m\], for scale.
        longest_edge: f64,
    },
    /// A triangle with (near) zero rest area.
    #[error("triangle {element} has degenerate rest area {area:e} m² (longest edge {longest_edge:e} m)")]
    DegenerateTriangle {
        /// Triangle index.
        element: u32,
        /// Rest area \[m²\].
        area: f64,
        /// Longest edge \[m\], for scale.
        longest_edge: f64,
    },
    /// A vertex no element uses: it would get no mass.
    #[error("vertex {vertex} is not used by any element (it would have zero mass)")]
    UnusedVertex {
        /// Vertex index.
        vertex: u32,
    },
    /// A face shared by more than two tets, or an edge by more than two triangles.
    #[error("{what} ({a}, {b}, {c}) is shared by {count} elements; the mesh is not a manifold")]
    NonManifold {
        /// `"face"` or `"edge"`.
        what: &'static str,
        /// First vertex.
        a: u32,
        /// Second vertex.
        b: u32,
        /// Third vertex (`u32::MAX` for an edge).
        c: u32,
        /// How many elements share it.
        count: u32,
    },
    /// A generator parameter out of range.
    #[error("generator parameter `{field}` = {value} is invalid: {reason}")]
    InvalidGenerator {
        /// Parameter name.
        field: &'static str,
        /// Its value, printed.
        value: String,
        /// Why it is rejected.
        reason: &'static str,
    },
    /// A surface to voxelize that has no thickness along an axis: a solid cannot be made of it.
    #[error(
        "the surface is flat along {axis} (extent {extent} m, its longest side {size} m): a solid needs thickness; simulate a sheet as cloth"
    )]
    Flat {
        /// `x`, `y` or `z`.
        axis: char,
        /// The surface's extent along it \[m\].
        extent: f32,
        /// The surface's longest side \[m\].
        size: f32,
    },
    /// A voxel cell so fine for the surface that the lattice would be too large.
    #[error(
        "voxel cell {cell} m is too fine for a surface of {} x {} x {} m: {cells:.3e} lattice cells, at most {max} (is the asset in other units than metres?)",
        extent[0], extent[1], extent[2]
    )]
    TooManyCells {
        /// The cell edge asked for \[m\].
        cell: f32,
        /// The surface's extent \[m\].
        extent: [f32; 3],
        /// Cells the lattice would have.
        cells: f64,
        /// The most a voxelization may span (2^22, about 160³: a finer cell is almost certainly
        /// a unit mistake).
        max: usize,
    },
    /// A mesh file could not be read.
    #[error("cannot read mesh file {path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// A mesh file is malformed.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}
