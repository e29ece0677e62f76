//! The scenes shipped in `examples/scenes/`, compiled in so `pliant run drop_cube` works from
//! any directory. A test checks this list against the directory.

/// `(name, JSON)` of every bundled scene.
pub const BUNDLED_SCENES: &[(&str, &str)] = &[
    ("cantilever_ci", include_str!("../../examples/scenes/cantilever_ci.json")),
    ("cantilever_coarse", include_str!("../../examples/scenes/cantilever_coarse.json")),
    ("cantilever_fine", include_str!("../../examples/scenes/cantilever_fine.json")),
    ("cantilever_medium", include_str!("../../examples/scenes/cantilever_medium.json")),
    ("cloth_drape_sphere", include_str!("../../examples/scenes/cloth_drape_sphere.json")),
    ("drop_cube", include_str!("../../examples/scenes/drop_cube.json")),
    ("incline_slide", include_str!("../../examples/scenes/incline_slide.json")),
    ("incline_stick", include_str!("../../examples/scenes/incline_stick.json")),
    ("stiffness_sweep", include_str!("../../examples/scenes/stiffness_sweep.json")),
];

/// The JSON of a bundled scene.
pub fn bundled_scene(name: &str) -> Option<&'static str> {
    BUNDLED_SCENES.iter().find(|(n, _)| *n == name).map(|(_, j)| *j)
}
