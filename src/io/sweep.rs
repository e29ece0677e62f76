//! Scene sweeps: a scene with a `sweep` table expands into one scene per combination of the
//! listed values, each override applied to the JSON before it is parsed, so every variant is
//! validated like a hand-written scene.

use serde_json::Value;

use super::scene_build::parse_scene;
use super::{Scene, SceneError};

/// One expanded variant.
#[derive(Clone, Debug)]
pub struct SweepVariant {
    /// `field=value` pairs joined by commas (empty for a scene without a sweep).
    pub label: String,
    /// The scene with the overrides applied and `sweep` cleared.
    pub scene: Scene,
}

/// Splits `a.b[2].c` into keys and indices.
fn segments(path: &str) -> Option<Vec<Result<String, usize>>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            out.push(Ok(key.to_owned()));
        }
        for idx in rest.split('[').filter(|s| !s.is_empty()) {
            out.push(Err(idx.strip_suffix(']')?.parse().ok()?));
        }
    }
    (!out.is_empty()).then_some(out)
}

fn set(root: &mut Value, path: &str, value: Value) -> Result<(), SceneError> {
    let bad = |reason: &str| SceneError::invalid(format!("sweep.{path}"), "(path)", reason);
    let segs = segments(path).ok_or_else(|| bad("not a field path like `materials.m.E` or `bodies[0].velocity`"))?;
    let mut cur = root;
    for (k, seg) in segs.iter().enumerate() {
        let last = k + 1 == segs.len();
        cur = match seg {
            Ok(key) => {
                let obj = cur.as_object_mut().ok_or_else(|| bad("path goes through a non-object"))?;
                if last {
                    if !obj.contains_key(key) && !is_optional_leaf(key) {
                        return Err(bad("field does not exist in the scene"));
                    }
                    obj.insert(key.clone(), value);
                    return Ok(());
                }
                obj.get_mut(key).ok_or_else(|| bad("field does not exist in the scene"))?
            }
            Err(i) => {
                let arr = cur.as_array_mut().ok_or_else(|| bad("index into a non-array"))?;
                let len = arr.len();
                let slot = arr.get_mut(*i).ok_or_else(|| bad(&format!("index {i} out of range (length {len})")))?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
        };
    }
    Ok(())
}

/// Leaves that may be swept even when the scene omits them (they have defaults).
fn is_optional_leaf(key: &str) -> bool {
    matches!(
        key,
        "damping"
            | "linear_damping"
            | "friction"
            | "velocity"
            | "angular_velocity"
            | "translation"
            | "rotation_deg"
            | "split"
    )
}

/// Expands a scene's JSON into its sweep variants (one variant if there is no sweep).
pub fn expand_sweep(json: &str) -> Result<Vec<SweepVariant>, SceneError> {
    let base = parse_scene(json)?;
    if base.sweep.is_empty() {
        return Ok(vec![SweepVariant { label: String::new(), scene: base }]);
    }
    let mut root: Value = serde_json::from_str(json)
        .map_err(|e| SceneError::Parse { field: "(top level)".into(), message: e.to_string() })?;
    if let Some(obj) = root.as_object_mut() {
        obj.remove("sweep");
    }
    let axes: Vec<(&String, &Vec<Value>)> = base.sweep.iter().collect();
    if let Some((k, _)) = axes.iter().find(|(_, v)| v.is_empty()) {
        return Err(SceneError::invalid(format!("sweep.{k}"), "[]", "needs at least one value"));
    }
    let total: usize = axes.iter().map(|(_, v)| v.len()).product();
    let mut variants = Vec::with_capacity(total);
    for n in 0..total {
        let mut v = root.clone();
        let mut rest = n;
        let mut label = Vec::new();
        // The last axis varies fastest.
        let mut picks = vec![0usize; axes.len()];
        for (a, (_, vals)) in axes.iter().enumerate().rev() {
            picks[a] = rest % vals.len();
            rest /= vals.len();
        }
        for (a, (path, vals)) in axes.iter().enumerate() {
            let val = vals[picks[a]].clone();
            label.push(format!("{path}={val}"));
            set(&mut v, path, val)?;
        }
        let text = v.to_string();
        let mut scene = parse_scene(&text)?;
        scene.sweep.clear();
        variants.push(SweepVariant { label: label.join(","), scene });
    }
    Ok(variants)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENE: &str = r#"{ "version": 1, "name": "s", "frames": 1,
        "materials": { "m": { "model": "stable_neo_hookean", "E": 1e5, "nu": 0.3, "rho": 1000 } },
        "bodies": [{ "name": "b", "material": "m", "generator": { "type": "box", "size": [1,1,1], "cells": [1,1,1] } }],
        "sweep": { "materials.m.E": [1e4, 1e6], "materials.m.model": ["stable_neo_hookean", "stvk"], "bodies[0].velocity": [[0, 1, 0]] } }"#;

    #[test]
    fn cartesian_product_with_overrides() {
        let v = expand_sweep(SCENE).unwrap();
        assert_eq!(v.len(), 4);
        assert!(v.iter().all(|x| x.scene.sweep.is_empty()));
        assert!(v[3].label.contains("materials.m.model=\"stvk\""), "{}", v[3].label);
        assert_eq!(v[3].scene.bodies[0].velocity, [0.0, 1.0, 0.0]);
        match &v[3].scene.materials["m"] {
            crate::io::scene::MaterialSpec::Stvk(p) => assert_eq!(p.young_modulus, 1e6),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_sweep_path_names_the_field() {
        let s = SCENE.replace("materials.m.E", "materials.q.E");
        match expand_sweep(&s) {
            Err(SceneError::InvalidValue { field, .. }) => assert_eq!(field, "sweep.materials.q.E"),
            other => panic!("{other:?}"),
        }
    }
}
