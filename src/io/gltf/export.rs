//! Writing GLB: meshes at rest ([`static_glb`]) and runs as animations ([`AnimatedGlb`]).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use glam::{Quat, Vec3};
use gltf::json::{self, validation::Checked::Valid, validation::USize64};

use super::GltfError;
use crate::mesh::{RenderMesh, palette_color, smooth_normals};

/// The JSON document and binary chunk of a GLB under construction.
#[derive(Default)]
struct Builder {
    root: json::Root,
    bin: Vec<u8>,
}

impl Builder {
    fn view(&mut self, bytes: &[u8], target: Option<json::buffer::Target>) -> json::Index<json::buffer::View> {
        while !self.bin.len().is_multiple_of(4) {
            self.bin.push(0);
        }
        let offset = self.bin.len();
        self.bin.extend_from_slice(bytes);
        self.root.push(json::buffer::View {
            buffer: json::Index::new(0),
            byte_length: USize64::from(bytes.len()),
            byte_offset: Some(USize64::from(offset)),
            byte_stride: None,
            name: None,
            target: target.map(Valid),
            extensions: None,
            extras: Default::default(),
        })
    }

    fn accessor(
        &mut self,
        bytes: &[u8],
        count: usize,
        kind: (json::accessor::ComponentType, json::accessor::Type),
        bounds: Option<(Vec<f32>, Vec<f32>)>,
        target: Option<json::buffer::Target>,
    ) -> json::Index<json::Accessor> {
        let view = self.view(bytes, target);
        let (min, max) =
            bounds.map_or((None, None), |(lo, hi)| (Some(json::Value::from(lo)), Some(json::Value::from(hi))));
        self.root.push(json::Accessor {
            buffer_view: Some(view),
            byte_offset: None,
            count: USize64::from(count),
            component_type: Valid(json::accessor::GenericComponentType(kind.0)),
            extensions: None,
            extras: Default::default(),
            type_: Valid(kind.1),
            min,
            max,
            name: None,
            normalized: false,
            sparse: None,
        })
    }

    /// Positions (with the bounds glTF requires) or normals.
    fn vec3s(&mut self, v: &[Vec3], bounded: bool) -> json::Index<json::Accessor> {
        let bounds = bounded.then(|| {
            let (lo, hi) =
                v.iter().fold((Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)), |(a, b), p| (a.min(*p), b.max(*p)));
            (lo.to_array().to_vec(), hi.to_array().to_vec())
        });
        let kind = (json::accessor::ComponentType::F32, json::accessor::Type::Vec3);
        self.accessor(bytemuck::cast_slice(v), v.len(), kind, bounds, Some(json::buffer::Target::ArrayBuffer))
    }

    fn indices(&mut self, t: &[[u32; 3]]) -> json::Index<json::Accessor> {
        let kind = (json::accessor::ComponentType::U32, json::accessor::Type::Scalar);
        self.accessor(bytemuck::cast_slice(t), 3 * t.len(), kind, None, Some(json::buffer::Target::ElementArrayBuffer))
    }

    fn scalars(&mut self, s: &[f32]) -> json::Index<json::Accessor> {
        let lo = s.iter().copied().fold(f32::MAX, f32::min);
        let hi = s.iter().copied().fold(f32::MIN, f32::max);
        let kind = (json::accessor::ComponentType::F32, json::accessor::Type::Scalar);
        self.accessor(bytemuck::cast_slice(s), s.len(), kind, Some((vec![lo], vec![hi])), None)
    }

    fn material(&mut self, name: &str, rgb: [f32; 3]) -> json::Index<json::Material> {
        let mut m = json::Material { name: Some(name.to_owned()), double_sided: true, ..Default::default() };
        m.pbr_metallic_roughness.base_color_factor = json::material::PbrBaseColorFactor([rgb[0], rgb[1], rgb[2], 1.0]);
        m.pbr_metallic_roughness.metallic_factor = json::material::StrengthFactor(0.0);
        m.pbr_metallic_roughness.roughness_factor = json::material::StrengthFactor(0.6);
        self.root.push(m)
    }

    fn primitive(
        &mut self,
        positions: &[Vec3],
        normals: &[Vec3],
        indices: json::Index<json::Accessor>,
        material: json::Index<json::Material>,
    ) -> json::mesh::Primitive {
        let mut attributes = BTreeMap::new();
        attributes.insert(Valid(json::mesh::Semantic::Positions), self.vec3s(positions, true));
        attributes.insert(Valid(json::mesh::Semantic::Normals), self.vec3s(normals, false));
        json::mesh::Primitive {
            attributes,
            extensions: None,
            extras: Default::default(),
            indices: Some(indices),
            material: Some(material),
            mode: Valid(json::mesh::Mode::Triangles),
            targets: None,
        }
    }

    fn mesh(&mut self, name: &str, primitives: Vec<json::mesh::Primitive>) -> json::Index<json::Mesh> {
        self.root.push(json::Mesh {
            extensions: None,
            extras: Default::default(),
            name: Some(name.to_owned()),
            primitives,
            weights: None,
        })
    }

    fn finish(mut self, scene_nodes: Vec<json::Index<json::Node>>) -> Result<Vec<u8>, GltfError> {
        while !self.bin.len().is_multiple_of(4) {
            self.bin.push(0);
        }
        self.root.push(json::Buffer {
            byte_length: USize64::from(self.bin.len()),
            name: None,
            uri: None,
            extensions: None,
            extras: Default::default(),
        });
        let scene = self.root.push(json::Scene {
            extensions: None,
            extras: Default::default(),
            name: Some("pliant".into()),
            nodes: scene_nodes,
        });
        self.root.scene = Some(scene);
        self.root.asset.generator = Some(format!("pliant {}", env!("CARGO_PKG_VERSION")));
        let json = self.root.to_vec().map_err(|e| GltfError::Export { message: e.to_string() })?;
        let glb = gltf::binary::Glb {
            header: gltf::binary::Header { magic: *b"glTF", version: 2, length: 0 }, // computed on write
            json: Cow::Owned(json),
            bin: Some(Cow::Owned(self.bin)),
        };
        glb.to_vec().map_err(|e| GltfError::Export { message: e.to_string() })
    }
}

