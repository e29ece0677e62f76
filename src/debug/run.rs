//! Pictures of a finished run: the OBJ frames `pliant run --export obj` wrote, with the
//! obstacles of the `scene.json` beside them (`pliant render`).

use std::path::{Path, PathBuf};

use crate::debug::{Camera, DrawScene, RenderError, Renderer};
use crate::gpu::GpuOptions;
use crate::io::{parse_obj_frame, parse_scene};

/// Which exported frames to draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunFrames {
    /// The last exported frame.
    Last,
    /// Frame `N` (it must have been exported).
    One(u64),
    /// Every `K`-th exported frame, and the last, with one camera for all.
    Every(u64),
}

/// How to draw a run.
#[derive(Clone, Debug)]
pub struct RenderRunOptions {
    /// Frames to draw.
    pub frames: RunFrames,
    /// Picture width \[px\].
    pub width: u32,
    /// Picture height \[px\].
    pub height: u32,
    /// Draw contact points.
    pub contacts: bool,
    /// GPU adapter (first whose name contains this), or the default.
    pub adapter: Option<String>,
}

impl Default for RenderRunOptions {
    fn default() -> Self {
        Self { frames: RunFrames::Last, width: 1280, height: 720, contacts: false, adapter: None }
    }
}

fn input(path: &Path, message: impl Into<String>) -> RenderError {
    RenderError::Input { path: path.to_owned(), message: message.into() }
}

/// The OBJ frames in `<dir>/frames`, by frame number.
pub fn exported_frames(dir: &Path) -> Result<Vec<(u64, PathBuf)>, RenderError> {
    let frames = dir.join("frames");
    let entries = std::fs::read_dir(&frames).map_err(|e| {
        input(&frames, format!("{e}; run `pliant run <scene> --out {} --export obj` first", dir.display()))
    })?;
    let mut out: Vec<(u64, PathBuf)> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let n = p.file_name()?.to_str()?.strip_prefix("frame_")?.strip_suffix(".obj")?.parse().ok()?;
            Some((n, p))
        })
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(input(&frames, "holds no frame_NNNNN.obj files"));
    }
    Ok(out)
}

fn load_frame(path: &Path, scene: &DrawScene) -> Result<DrawScene, RenderError> {
    let text = std::fs::read_to_string(path).map_err(|e| input(path, e.to_string()))?;
    let (meshes, contacts) = parse_obj_frame(&text).map_err(|e| input(path, e))?;
    Ok(DrawScene { meshes, obstacles: scene.obstacles.clone(), contacts, frame_bounds: None })
}

/// Draws frames of the run in `dir` into `<dir>/render/frame_NNNNN.png`; returns the files
/// written. A single frame is framed on its own; a sequence keeps one camera, framed on all of
/// its frames.
pub fn render_run(dir: &Path, options: &RenderRunOptions) -> Result<Vec<PathBuf>, RenderError> {
    let available = exported_frames(dir)?;
    let chosen: Vec<&(u64, PathBuf)> = match options.frames {
        RunFrames::Last => available.last().into_iter().collect(),
        RunFrames::One(n) => vec![available.iter().find(|(k, _)| *k == n).ok_or_else(|| {
            let list: Vec<String> = available.iter().map(|(k, _)| k.to_string()).collect();
            let shown = if list.len() > 12 {
                format!("{} … {}", list[..6].join(", "), list[list.len() - 3..].join(", "))
            } else {
                list.join(", ")
            };
            input(&dir.join("frames"), format!("frame {n} was not exported; exported frames: {shown}"))
        })?],
        RunFrames::Every(0) => return Err(input(dir, "--every must be at least 1")),
        RunFrames::Every(k) => {
            let mut v: Vec<_> = available.iter().step_by(k as usize).collect();
            if let Some(last) = available.last()
                && v.last().is_none_or(|l| l.0 != last.0)
            {
                v.push(last);
            }
            v
        }
    };
    let scene_path = dir.join("scene.json");
    let obstacles = match std::fs::read_to_string(&scene_path) {
        Ok(json) => {
            parse_scene(&json).and_then(|s| s.build_obstacles()).map_err(|e| input(&scene_path, e.to_string()))?
        }
        Err(_) => Vec::new(), // frames without their scene: drawn over a floor under them
    };
    let base = DrawScene { obstacles, ..DrawScene::default() };
    let frames: Vec<(u64, DrawScene)> =
        chosen.iter().map(|(k, p)| load_frame(p, &base).map(|s| (*k, s))).collect::<Result<_, _>>()?;
    let mut lo = glam::Vec3::splat(f32::MAX);
    let mut hi = glam::Vec3::splat(f32::MIN);
    for (_, s) in &frames {
        if let Some((a, b)) = s.view_bounds() {
            lo = lo.min(a);
            hi = hi.max(b);
        }
    }
    if lo.cmpgt(hi).any() {
        return Err(RenderError::Empty);
    }
    let renderer = Renderer::new(&GpuOptions { adapter_name: options.adapter.clone(), ..GpuOptions::default() })?;
    let aspect = options.width as f32 / options.height.max(1) as f32;
    let mut written = Vec::with_capacity(frames.len());
    for (k, s) in &frames {
        let s = &DrawScene { frame_bounds: Some((lo, hi)), ..s.clone() };
        let camera = Camera::framing(lo, hi, aspect).outside_obstacles(s);
        let picture = renderer.render(s, &camera, options.width, options.height, options.contacts)?;
        let path = dir.join("render").join(format!("frame_{k:05}.png"));
        picture.write_png(&path)?;
        written.push(path);
    }
    Ok(written)
}
