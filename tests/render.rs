//! Pictures: the main demo drawn headless (lavapipe in CI) at its first and last frame, and a
//! live world drawn directly.

mod common;

use pliant::GpuOptions;
use pliant::debug::{Camera, DrawScene, RenderError, RenderRunOptions, Renderer, RunFrames, render_run};
use pliant::io::{RunOptions, run_scene};

fn renderer() -> Option<Renderer> {
    match Renderer::new(&GpuOptions::default()) {
        Ok(r) => Some(r),
        Err(e) => {
            common::no_gpu(&e);
            None
        }
    }
}

/// The decoded PNG (RGBA8).
fn decode(path: &std::path::Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    assert_eq!(info.color_type, png::ColorType::Rgba);
    (info.width, info.height, buf)
}

#[test]
fn the_main_demo_rests_on_the_ground_and_its_last_frame_differs_from_its_first() {
    if renderer().is_none() {
        return;
    }
    // The demo: `cargo run --release` runs drop_cube to the end with OBJ frames.
    let mut loaded = common::load("drop_cube");
    let dir = tempfile::tempdir().unwrap();
    run_scene(&mut loaded, RunOptions { out_dir: Some(dir.path().into()), export_obj: true, ..RunOptions::default() })
        .unwrap();
    let last = loaded.scene.frames as u64;
    // Resting on the ground: the lowest vertex sits within the contact layer, the cube is still.
    let x = loaded.world.body_positions(loaded.bodies[0].handle).unwrap();
    let lowest = x.iter().map(|p| p.y).fold(f32::MAX, f32::min);
    assert!((0.0..0.002).contains(&lowest), "lowest vertex at {lowest} m");
    let speed =
        loaded.world.body_velocities(loaded.bodies[0].handle).unwrap().iter().map(|v| v.length()).fold(0.0, f32::max);
    assert!(speed < 1e-3, "still moving at {speed} m/s");

    let options = |frames| RenderRunOptions { frames, width: 320, height: 180, ..RenderRunOptions::default() };
    let end = render_run(dir.path(), &options(RunFrames::Last)).unwrap();
    assert_eq!(end[0], dir.path().join(format!("render/frame_{last:05}.png")));
    // Frames 0 and the last through one camera (a sequence keeps its camera).
    let pair = render_run(dir.path(), &options(RunFrames::Every(30))).unwrap();
    assert_eq!(pair.len(), 2, "{pair:?}");
    let (w, h, a) = decode(&pair[0]);
    let (_, _, b) = decode(&pair[1]);
    assert_eq!((w, h), (320, 180));
    let a = pliant::debug::Picture { width: w, height: h, rgba: a };
    let b = pliant::debug::Picture { width: w, height: h, rgba: b };
    // Not empty: the cube and the ground cover a good part of both pictures.
    assert!(a.coverage() > 0.2 && b.coverage() > 0.2, "coverage {} and {}", a.coverage(), b.coverage());
    // The cube moved from the air to the ground.
    assert!(a.difference(&b) > 0.02, "frames 0 and {last} differ in {:.1} % of pixels", 100.0 * a.difference(&b));
    // The cube's colour is in the last picture (the body is drawn, not only the ground).
    let reddish = b.rgba.chunks_exact(4).filter(|p| p[0] as i32 > p[2] as i32 + 40).count();
    assert!(reddish > (w * h / 100) as usize, "{reddish} cube pixels");

    // A sequence: one picture per selected frame, the last included.
    let seq = render_run(dir.path(), &options(RunFrames::Every(10))).unwrap();
    assert_eq!(seq.len(), 4, "frames 0, 100, 200, 300: {seq:?}");
    // Frames that were not exported are named in the error.
    match render_run(dir.path(), &options(RunFrames::One(7))) {
        Err(RenderError::Input { message, .. }) => assert!(message.contains("frame 7"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_live_world_is_drawn_with_its_contacts() {
    let Some(renderer) = renderer() else { return };
    let (loaded, _) = common::run("drop_cube", Some(60));
    let scene = DrawScene::from_world(&loaded.world, &loaded.export_bodies());
    assert!(!scene.contacts.is_empty(), "the cube touches the ground by frame 60");
    let (lo, hi) = scene.view_bounds().unwrap();
    let camera = Camera::framing(lo, hi, 1.0);
    let plain = renderer.render(&scene, &camera, 200, 200, false).unwrap();
    let marked = renderer.render(&scene, &camera, 200, 200, true).unwrap();
    assert!(plain.coverage() > 0.2);
    assert!(marked.difference(&plain) > 0.0005, "contact markers show");
    let red =
        |p: &pliant::debug::Picture| p.rgba.chunks_exact(4).filter(|c| c[0] > 180 && c[1] < 80 && c[2] < 80).count();
    assert!(red(&marked) > red(&plain), "markers are red");
    assert!(matches!(renderer.render(&scene, &camera, 0, 10, false), Err(RenderError::Size { .. })));
    assert!(matches!(renderer.render(&DrawScene::default(), &camera, 10, 10, false), Err(RenderError::Empty)));
}
