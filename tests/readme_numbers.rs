//! The README quotes only figures the report printed (issue 33).
//!
//! `cargo run --release --example report -- --write` writes BENCHMARKS.md's headline section
//! (between `<!-- report:begin -->` and `<!-- report:end -->`). The README's measured figures
//! live in its own section between the same markers, and every number there must appear in
//! that headline section. Outside it (code blocks aside), the README carries no timing or speed
//! ratio at all (a number followed by ms, µs, ns, or by × as a ratio): such a figure would be
//! one the report did not print.

use std::collections::HashSet;

const BEGIN: &str = "<!-- report:begin -->";
const END: &str = "<!-- report:end -->";

fn read(name: &str) -> String {
    std::fs::read_to_string(format!("{}/{name}", env!("CARGO_MANIFEST_DIR"))).expect(name)
}

/// The text between the markers, and the text around them.
fn split(text: &str, file: &str) -> (String, String) {
    let b = text.find(BEGIN).unwrap_or_else(|| panic!("{file} has no {BEGIN}"));
    let e = text.find(END).unwrap_or_else(|| panic!("{file} has no {END}"));
    assert!(b < e, "{file}: {END} before {BEGIN}");
    (text[b + BEGIN.len()..e].to_string(), format!("{}{}", &text[..b], &text[e + END.len()..]))
}

/// Drops fenced code blocks and inline code spans.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut code = false;
        for c in line.chars() {
            if c == '`' {
                code = !code;
            } else if !code {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// A number as written, and what follows it.
struct Number {
    text: String,
    after: String,
}

/// Every number in `text`, normalised: a minus sign (`-` or `−`) kept as `-` where it is one
/// (not a hyphen after a word or a date's digits), a `+` dropped (the table prints `+9.59 %`,
/// prose writes 9.59 %), thousands separators (a comma before exactly three digits) dropped,
/// exponents kept (`1.2e8`, `3.5e-3`, `3.5e−3`).
fn numbers(text: &str) -> Vec<Number> {
    let chars: Vec<char> = text.chars().collect();
    let is_minus = |c: char| c == '-' || c == '−';
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit() && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'));
        if !starts {
            i += 1;
            continue;
        }
        let negative = i >= 1 && is_minus(chars[i - 1]) && (i == 1 || !chars[i - 2].is_alphanumeric());
        let mut s = String::from(if negative { "-" } else { "" });
        while i < chars.len() {
            let c = chars[i];
            let digit_at = |k: usize| chars.get(k).is_some_and(|n| n.is_ascii_digit());
            if c.is_ascii_digit() || (c == '.' && digit_at(i + 1)) {
                s.push(c);
            } else if c == ',' && (1..=3).all(|k| digit_at(i + k)) && !digit_at(i + 4) {
                // A thousands separator: dropped.
            } else if c == 'e' && digit_at(i + 1) {
                s.push(c);
            } else if c == 'e' && chars.get(i + 1).is_some_and(|&n| is_minus(n) || n == '+') && digit_at(i + 2) {
                s.push(c);
                i += 1;
                if is_minus(chars[i]) {
                    s.push('-');
                }
            } else {
                break;
            }
            i += 1;
        }
        let after: String = chars[i..chars.len().min(i + 6)].iter().collect();
        out.push(Number { text: s, after });
    }
    out
}

#[test]
fn every_figure_in_the_readme_is_in_the_report_table() {
    let readme = read("README.md");
    let benchmarks = read("BENCHMARKS.md");
    let (quoted, _) = split(&readme, "README.md");
    let (table, _) = split(&benchmarks, "BENCHMARKS.md");
    assert!(table.contains("## Headline"), "BENCHMARKS.md's headline section has no heading");
    assert!(table.contains("commit "), "the headline section names no commit");
    // The tables and their text, not the JSON rows under them.
    let known: HashSet<String> = numbers(&prose(&table)).into_iter().map(|n| n.text).collect();
    let missing: Vec<String> =
        numbers(&prose(&quoted)).into_iter().map(|n| n.text).filter(|n| !known.contains(n)).collect();
    assert!(missing.is_empty(), "README figures missing from BENCHMARKS.md's headline section: {missing:?}");
    assert!(numbers(&prose(&quoted)).len() >= 10, "the README's figures section quotes next to nothing");
}

#[test]
fn the_readme_has_no_timing_or_ratio_outside_the_quoted_section() {
    let readme = read("README.md");
    let (_, rest) = split(&readme, "README.md");
    let mut found = Vec::new();
    for n in numbers(&prose(&rest)) {
        let after = n.after.trim_start();
        let unit = ["ms", "µs", "ns"]
            .iter()
            .any(|u| after.starts_with(u) && !after[u.len()..].chars().next().is_some_and(|c| c.is_alphanumeric()));
        // A ratio: "3.4×", "3.4 ×" or "3.4x" not followed by a digit (as "54×6×6" cells are).
        let ratio = ["×", "x"].iter().any(|r| {
            after.starts_with(r) && {
                let rest = after[r.len()..].trim_start();
                let cells = rest.starts_with(|c: char| c.is_ascii_digit());
                let word = *r == "x" && after[1..].starts_with(char::is_alphanumeric);
                !(cells || word)
            }
        });
        if unit || ratio {
            found.push(format!("{}{}", n.text, n.after));
        }
    }
    assert!(found.is_empty(), "timings or ratios in the README outside the quoted section: {found:?}");
}

#[test]
fn numbers_are_read_as_written() {
    let n: Vec<String> = numbers(
        "1,728 vertices, +0.02 %, −5.0 %, -1 m, 1.2e8 Pa, 54×6×6, 3.5e-3 m, 3.5e−3, 4,10,20, 2026-12-03, v2 x_1",
    )
    .into_iter()
    .map(|n| n.text)
    .collect();
    assert_eq!(
        n,
        [
            "1728", "0.02", "-5.0", "-1", "1.2e8", "54", "6", "6", "3.5e-3", "3.5e-3", "4", "10", "20", "2026", "12",
            "03"
        ]
    );
    let r = numbers("3.4× as fast");
    assert!(r[0].after.starts_with('×'));
}
