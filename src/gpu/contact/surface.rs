//! The collision surface as the contact kernels see it ([`GpuSurface`], the shaders' `Surface`
//! in `shaders/lib/surface.wgsl`): where its tables sit in the packed buffers, and the constants
//! of surface contact that the CPU path derives per step.

use bytemuck::{Pod, Zeroable};

use crate::collision::ContactModel;
use crate::collision::ccd::CcdParams;
use crate::collision::surface_pairs::search_radius;
use crate::gpu::pack::IndexLayout;
use crate::solver::vbd::bounds::store_limit;
use crate::state::SimState;

/// The shaders' `Surface` uniform member.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuSurface {
    /// Word offsets in `index` and table lengths.
    pub vertex_body: u32,
    /// See `vertex_body`.
    pub surface_vertices: u32,
    /// See `vertex_body`.
    pub surface_vertex_count: u32,
    /// See `vertex_body`.
    pub surface_triangles: u32,
    /// See `vertex_body`.
    pub triangle_count: u32,
    /// See `vertex_body`.
    pub surface_edges: u32,
    /// See `vertex_body`.
    pub edge_count: u32,
    /// First body record in `records` (vec4s).
    pub bodies: u32,
    /// Contact offset δ \[m\].
    pub offset: f32,
    /// Minimum separation ξ \[m\].
    pub min_separation: f32,
    /// Smallest search radius of any body \[m\].
    pub radius_min: f32,
    /// Pairs closer than this are stored \[m\].
    pub store_limit: f32,
}

impl GpuSurface {
    /// The surface of `st` packed as `layout` with body records from vec4 `bodies` of
    /// `records`, for contact constants `model` and CCD settings `ccd`.
    pub fn new(st: &SimState, layout: &IndexLayout, bodies: u32, model: &ContactModel, ccd: &CcdParams<f32>) -> Self {
        let radius_min =
            (0..st.bodies.len() as u32).map(|b| search_radius(st, b, model.offset)).fold(f32::INFINITY, f32::min);
        Self {
            vertex_body: layout.vertex_body,
            surface_vertices: layout.surface_vertices,
            surface_vertex_count: st.surface_vertices.len() as u32,
            surface_triangles: layout.surface_triangles,
            triangle_count: st.surface_triangles.len() as u32,
            surface_edges: layout.surface_edges,
            edge_count: st.surface_edges.len() as u32,
            bodies,
            offset: model.offset,
            min_separation: ccd.min_separation,
            radius_min,
            store_limit: store_limit(model.offset),
        }
    }

    /// The same surface for other contact constants; `shortest_edge` is the smallest mean
    /// surface edge length of any body \[m\] (the search radius grows with both).
    pub fn with_model(&self, shortest_edge: f32, model: &ContactModel, ccd: &CcdParams<f32>) -> Self {
        Self {
            offset: model.offset,
            min_separation: ccd.min_separation,
            radius_min: (0.25 * shortest_edge).max(2.0 * model.offset),
            store_limit: store_limit(model.offset),
            ..*self
        }
    }
}
