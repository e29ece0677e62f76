//! Host side of `shaders/render/render_frame.wgsl`: a headless render pass (4× multisampled, depth
//! tested) into an sRGB texture, copied back and returned as a [`Picture`].

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};
use glam::Vec3;
use wgpu::util::DeviceExt;

use crate::debug::geometry::{GroundVertex, MeshVertex, grid_spacing, ground_vertices, mesh_vertices};
use crate::debug::{Camera, DrawScene, Picture, RenderError};
use crate::gpu::{GpuContext, GpuOptions};

const COLOR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
const SAMPLES: u32 = 4;
/// Background (sRGB-encoded on write): a pale blue-grey.
const BACKGROUND: wgpu::Color = wgpu::Color { r: 0.62, g: 0.68, b: 0.76, a: 1.0 };

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct ViewUniform {
    view_proj: [[f32; 4]; 4],
    eye: [f32; 4],
    light: [f32; 4],
    grid: [f32; 4],
}

/// Draws [`DrawScene`]s into pictures on one device; pipelines are made once.
pub struct Renderer {
    ctx: Arc<GpuContext>,
    layout: wgpu::BindGroupLayout,
    mesh: wgpu::RenderPipeline,
    ground: wgpu::RenderPipeline,
    /// Contact markers, drawn over everything: contacts are mostly underneath bodies.
    markers: wgpu::RenderPipeline,
}

impl Renderer {
    /// A renderer on a new device (`options` picks the adapter).
    pub fn new(options: &GpuOptions) -> Result<Self, RenderError> {
        let ctx = GpuContext::new(options).map_err(|e| RenderError::NoGpu(e.to_string()))?;
        Ok(Self::with_context(Arc::new(ctx)))
    }