/// A mesh at rest with its node transform, for [`static_glb`].
#[derive(Clone, Debug)]
pub struct StaticNode {
    /// The mesh (its name names the node; missing normals are made smooth).
    pub mesh: RenderMesh,
    /// Node translation \[m\].
    pub translation: Vec3,
    /// Node rotation.
    pub rotation: Quat,
    /// Node scale.
    pub scale: Vec3,
}

/// A GLB holding `nodes`, each with its own mesh and transform (under one root node), as an
/// asset from a modelling tool would.
pub fn static_glb(nodes: &[StaticNode]) -> Result<Vec<u8>, GltfError> {
    if nodes.is_empty() {
        return Err(GltfError::Export { message: "no nodes to write".into() });
    }
    let mut b = Builder::default();
    let mut children = Vec::new();
    for (k, n) in nodes.iter().enumerate() {
        let m = &n.mesh;
        let normals = m.normals_or_smooth();
        let indices = b.indices(&m.triangles);
        let material = b.material(&m.name, palette_color(k));
        let prim = b.primitive(&m.positions, &normals, indices, material);
        let mesh = b.mesh(&m.name, vec![prim]);
        children.push(b.root.push(json::Node {
            mesh: Some(mesh),
            name: Some(m.name.clone()),
            translation: Some(n.translation.to_array()),
            rotation: Some(json::scene::UnitQuaternion(n.rotation.to_array())),
            scale: Some(n.scale.to_array()),
            ..Default::default()
        }));
    }
    let root = b.root.push(json::Node { name: Some("root".into()), children: Some(children), ..Default::default() });
    b.finish(vec![root])
}

/// A run recorded frame by frame, written as an animated GLB.
///
/// Each recorded frame is a node holding one primitive per mesh (the meshes' triangles are
/// written once and shared); a step-interpolated scale track shows each frame's node from its
/// time until the next frame's and hides it otherwise. Positions are in metres, y up, as glTF
/// expects.
#[derive(Clone, Debug, Default)]
pub struct AnimatedGlb {
    meshes: Vec<(String, Vec<[u32; 3]>)>,
    frames: Vec<Frame>,
    /// Bytes the binary chunk will hold so far (indices, positions, normals, keys).
    bytes: u64,
}

