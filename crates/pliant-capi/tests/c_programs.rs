//! The C ABI from C: the committed header is what cbindgen makes of the source; the drop-cube
//! example, compiled by the system C compiler against the shared library, rests where the Rust
//! drop-cube scene does; and a C program that passes bad input to every entry point gets an
//! error code from each, never a crash.

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn header() -> PathBuf {
    crate_dir().join("include/pliant.h")
}

/// The directory holding `libpliant_capi.so` (or `.dylib`) that this test was built with:
/// cargo builds the library's every crate type before the tests that depend on it.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let deps = exe.parent().expect("deps directory");
    for dir in [deps, deps.parent().expect("profile directory")] {
        if ["libpliant_capi.so", "libpliant_capi.dylib"].iter().any(|f| dir.join(f).exists()) {
            return dir.to_path_buf();
        }
    }
    panic!("no libpliant_capi shared library next to {}", exe.display());
}

/// Compiles `source` with the system C compiler (`$CC`, else `cc`) against the header and the
/// shared library, with warnings as errors, and returns the program's path.
fn compile(source: &Path, name: &str) -> PathBuf {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let lib = library_dir();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&cc)
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1"])
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(source)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lpliant_capi", "-lm", "-o"])
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("could not run the C compiler `{cc}`: {e}"));
    assert!(status.success(), "{cc} failed on {}", source.display());
    out
}

/// Runs a compiled C program; returns its standard output, failing on a non-zero exit. The
/// loader is pointed at the library this test was built with: cargo's own library path can
/// name a stale copy (`target/release/libpliant_capi.so` from an earlier `cargo build`) ahead
/// of the program's rpath.
fn run(program: &Path) -> String {
    let lib = library_dir();
    let out = Command::new(program)
        .env("LD_LIBRARY_PATH", &lib)
        .env("DYLD_LIBRARY_PATH", &lib)
        .output()
        .expect("run the C program");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} exited with {}", program.display(), out.status);
    stdout
}

#[test]
fn the_committed_header_is_what_cbindgen_generates() {
    let config = cbindgen::Config::from_file(crate_dir().join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir().join("src/lib.rs"))
        .generate()
        .expect("cbindgen parses the crate")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    if std::env::var("PLIANT_WRITE_HEADER").is_ok_and(|v| v == "1") {
        std::fs::write(header(), &generated).expect("write the header");
    }
    let committed = std::fs::read_to_string(header()).unwrap_or_default();
    assert!(
        committed == generated,
        "include/pliant.h is out of date: regenerate it with \
         PLIANT_WRITE_HEADER=1 cargo test -p pliant-capi --release --test c_programs"
    );
}

/// The number after `label` in `line`.
fn field(line: &str, label: &str) -> f64 {
    let rest = &line[line.find(label).unwrap_or_else(|| panic!("no `{label}` in {line}")) + label.len()..];
    rest.trim_start()
        .split(' ')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no number after `{label}`"))
}

#[test]
fn the_c_drop_cube_rests_where_the_rust_scene_does() {
    let program = compile(&crate_dir().join("../../examples/c/hello_pliant.c"), "hello_pliant");
    let out = run(&program);
    let line = out.lines().find(|l| l.starts_with("resting height")).expect("a resting height line");
    let (top, bottom) = (field(line, "top"), field(line, "bottom"));
    assert!(out.contains("fallbacks: 0"), "{out}");

    // The Rust scene: the same cube from examples/scenes/drop_cube.json, run by the runner.
    let root = crate_dir().join("../..");
    let json = std::fs::read_to_string(root.join("examples/scenes/drop_cube.json")).expect("scene file");
    let mut scene = pliant::io::parse_scene(&json).expect("parse").build(&root.join("examples/scenes")).expect("build");
    let result = pliant::io::run_scene(&mut scene, pliant::io::RunOptions::default()).expect("run");
    let last = |probe: &str| result.summary.final_probes[probe][1];
    let (rust_top, rust_bottom) = (last("top"), last("bottom"));
    eprintln!("C: top {top:.6} bottom {bottom:.6}; Rust: top {rust_top:.6} bottom {rust_bottom:.6}");
    // The same code with the same configuration: equal to the printed digits (the issue asks
    // for 1 mm; a wrapper that changed a default would show up here long before that).
    assert!((top - rust_top).abs() < 1e-5, "top face at {top} m from C, {rust_top} m from Rust");
    assert!((bottom - rust_bottom).abs() < 1e-5, "bottom face at {bottom} m from C, {rust_bottom} m from Rust");
    // And it is a resting cube: on the ground, shortened by its weight (ρ g L² / 2E ≈ 2 mm).
    let shortening = 0.2 - (top - bottom);
    assert!(bottom.abs() < 2e-3 && (1.0e-3..3.0e-3).contains(&shortening), "top {top}, bottom {bottom}");
}

#[test]
fn every_entry_point_rejects_bad_input_with_a_code() {
    let source = crate_dir().join("tests/c/bad_input.c");
    let text = std::fs::read_to_string(&source).expect("bad_input.c");
    let header = std::fs::read_to_string(header()).expect("header");
    // Every function the header declares is called by the C test.
    let functions: Vec<&str> = header
        .lines()
        .filter_map(|l| {
            let at = l.find("pliant_")?;
            let name = &l[at..l[at..].find('(')? + at];
            (!l.trim_start().starts_with("//") && l.contains(&format!("{name}("))).then_some(name)
        })
        .collect();
    assert!(functions.len() > 30, "found only {functions:?} in the header");
    let missing: Vec<_> = functions.iter().filter(|f| !text.contains(&format!("{f}("))).collect();
    assert!(missing.is_empty(), "bad_input.c does not call {missing:?}");

    let out = run(&compile(&source, "bad_input"));
    assert!(out.contains(", 0 failed"), "{out}");
}

#[test]
fn the_readmes_c_snippet_compiles_and_runs() {
    let readme = std::fs::read_to_string(crate_dir().join("../../README.md")).expect("README.md");
    let section = &readme[readme.find("## In your engine").expect("an `In your engine` section")..];
    let start = section.find("```c\n").expect("a C block") + 5;
    let block = &section[start..start + section[start..].find("```").expect("the block ends")];
    let (includes, body): (Vec<&str>, Vec<&str>) = block.lines().partition(|l| l.starts_with("#include"));
    let program =
        format!("#include <stdio.h>\n{}\nint main(void) {{\n{}\nreturn 0;\n}}\n", includes.join("\n"), body.join("\n"));
    let source = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("readme_snippet.c");
    std::fs::write(&source, program).expect("write the snippet");
    run(&compile(&source, "readme_snippet"));
}
