//! The headline table: Pliant and rapier 0.36's soft bodies on the same scenes, every row with
//! its speed and its accuracy measured at that row's settings, and the comparisons at equal
//! cost and at equal accuracy.
//!
//! ```text
//! cargo run --release --example report [-- --json] [--write] [--threads N] [--max-seconds S]
//! ```
//!
//! `--write` replaces the headline section of `BENCHMARKS.md` (between `<!-- report:begin -->`
//! and `<!-- report:end -->`, inserted after the title when missing) with the tables printed,
//! the command, the machine, the date and the commit; the older sections below stay as history.
//! The README quotes its figures from this section only (`tests/readme_numbers.rs` checks it):
//! timings differ from run to run, so after a `--write` the README's Numbers section is updated
//! to the new table, and the test names every figure that no longer matches.
//!
//! What runs (scenes and metrics: `examples/common/vs_rapier.rs`), every row on `--threads`
//! threads (default 2), rapier in a rayon pool of that size:
//! * the drop cube at 11³ cells: Pliant's `StepConfig::default()` (VBD, 20 sweeps) and VBD at 1,
//!   2, 3, 5, 10 and 40 sweeps; rapier's constraints solver at 1, 2, 4 (its default), 8 and 16
//!   iterations, and at 4 and 16 with linear damping 2/s; rapier's FEM solver at its default;
//! * the cantilever at 54×6×6 cells: Pliant's default, local–global at 4, 10 (its default) and
//!   20 iterations, VBD with the beam tuning of docs/scenes.md at 2, 5 and 20 substeps × 10
//!   sweeps with linear damping 20/s; rapier as for the cube;
//! * the projectile: each engine at its default (capped at half of `--max-seconds`).
//!
//! The comparisons pick from the settings tried: for Pliant's default (for the cantilever, also
//! local–global at its default) and for rapier's default, the other engine's setting nearest in
//! ms per step, and its cheapest setting at least as accurate (the worst error against the
//! static solve of its own mesh over the end of the run; for the cube also no deeper into the
//! ground). A run cut at its time cap (`--max-seconds`, per run) takes part in
//! neither (default 120 s). It took 9.5 minutes on the 2-core dev VM (BENCHMARKS.md).

#[path = "common/vs_rapier.rs"]
mod vs_rapier;

use std::fmt::Write as _;

use vs_rapier::{
    CANTILEVER_FRAMES, DROP_FRAMES, Row, Setting, Solver, StaticCache, comparisons, measure_cantilever,
    measure_drop_cube, measure_projectile, pick,
};

const DROP_CELLS: u32 = 11;
const BEAM_CELLS: [u32; 3] = [54, 6, 6];
const BEGIN: &str = "<!-- report:begin -->";
const END: &str = "<!-- report:end -->";

struct Args {
    json: bool,
    write: bool,
    threads: usize,
    max_seconds: f64,
}

fn args() -> Result<Args, String> {
    let mut a = Args { json: false, write: false, threads: 2, max_seconds: 120.0 };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        match s.as_str() {
            "--json" => a.json = true,
            "--write" => a.write = true,
            "--threads" => a.threads = it.next().and_then(|v| v.parse().ok()).ok_or("--threads needs a count")?,
            "--max-seconds" => {
                a.max_seconds = it.next().and_then(|v| v.parse().ok()).ok_or("--max-seconds needs a number")?
            }
            other => {
                return Err(format!("unknown argument {other}; use --json, --write, --threads N, --max-seconds S"));
            }
        }
    }
    Ok(a)
}

/// rapier's settings tried on a scene: the constraints solver at 1–16 iterations, at 4 and 16
/// also with linear damping 2/s, and the FEM solver at its default.
fn rapier_settings(threads: usize) -> Vec<Setting> {
    vs_rapier::rapier_settings(&[1, 2, 4, 8, 16], &[4, 16], threads)
}

