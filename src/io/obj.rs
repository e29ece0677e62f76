//! Wavefront OBJ export of a frame: every body's surface as its own `o <name>` group, in metres
//! with y up.

use std::fmt::Write;

use crate::body::SoftBodyHandle;
use crate::runtime::World;

/// Renders the surfaces of `bodies` (name, handle) as OBJ text.
pub fn frame_obj(world: &World, bodies: &[(String, SoftBodyHandle)]) -> String {
    let mut out = String::from("# Pliant frame export (metres, y up)\n");
    let mut base = 1usize; // OBJ indices are 1-based and global across objects
    for (name, h) in bodies {
        let (Some(body), Some(x)) = (world.bodies.get(*h), world.body_positions(*h)) else { continue };
        let surface = &body.shared().surface;
        // Only the vertices the surface uses, renumbered.
        let mut local = vec![u32::MAX; x.len()];
        let mut used = Vec::new();
        for t in surface {
            for &i in t {
                if local[i as usize] == u32::MAX {
                    local[i as usize] = used.len() as u32;
                    used.push(i);
                }
            }
        }
        let _ = writeln!(out, "o {name}");
        for &i in &used {
            let p = x[i as usize];
            let _ = writeln!(out, "v {} {} {}", p.x, p.y, p.z);
        }
        for t in surface {
            let _ = writeln!(
                out,
                "f {} {} {}",
                base + local[t[0] as usize] as usize,
                base + local[t[1] as usize] as usize,
                base + local[t[2] as usize] as usize
            );
        }
        base += used.len();
    }
    out
}