/// One recorded frame: its time and each mesh's positions and normals.
#[derive(Clone, Debug)]
struct Frame {
    time: f32,
    positions: Vec<Vec<Vec3>>,
    normals: Vec<Option<Vec<Vec3>>>,
}

/// The most bytes a GLB's binary chunk may hold: its header counts the file's length in 32
/// bits. A margin is left for the JSON chunk.
const GLB_MAX_BIN: u64 = u32::MAX as u64 - (64 << 20);

impl AnimatedGlb {
    /// An empty recording.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a mesh (a body's surface or render mesh) whose triangles stay fixed over the run;
    /// returns its slot in [`AnimatedGlb::push_frame`]'s list. Meshes are added before the
    /// first frame.
    pub fn add_mesh(&mut self, name: &str, triangles: Vec<[u32; 3]>) -> Result<usize, GltfError> {
        if !self.frames.is_empty() {
            return Err(GltfError::Export { message: format!("mesh `{name}` added after the first frame") });
        }
        self.bytes += 12 * triangles.len() as u64;
        self.meshes.push((name.to_owned(), triangles));
        Ok(self.meshes.len() - 1)
    }

    /// Records a frame at `time` \[s\]: one position list per mesh, in the order added. Each
    /// list must cover the vertices the mesh's triangles use; times must increase. Normals are
    /// made smooth from the triangles.
    pub fn push_frame(&mut self, time: f64, positions: Vec<Vec<Vec3>>) -> Result<(), GltfError> {
        let normals = vec![None; positions.len()];
        self.push_frame_with_normals(time, positions, normals)
    }

    /// As [`AnimatedGlb::push_frame`], with each mesh's unit normals where it has them (one
    /// per position; `None`: smooth ones). A recording that would pass the 4 GiB a GLB can
    /// hold is refused at the frame that would pass it, naming how far it got.
    pub fn push_frame_with_normals(
        &mut self,
        time: f64,
        positions: Vec<Vec<Vec3>>,
        normals: Vec<Option<Vec<Vec3>>>,
    ) -> Result<(), GltfError> {
        if normals.len() != positions.len() {
            return Err(GltfError::Export {
                message: format!("frame at t = {time}: {} normal lists for {} meshes", normals.len(), positions.len()),
            });
        }
        for ((name, _), (n, p)) in self.meshes.iter().zip(normals.iter().zip(&positions)) {
            if let Some(n) = n
                && (n.len() != p.len() || n.iter().any(|v| !v.is_finite()))
            {
                return Err(GltfError::Export {
                    message: format!(
                        "mesh `{name}` at t = {time}: {} normals for {} positions, or one not finite",
                        n.len(),
                        p.len()
                    ),
                });
            }
        }
        if positions.len() != self.meshes.len() {
            return Err(GltfError::Export {
                message: format!(
                    "frame at t = {time} has {} meshes, the recording {}",
                    positions.len(),
                    self.meshes.len()
                ),
            });
        }
        for ((name, tris), p) in self.meshes.iter().zip(&positions) {
            if let Some(i) = tris.iter().flatten().find(|i| **i as usize >= p.len()) {
                return Err(GltfError::Export {
                    message: format!("mesh `{name}` at t = {time}: triangle vertex {i}, but {} positions", p.len()),
                });
            }
            if let Some(k) = p.iter().position(|x| !x.is_finite()) {
                return Err(GltfError::Export {
                    message: format!("mesh `{name}` at t = {time}: vertex {k} is not finite"),
                });
            }
        }
        // Keys are stored as f32: compare there, so two times one f32 apart stay ordered.
        let t = time as f32;
        if !t.is_finite() || self.frames.last().is_some_and(|last| last.time >= t) {
            return Err(GltfError::Export { message: format!("frame time {time} is not finite or does not increase") });
        }
        // Positions and normals (12 bytes each per vertex) and at most three keys (4 + 12).
        let bytes = positions.iter().map(|p| 24 * p.len() as u64).sum::<u64>() + 48;
        if self.bytes + bytes > GLB_MAX_BIN {
            return Err(GltfError::Export {
                message: format!(
                    "frame {} at t = {time} would take the animation past the 4 GiB a GLB can hold ({} frames, {:.2} GB so far): record fewer frames (`output.obj_every`) or fewer vertices",
                    self.frames.len(),
                    self.frames.len(),
                    self.bytes as f64 / 1e9
                ),
            });
        }
        self.bytes += bytes;
        self.frames.push(Frame { time: t, positions, normals });
        Ok(())
    }