/// Adds the picked rows to `table`, one row per setting: a setting picked twice keeps both roles.
fn add_picked(table: &mut Vec<Row>, picked: Vec<Row>) {
    for p in picked {
        match table.iter_mut().find(|r| r.setting == p.setting) {
            Some(r) => r.role = format!("{}; {}", r.role, p.role),
            None => table.push(p),
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = args()?;
    let t = a.threads;
    let mut statics = StaticCache::new();
    let log = |r: &Row| {
        if a.json {
            println!("{}", r.json("report"));
        } else {
            eprintln!("{}", r.line());
        }
    };

    // Drop cube.
    let pliant_default = Setting::pliant_default(t);
    let rapier_default = Setting::rapier_default(Solver::RapierConstraints, t);
    let fem_default = Setting::rapier_default(Solver::RapierFem, t);
    let mut settings: Vec<Setting> = [1, 2, 3, 5, 10, 40].iter().map(|&n| Setting::vbd(n, t)).collect();
    settings.insert(5, pliant_default);
    settings.extend(rapier_settings(t));
    let mut cube = Vec::new();
    for s in &settings {
        let r = measure_drop_cube(s, DROP_CELLS, a.max_seconds, &mut statics)?;
        log(&r);
        cube.push(r);
    }
    let mut cube_table = vec![
        pick(&cube, &pliant_default, "Pliant's default"),
        pick(&cube, &Setting::vbd(2, t), "Pliant, fewer sweeps"),
        pick(&cube, &rapier_default, "rapier's default"),
        pick(&cube, &fem_default, "rapier's FEM solver"),
    ];
    let refs = [(&cube_table[0], "Pliant's default"), (&cube_table[2], "rapier's default")];
    let picked = comparisons(&cube, &refs, DROP_FRAMES);
    add_picked(&mut cube_table, picked);

    // Cantilever.
    let lg_default = Setting::local_global(pliant::LocalGlobalSettings::default().iterations, t);
    let mut settings = vec![pliant_default];
    settings.extend([4, 10, 20].iter().map(|&n| Setting::local_global(n, t)));
    settings.extend([2, 5, 20].iter().map(|&n| Setting::vbd_tuned(n, t)));
    settings.extend(rapier_settings(t));
    let mut beam = Vec::new();
    for s in &settings {
        let r = measure_cantilever(s, BEAM_CELLS, a.max_seconds, &mut statics)?;
        log(&r);
        beam.push(r);
    }
    let mut beam_table = vec![
        pick(&beam, &pliant_default, "Pliant's default"),
        pick(&beam, &lg_default, "Pliant's local–global default"),
        pick(&beam, &Setting::vbd_tuned(20, t), "Pliant, VBD tuned for the beam"),
        pick(&beam, &rapier_default, "rapier's default"),
        pick(&beam, &fem_default, "rapier's FEM solver"),
    ];
    let refs = [
        (&beam_table[0], "Pliant's default"),
        (&beam_table[1], "Pliant's local–global default"),
        (&beam_table[3], "rapier's default"),
    ];
    let picked = comparisons(&beam, &refs, CANTILEVER_FRAMES);
    add_picked(&mut beam_table, picked);

    // Projectile.
    let mut shots = Vec::new();
    for (s, role) in [
        (pliant_default, "Pliant's default"),
        (rapier_default, "rapier's default"),
        (fem_default, "rapier's FEM solver"),
    ] {
        // Half the cap: the row asks only whether the cube tunnels.
        let mut r = measure_projectile(&s, a.max_seconds / 2.0)?;
        r.role = role.to_string();
        log(&r);
        shots.push(r);
    }

    let mut section = markdown(&cube_table, &beam_table, &shots, t, a.max_seconds);
    section +=
        "\n<details><summary>Every setting tried, as the report's <code>--json</code> rows</summary>\n\n```json\n";
    for r in cube.iter().chain(&beam).chain(&shots) {
        section += &r.json("report");
        section += "\n";
    }
    section += "```\n\n</details>\n";
    if !a.json {
        println!("{section}");
    }
    if a.write {
        write_section(&section)?;
        eprintln!("BENCHMARKS.md: headline section written");
    }
    Ok(())
}

/// `x` as a signed percentage, three significant digits (at most one decimal above 100 %).
fn pct(x: f64) -> String {
    let p = 100.0 * x;
    let decimals = if p.abs() >= 100.0 {
        0
    } else if p.abs() < 1e-12 {
        2
    } else {
        (2 - p.abs().log10().floor() as i32).clamp(0, 6) as usize
    };
    format!("{p:+.decimals$} %")
}

/// A magnitude as a percentage, three significant digits.
fn pct_abs(x: f64) -> String {
    pct(x).trim_start_matches('+').to_string()
}

/// Milliseconds with three significant digits (at least two decimals below 1 ms).
fn ms(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.2}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

fn sci(x: f64) -> String {
    format!("{x:.2e}")
}

fn markdown(cube: &[Row], beam: &[Row], shots: &[Row], threads: usize, max_seconds: f64) -> String {
    let mut s = String::new();
    let commit = command("git", &["rev-parse", "--short", "HEAD"]);
    let dirty = !command("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty();
    let date = command("date", &["-u", "+%Y-%m-%d"]);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let _ = writeln!(
        s,
        "## Headline — `cargo run --release --example report -- --write` — {date}, {cpu}, {cores} cores, commit {commit}{}\n",
        if dirty { " with uncommitted changes" } else { "" }
    );
    let _ = writeln!(
        s,
        "Written by the report itself; the README quotes its figures from here only. Every row runs on {threads} threads (rapier in a rayon pool of that size), dt = 1/60 s, one process; ms per step is the mean over the run after its first frame. Both engines mesh the same grid of cells (Pliant six tets a cell, rapier five) and are measured by the same code from the positions they return (`examples/common/vs_rapier.rs`). rapier: neo-Hookean cells, sleeping off, particle radius 1 mm (Pliant's contact offset; rapier's own default is half a cell), `num_solver_iterations` as the row says (rapier's default is 4). Accuracy is against the converged f64 static solve of each engine's own mesh; \"worst\" is the largest error over the end of the run, so a body still ringing or swinging about the right mean is not counted as accurate. The comparison rows are picked among every setting the report tried (all in its `--json` output); a run cut at the {max_seconds} s cap takes part in none.\n"
    );

    let _ = writeln!(
        s,
        "### Drop cube — 0.2 m, 11³ cells, E = 3e5 Pa, ν = 0.4, from 0.3 m onto a rapier ground, {DROP_FRAMES} frames\n"
    );
    s += "Shortening: height between the mean y of the top and bottom faces, last 30 frames, against the static solve with the bottom face held and against ρgL²/(2E) = 0.654 mm. Below the ground: the lowest vertex or particle centre.\n\n";
    s += "| role | setting | vertices | ms/step | shortening vs static | vs analytic | worst shape error | deepest below ground [m] | frames below ground | gap at the end [m] | end max speed [m/s] | end kinetic energy [J] | fallbacks |\n";
    s += "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for r in cube {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            role(r),
            r.setting.describe(),
            r.vertices,
            ms(r.ms_per_step),
            pct(r.metric("error_vs_static")),
            pct(r.metric("error_vs_analytic")),
            pct_abs(r.metric("worst_shape_error")),
            sci(r.metric("ground_penetration_m")),
            r.metric("frames_below_ground"),
            sci(r.metric("rest_gap_m")),
            sci(r.metric("end_max_speed_m_s")),
            sci(r.metric("end_kinetic_energy_j")),
            r.metric("fallbacks"),
        );
    }

    let _ = writeln!(
        s,
        "\n### Cantilever — 2 m × 0.2 m × 0.2 m, 54×6×6 cells, E = 1.2e8 Pa, ν = 0, clamped at x = 0, {CANTILEVER_FRAMES} frames\n"
    );
    s += "Tip: mean −y displacement of the x = 2 m face over the last 60 frames, against the static solve of the engine's own mesh and against Euler–Bernoulli 0.0491 m; tip motion: its range over those frames.\n\n";
    s += "| role | setting | vertices | ms/step | tip [m] | vs static | vs Euler–Bernoulli | worst vs static | tip motion [m] | fallbacks |\n";
    s += "|---|---|---|---|---|---|---|---|---|---|\n";
    for r in beam {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.4} | {} | {} | {} | {} | {} |",
            role(r),
            r.setting.describe(),
            r.vertices,
            ms(r.ms_per_step),
            r.metric("tip_deflection_m"),
            pct(r.metric("error_vs_static")),
            pct(r.metric("error_vs_euler_bernoulli")),
            pct_abs(r.metric("worst_error_vs_static")),
            sci(r.metric("tip_motion_m")),
            r.metric("fallbacks"),
        );
    }

    s += "\n### Projectile — a 5 cm cube at 60 m/s at a 2 cm fixed wall, no gravity, 60 frames\n\n";
    s += "| role | setting | vertices | ms/step | tunnelled | front x at the end [m] | fallbacks |\n|---|---|---|---|---|---|---|\n";
    for r in shots {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {:.3} | {} |",
            role(r),
            r.setting.describe(),
            r.vertices,
            ms(r.ms_per_step),
            if r.metric("tunnelled") > 0.0 { "yes" } else { "no" },
            r.metric("front_x_m"),
            r.metric("fallbacks"),
        );
    }
    s
}

/// The row's role, with the note of a run cut short.
fn role(r: &Row) -> String {
    if r.note.is_empty() { r.role.clone() } else { format!("{} ({})", r.role, r.note) }
}

fn command(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Replaces the headline section of BENCHMARKS.md, or inserts it after the title.
fn write_section(section: &str) -> Result<(), Box<dyn std::error::Error>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/BENCHMARKS.md");
    let text = std::fs::read_to_string(path)?;
    let block = format!("{BEGIN}\n{section}{END}\n");
    let out = match (text.find(BEGIN), text.find(END)) {
        // The section ends in an HTML block (`</details>`), which only a blank line closes.
        (Some(b), Some(e)) if b < e => {
            format!("{}{block}\n{}", &text[..b], text[e + END.len()..].trim_start_matches('\n'))
        }
        _ => {
            // After the title line and the paragraph under it.
            let cut = text.find("\n## ").map_or(text.len(), |i| i + 1);
            format!("{}{block}\n{}", &text[..cut], &text[cut..])
        }
    };
    std::fs::write(path, out)?;
    Ok(())
}
