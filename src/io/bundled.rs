//! The scenes shipped in `examples/scenes/`, compiled in so `pliant run drop_cube` works from
//! any directory. A test checks this list against the directory.

/// `(name, JSON)` of every bundled scene.
pub const BUNDLED_SCENES: &[(&str, &str)] = &[
    ("cantilever_ci", include_str!("../../examples/scenes/cantilever_ci.json")),
    ("cantilever_coarse", include_str!("../../examples/scenes/cantilever_coarse.json")),
    ("cantilever_fine", include_str!("../../examples/scenes/cantilever_fine.json")),
    ("cantilever_medium", include_str!("../../examples/scenes/cantilever_medium.json")),
    ("cloth_drape_sphere", include_str!("../../examples/scenes/cloth_drape_sphere.json")),
    ("cloth_self_fold", include_str!("../../examples/scenes/cloth_self_fold.json")),
    ("cloth_stack", include_str!("../../examples/scenes/cloth_stack.json")),
    ("drop_cube", include_str!("../../examples/scenes/drop_cube.json")),
    ("fallback_cloth_gap", include_str!("../../examples/scenes/fallback_cloth_gap.json")),
    ("fallback_projectile_cloth", include_str!("../../examples/scenes/fallback_projectile_cloth.json")),
    ("fallback_stiff_on_soft", include_str!("../../examples/scenes/fallback_stiff_on_soft.json")),
    ("fallback_weight_on_sheet", include_str!("../../examples/scenes/fallback_weight_on_sheet.json")),
    ("incline_slide", include_str!("../../examples/scenes/incline_slide.json")),
    ("incline_stick", include_str!("../../examples/scenes/incline_stick.json")),
    ("pile_soft_box", include_str!("../../examples/scenes/pile_soft_box.json")),
    ("projectile_wall", include_str!("../../examples/scenes/projectile_wall.json")),
    ("stack_soft_cubes", include_str!("../../examples/scenes/stack_soft_cubes.json")),
    ("stiffness_sweep", include_str!("../../examples/scenes/stiffness_sweep.json")),
    ("twist_rods", include_str!("../../examples/scenes/twist_rods.json")),
    ("twist_rods_ci", include_str!("../../examples/scenes/twist_rods_ci.json")),
];

/// The JSON of a bundled scene.
pub fn bundled_scene(name: &str) -> Option<&'static str> {
    BUNDLED_SCENES.iter().find(|(n, _)| *n == name).map(|(_, j)| *j)
}