    /// Frames recorded.
    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// The GLB bytes.
    pub fn to_glb(&self) -> Result<Vec<u8>, GltfError> {
        if self.frames.is_empty() || self.meshes.is_empty() {
            return Err(GltfError::Export { message: "nothing recorded".into() });
        }
        let mut b = Builder::default();
        let shared: Vec<_> = self
            .meshes
            .iter()
            .enumerate()
            .map(|(k, (name, tris))| (b.indices(tris), b.material(name, palette_color(k))))
            .collect();
        let mut frame_nodes = Vec::with_capacity(self.frames.len());
        for (f, frame) in self.frames.iter().enumerate() {
            let mut prims = Vec::with_capacity(self.meshes.len());
            let meshes = self.meshes.iter().zip(&frame.positions).zip(&frame.normals).zip(&shared);
            for ((((_, tris), p), n), &(indices, material)) in meshes {
                let smooth;
                let n = match n {
                    Some(n) => n,
                    None => {
                        smooth = smooth_normals(p, tris);
                        &smooth
                    }
                };
                prims.push(b.primitive(p, n, indices, material));
            }
            let mesh = b.mesh(&format!("frame_{f:05}"), prims);
            let hidden = f > 0; // the first frame shows where players do not animate
            frame_nodes.push(b.root.push(json::Node {
                mesh: Some(mesh),
                name: Some(format!("frame_{f:05}")),
                scale: hidden.then_some([0.0; 3]),
                ..Default::default()
            }));
        }
        if self.frames.len() > 1 {
            let times: Vec<f32> = self.frames.iter().map(|f| f.time).collect();
            let mut channels = Vec::with_capacity(frame_nodes.len());
            let mut samplers = Vec::with_capacity(frame_nodes.len());
            let kind = (json::accessor::ComponentType::F32, json::accessor::Type::Vec3);
            for (f, node) in frame_nodes.iter().enumerate() {
                // Step keys: hidden until its time, shown until the next frame's, hidden after
                // (the last frame stays shown, as a player holds the last key). At most three
                // keys per frame, so the file grows linearly with the frames.
                let (mut keys, mut scales) = (Vec::with_capacity(3), Vec::with_capacity(3));
                if f > 0 {
                    keys.push(times[f - 1]);
                    scales.push([0.0f32; 3]);
                }
                keys.push(times[f]);
                scales.push([1.0; 3]);
                if f + 1 < times.len() {
                    keys.push(times[f + 1]);
                    scales.push([0.0; 3]);
                }
                let input = b.scalars(&keys);
                let output = b.accessor(bytemuck::cast_slice(&scales), scales.len(), kind, None, None);
                samplers.push(json::animation::Sampler {
                    extensions: None,
                    extras: Default::default(),
                    input,
                    interpolation: Valid(json::animation::Interpolation::Step),
                    output,
                });
                channels.push(json::animation::Channel {
                    sampler: json::Index::new(f as u32),
                    target: json::animation::Target {
                        extensions: None,
                        extras: Default::default(),
                        node: *node,
                        path: Valid(json::animation::Property::Scale),
                    },
                    extensions: None,
                    extras: Default::default(),
                });
            }
            b.root.push(json::Animation {
                extensions: None,
                extras: Default::default(),
                channels,
                name: Some("run".into()),
                samplers,
            });
        }
        let root = b.root.push(json::Node {
            name: Some("pliant_run".into()),
            children: Some(frame_nodes),
            ..Default::default()
        });
        b.finish(vec![root])
    }

    /// Writes the GLB to `path`.
    pub fn write(&self, path: &Path) -> Result<(), GltfError> {
        std::fs::write(path, self.to_glb()?)
            .map_err(|e| GltfError::Io { path: path.to_owned(), message: e.to_string() })
    }
}
