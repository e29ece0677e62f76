//! Pins and kinematic targets: vertices whose positions are prescribed rather than solved.
//! Targets are applied at the end-of-step pose inside the solve, so pinned vertices do not lag
//! behind a moving target.

use glam::{Quat, Vec3};

/// One keyframe of a rigid path.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Keyframe {
    /// Time \[s\].
    pub time: f64,
    /// Translation at that time \[m\].
    pub translation: Vec3,
    /// Rotation at that time (about the path's pivot).
    pub rotation: Quat,
}

/// A rigid motion prescribed by keyframes: translations are interpolated linearly, rotations
/// by slerp; before the first and after the last keyframe the path holds still.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct KinematicPath {
    /// Keyframes in increasing time.
    pub keyframes: Vec<Keyframe>,
    /// Rotation centre \[m\]; `None` means the centroid of the pinned vertices when pinned.
    pub pivot: Option<Vec3>,
}

impl KinematicPath {
    /// `(translation, rotation)` at time `t` \[s\].
    pub fn pose(&self, t: f64) -> (Vec3, Quat) {
        let k = &self.keyframes;
        match k.iter().position(|f| f.time > t) {
            None => k.last().map_or((Vec3::ZERO, Quat::IDENTITY), |f| (f.translation, f.rotation)),
            Some(0) => (k[0].translation, k[0].rotation),
            Some(i) => {
                let (a, b) = (&k[i - 1], &k[i]);
                let s = ((t - a.time) / (b.time - a.time)) as f32;
                (a.translation.lerp(b.translation, s), a.rotation.slerp(b.rotation, s))
            }
        }
    }
}

/// How a pin's vertices move.
#[derive(Clone, Debug, PartialEq)]
pub enum PinMotion {
    /// Held where the vertices are when the pin takes hold.
    Fixed,
    /// Follows a rigid path applied to the vertices' positions when the pin took hold.
    Path(KinematicPath),
    /// Targets set by the caller each step (`World::set_pin_targets`), e.g. a VR hand.
    Scripted(Vec<Vec3>),
}

/// A set of vertices with prescribed motion.
#[derive(Clone, Debug)]
pub struct Pin {
    /// Body-local vertex indices.
    pub vertices: Vec<u32>,
    /// Their motion.
    pub motion: PinMotion,
    /// Time \[s\] at which the pin lets go (the vertices keep their velocity); `None` = never.
    pub release_at: Option<f64>,
    /// Positions of the vertices when the pin took hold \[m\]: `Fixed` holds them there and
    /// `Path` moves them rigidly from there. Captured by the world on the pin's first step.
    pub(crate) anchors: Vec<Vec3>,
    /// The path's pose `(translation, rotation)` when the anchors were captured: the path moves
    /// the vertices relative to it, so a pin added mid-path does not jump.
    pub(crate) anchor_pose: (Vec3, Quat),
    /// Identity that survives other pins being removed (attachments find their pin by it).
    pub(crate) id: u64,
}

/// Equal pins hold the same vertices the same way (the identity is not compared).
impl PartialEq for Pin {
    fn eq(&self, other: &Self) -> bool {
        self.vertices == other.vertices
            && self.motion == other.motion
            && self.release_at == other.release_at
            && self.anchors == other.anchors
            && self.anchor_pose == other.anchor_pose
    }
}

fn next_pin_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Pin {
    /// Vertices held in place.
    pub fn fixed(vertices: Vec<u32>) -> Self {
        Self {
            vertices,
            motion: PinMotion::Fixed,
            release_at: None,
            anchors: Vec::new(),
            anchor_pose: (Vec3::ZERO, Quat::IDENTITY),
            id: next_pin_id(),
        }
    }

    /// Vertices following a rigid path.
    pub fn path(vertices: Vec<u32>, path: KinematicPath) -> Self {
        Self {
            vertices,
            motion: PinMotion::Path(path),
            release_at: None,
            anchors: Vec::new(),
            anchor_pose: (Vec3::ZERO, Quat::IDENTITY),
            id: next_pin_id(),
        }
    }

    /// Vertices driven by targets the caller sets each step (`World::set_pin_targets`),
    /// starting at `targets`.
    pub fn scripted(vertices: Vec<u32>, targets: Vec<Vec3>) -> Self {
        Self {
            vertices,
            motion: PinMotion::Scripted(targets),
            release_at: None,
            anchors: Vec::new(),
            anchor_pose: (Vec3::ZERO, Quat::IDENTITY),
            id: next_pin_id(),
        }
    }

    /// Releases the pin at time `t` \[s\].
    pub fn released_at(mut self, t: f64) -> Self {
        self.release_at = Some(t);
        self
    }

    /// Whether the pin holds its vertices at time `t`.
    pub fn active_at(&self, t: f64) -> bool {
        self.release_at.is_none_or(|r| t < r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_interpolates_and_holds() {
        let p = KinematicPath {
            keyframes: vec![
                Keyframe { time: 1.0, translation: Vec3::ZERO, rotation: Quat::IDENTITY },
                Keyframe { time: 3.0, translation: Vec3::new(2.0, 0.0, 0.0), rotation: Quat::from_rotation_y(1.0) },
            ],
            pivot: None,
        };
        assert_eq!(p.pose(0.0).0, Vec3::ZERO);
        assert!((p.pose(2.0).0 - Vec3::X).length() < 1e-6);
        assert!((p.pose(2.0).1.angle_between(Quat::from_rotation_y(0.5))).abs() < 1e-5);
        assert_eq!(p.pose(10.0).0, Vec3::new(2.0, 0.0, 0.0));
    }
}