    /// A renderer on an existing device (a world's, so no second device is opened).
    pub fn with_context(ctx: Arc<GpuContext>) -> Self {
        let device = &ctx.device;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("render_frame"),
            source: wgpu::ShaderSource::Wgsl(crate::gpu::kernel::RENDER.source.into()),
        });
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("render_frame view"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            }],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("render_frame"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = |label: &str,
                        (vs, fs): (&str, &str),
                        attributes: &[wgpu::VertexAttribute],
                        stride: u64,
                        depth_compare: wgpu::CompareFunction| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(&pipeline_layout),
                vertex: wgpu::VertexState {
                    module: &module,
                    entry_point: Some(vs),
                    compilation_options: Default::default(),
                    buffers: &[Some(wgpu::VertexBufferLayout {
                        array_stride: stride,
                        step_mode: wgpu::VertexStepMode::Vertex,
                        attributes,
                    })],
                },
                primitive: wgpu::PrimitiveState { cull_mode: None, ..Default::default() },
                depth_stencil: Some(wgpu::DepthStencilState {
                    format: DEPTH_FORMAT,
                    depth_write_enabled: Some(true),
                    depth_compare: Some(depth_compare),
                    stencil: Default::default(),
                    bias: Default::default(),
                }),
                multisample: wgpu::MultisampleState { count: SAMPLES, ..Default::default() },
                fragment: Some(wgpu::FragmentState {
                    module: &module,
                    entry_point: Some(fs),
                    compilation_options: Default::default(),
                    targets: &[Some(wgpu::ColorTargetState {
                        format: COLOR_FORMAT,
                        blend: None,
                        write_mask: wgpu::ColorWrites::ALL,
                    })],
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let mesh_attributes = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Float32x3];
        let mesh_stride = std::mem::size_of::<MeshVertex>() as u64;
        let mesh = pipeline(
            "render_frame mesh",
            ("vs_mesh", "fs_mesh"),
            &mesh_attributes,
            mesh_stride,
            wgpu::CompareFunction::Less,
        );
        let markers = pipeline(
            "render_frame markers",
            ("vs_mesh", "fs_mesh"),
            &mesh_attributes,
            mesh_stride,
            wgpu::CompareFunction::Always,
        );
        let ground = pipeline(
            "render_frame ground",
            ("vs_ground", "fs_ground"),
            &wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x2],
            std::mem::size_of::<GroundVertex>() as u64,
            wgpu::CompareFunction::Less,
        );
        Self { ctx, layout, mesh, ground, markers }
    }

    /// The device's name (for messages).
    pub fn adapter_name(&self) -> &str {
        &self.ctx.adapter_info.name
    }

    /// Draws `scene` from `camera` into a `width` × `height` picture; contact points are drawn
    /// when `contacts` is set. Blocks until the picture is back (a tool, not a game loop).
    pub fn render(
        &self,
        scene: &DrawScene,
        camera: &Camera,
        width: u32,
        height: u32,
        contacts: bool,
    ) -> Result<Picture, RenderError> {
        let max = self.ctx.device.limits().max_texture_dimension_2d;
        if width == 0 || height == 0 || width > max || height > max {
            return Err(RenderError::Size { width, height, reason: format!("each side must be in 1..={max}") });
        }
        if scene.bounds().is_none() {
            return Err(RenderError::Empty);
        }
        let (lo, hi) = scene.frame_bounds.or_else(|| scene.view_bounds()).ok_or(RenderError::Empty)?;
        let radius = (0.5 * (hi - lo).length()).max(1e-3);
        let center = 0.5 * (lo + hi);
        let distance = (camera.eye - center).length();
        let aspect = width as f32 / height as f32;
        let near = (distance - 4.0 * radius).max(0.002 * distance).max(1e-4);
        let far = distance + 20.0 * radius;
        let light = Vec3::new(0.4, 1.0, 0.55).normalize();
        let uniform = ViewUniform {
            view_proj: camera.view_proj(aspect, near, far).to_cols_array_2d(),
            eye: camera.eye.extend(1.0).to_array(),
            light: light.extend(0.0).to_array(),
            grid: [grid_spacing(radius), 8.0 * radius + distance, 0.0, 0.0],
        };
        let marker = 0.012 * radius;
        let meshes = mesh_vertices(scene, false, marker);
        let markers = if contacts {
            mesh_vertices(&DrawScene { contacts: scene.contacts.clone(), ..DrawScene::default() }, true, marker)
        } else {
            Vec::new()
        };
        let grounds = ground_vertices(scene, center, 8.0 * radius, lo.y);
        let targets = self.targets(width, height);
        let mut encoder =
            self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("render_frame") });
        let vertices: [(&[u8], usize); 3] = [
            (bytemuck::cast_slice(&grounds), grounds.len()),
            (bytemuck::cast_slice(&meshes), meshes.len()),
            (bytemuck::cast_slice(&markers), markers.len()),
        ];
        self.draw(&mut encoder, &targets, &uniform, vertices);
        self.read_back(encoder, &targets, width, height)
    }

    /// The multisampled colour and depth targets of a `width` × `height` picture, its resolved
    /// colour and a staging buffer to read it back through.
    fn targets(&self, width: u32, height: u32) -> Targets {
        let device = &self.ctx.device;
        let size = wgpu::Extent3d { width, height, depth_or_array_layers: 1 };
        let texture = |label: &str, format, samples, usage| {
            device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size,
                mip_level_count: 1,
                sample_count: samples,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage,
                view_formats: &[],
            })
        };
        let msaa = texture("render_frame msaa", COLOR_FORMAT, SAMPLES, wgpu::TextureUsages::RENDER_ATTACHMENT);
        let resolved = texture(
            "render_frame picture",
            COLOR_FORMAT,
            1,
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        );
        let depth = texture("render_frame depth", DEPTH_FORMAT, SAMPLES, wgpu::TextureUsages::RENDER_ATTACHMENT);
        // Rows of a texture copy are padded to 256 bytes.
        let padded = (4 * width).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("render_frame readback"),
            size: padded as u64 * height as u64,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        });
        Targets {
            msaa_view: msaa.create_view(&Default::default()),
            resolved_view: resolved.create_view(&Default::default()),
            depth_view: depth.create_view(&Default::default()),
            resolved,
            staging,
            padded,
            size,
        }
    }

    /// Records the render pass: the ground grids, the meshes, then the contact markers
    /// (`vertices` in that order, as bytes and a vertex count each).
    fn draw(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        targets: &Targets,
        uniform: &ViewUniform,
        vertices: [(&[u8], usize); 3],
    ) {
        let device = &self.ctx.device;
        let buffer = |label: &str, bytes: &[u8], usage: wgpu::BufferUsages| {
            // A zero-sized vertex buffer is not allowed; an unused 16 bytes is.
            let bytes = if bytes.is_empty() { &[0u8; 16][..] } else { bytes };
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents: bytes, usage })
        };
        let view_buf = buffer("render_frame view", bytemuck::bytes_of(uniform), wgpu::BufferUsages::UNIFORM);
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("render_frame view"),
            layout: &self.layout,
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: view_buf.as_entire_binding() }],
        });
        let labels = ["render_frame grounds", "render_frame meshes", "render_frame markers"];
        let buffers: Vec<wgpu::Buffer> = labels
            .into_iter()
            .zip(vertices)
            .map(|(label, (bytes, _))| buffer(label, bytes, wgpu::BufferUsages::VERTEX))
            .collect();
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("render_frame"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &targets.msaa_view,
                depth_slice: None,
                resolve_target: Some(&targets.resolved_view),
                ops: wgpu::Operations { load: wgpu::LoadOp::Clear(BACKGROUND), store: wgpu::StoreOp::Discard },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &targets.depth_view,
                depth_ops: Some(wgpu::Operations { load: wgpu::LoadOp::Clear(1.0), store: wgpu::StoreOp::Discard }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_bind_group(0, &bind, &[]);
        // The grounds are always drawn (an empty draw of them draws nothing); meshes and
        // markers only when there are any.
        for (k, pipeline) in [&self.ground, &self.mesh, &self.markers].into_iter().enumerate() {
            let count = vertices[k].1;
            if k > 0 && count == 0 {
                continue;
            }
            pass.set_pipeline(pipeline);
            pass.set_vertex_buffer(0, buffers[k].slice(..));
            pass.draw(0..count as u32, 0..1);
        }
    }

    /// Submits `encoder` with the copy of the picture into the staging buffer, waits for it (a
    /// tool's call, never a step's) and reads the picture back.
    fn read_back(
        &self,
        mut encoder: wgpu::CommandEncoder,
        targets: &Targets,
        width: u32,
        height: u32,
    ) -> Result<Picture, RenderError> {
        let (staging, padded) = (&targets.staging, targets.padded);
        encoder.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture: &targets.resolved,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::TexelCopyBufferInfo {
                buffer: staging,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(padded),
                    rows_per_image: Some(height),
                },
            },
            targets.size,
        );
        self.ctx.queue.submit([encoder.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        let gpu = |e: &dyn std::fmt::Display| RenderError::Gpu(e.to_string());
        self.ctx.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| gpu(&e))?;
        rx.recv().map_err(|e| gpu(&e))?.map_err(|e| gpu(&e))?;
        if let Some(e) = self.ctx.error() {
            return Err(RenderError::Gpu(e));
        }
        let row = 4 * width;
        let mapped = staging.slice(..).get_mapped_range().map_err(|e| gpu(&e))?;
        let mut rgba = Vec::with_capacity((row * height) as usize);
        for y in 0..height as usize {
            let start = y * padded as usize;
            rgba.extend_from_slice(&mapped[start..start + row as usize]);
        }
        drop(mapped);
        staging.unmap();
        Ok(Picture { width, height, rgba })
    }
}
/// Where a picture is drawn and read back from.
struct Targets {
    msaa_view: wgpu::TextureView,
    resolved: wgpu::Texture,
    resolved_view: wgpu::TextureView,
    depth_view: wgpu::TextureView,
    staging: wgpu::Buffer,
    /// Bytes per row of the staging buffer (padded to the copy alignment).
    padded: u32,
    size: wgpu::Extent3d,
}
