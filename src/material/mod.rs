//! Materials: constitutive parameters and, per energy, ψ, ∂ψ/∂x and the per-vertex Hessian
//! blocks that VBD needs, each finite-difference tested in f64 next to its maths.
//!
//! Energies are generic over [`crate::math::Real`]: the solver runs them in f32, the tests and
//! the static Newton oracle in f64, from one source.

pub mod bending;
pub mod membrane;
pub mod stable_neo_hookean;
pub mod stvk;
pub mod tet;

use glam::{DMat3, DVec3};

use tet::TetRest;

/// Material model id of stable neo-Hookean tets, as the packed state's material records and the
/// GPU kernels store it.
pub(crate) const MODEL_STABLE_NEO_HOOKEAN: u32 = 0;
/// Material model id of StVK tets.
pub(crate) const MODEL_STVK: u32 = 1;
/// Material model id of StVK membrane triangles (cloth).
pub(crate) const MODEL_MEMBRANE_STVK: u32 = 2;

/// An invalid material parameter.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("material parameter `{parameter}` = {value} is invalid: {reason}")]
pub struct MaterialError {
    /// Parameter name as in the API and scene files (`young_modulus`, `poisson_ratio`, …).
    pub parameter: &'static str,
    /// The rejected value.
    pub value: f64,
    /// What the value must satisfy.
    pub reason: &'static str,
}

fn check(parameter: &'static str, value: f64, ok: bool, reason: &'static str) -> Result<(), MaterialError> {
    if value.is_finite() && ok { Ok(()) } else { Err(MaterialError { parameter, value, reason }) }
}

fn check_young_poisson(e: f64, nu: f64) -> Result<(), MaterialError> {
    check("young_modulus", e, e > 0.0, "must be finite and > 0 Pa")?;
    check("poisson_ratio", nu, (0.0..0.5).contains(&nu), "must be in [0, 0.5)")
}

/// Lamé parameters `(μ, λ)` \[Pa\] of linear elasticity from Young's modulus and Poisson's ratio.
pub fn lame_from_young_poisson(young_modulus: f64, poisson_ratio: f64) -> (f64, f64) {
    let mu = young_modulus / (2.0 * (1.0 + poisson_ratio));
    let lambda = young_modulus * poisson_ratio / ((1.0 + poisson_ratio) * (1.0 - 2.0 * poisson_ratio));
    (mu, lambda)
}

/// Stable neo-Hookean solid (without the log term): the default soft material.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StableNeoHookean {
    /// Young's modulus \[Pa\].
    pub young_modulus: f64,
    /// Poisson's ratio \[-\], in [0, 0.5).
    pub poisson_ratio: f64,
}

impl StableNeoHookean {
    /// From Young's modulus \[Pa\] and Poisson's ratio \[-\].
    pub fn from_young_poisson(young_modulus: f64, poisson_ratio: f64) -> Self {
        Self { young_modulus, poisson_ratio }
    }

    /// The energy's `(μ, λ)`, chosen so that small strains reproduce linear elasticity with the
    /// given `E, ν`: linearising ψ at `F = I` gives shear modulus `μ` and Lamé `λ − μ`, so
    /// `μ = μ_L` and `λ = λ_L + μ_L` (Smith et al. 2018 §3.4 re-parameterise the same way).
    /// This also keeps `α = 1 + μ/λ` finite at ν = 0.
    pub fn lame(&self) -> (f64, f64) {
        let (mu, lambda) = lame_from_young_poisson(self.young_modulus, self.poisson_ratio);
        (mu, lambda + mu)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), MaterialError> {
        check_young_poisson(self.young_modulus, self.poisson_ratio)
    }
}

/// Saint Venant–Kirchhoff solid.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StVK {
    /// Young's modulus \[Pa\].
    pub young_modulus: f64,
    /// Poisson's ratio \[-\], in [0, 0.5).
    pub poisson_ratio: f64,
}

impl StVK {
    /// From Young's modulus \[Pa\] and Poisson's ratio \[-\].
    pub fn from_young_poisson(young_modulus: f64, poisson_ratio: f64) -> Self {
        Self { young_modulus, poisson_ratio }
    }

    /// Lamé parameters `(μ, λ)` \[Pa\].
    pub fn lame(&self) -> (f64, f64) {
        lame_from_young_poisson(self.young_modulus, self.poisson_ratio)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), MaterialError> {
        check_young_poisson(self.young_modulus, self.poisson_ratio)
    }
}

/// A solid (tet) material.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SolidMaterial {
    /// Stable neo-Hookean.
    StableNeoHookean(StableNeoHookean),
    /// Saint Venant–Kirchhoff.
    StVK(StVK),
}

/// A tet's elastic energy and its derivatives in f64, for analysis and reference solutions (the
/// solver evaluates the same energies in f32). `rest` and `x` are the tet's four vertices at
/// rest and now \[m\]; `None` when the rest shape has no volume.
impl SolidMaterial {
    /// Elastic energy \[J\].
    pub fn tet_energy(&self, rest: &[DVec3; 4], x: &[DVec3; 4]) -> Option<f64> {
        let (r, (mu, lambda)) = (TetRest::<f64>::new(*rest)?, self.energy_parameters());
        Some(match self {
            Self::StableNeoHookean(_) => stable_neo_hookean::element_energy::<f64>(x, &r, mu, lambda),
            Self::StVK(_) => stvk::element_energy::<f64>(x, &r, mu, lambda),
        })
    }

    /// The energy's gradient with respect to each vertex \[N\] (minus the elastic forces).
    pub fn tet_gradient(&self, rest: &[DVec3; 4], x: &[DVec3; 4]) -> Option<[DVec3; 4]> {
        let (r, (mu, lambda)) = (TetRest::<f64>::new(*rest)?, self.energy_parameters());
        Some(match self {
            Self::StableNeoHookean(_) => stable_neo_hookean::element_gradient::<f64>(x, &r, mu, lambda),
            Self::StVK(_) => stvk::element_gradient::<f64>(x, &r, mu, lambda),
        })
    }

    /// The energy's Hessian as 3×3 blocks `∂²E/∂x_a∂x_b` \[N/m\], exact (not projected onto
    /// positive semi-definite matrices).
    pub fn tet_hessian(&self, rest: &[DVec3; 4], x: &[DVec3; 4]) -> Option<[[DMat3; 4]; 4]> {
        let (r, (mu, lambda)) = (TetRest::<f64>::new(*rest)?, self.energy_parameters());
        Some(match self {
            Self::StableNeoHookean(_) => stable_neo_hookean::element_hessian::<f64>(x, &r, mu, lambda),
            Self::StVK(_) => stvk::element_hessian::<f64>(x, &r, mu, lambda),
        })
    }
}

impl From<StableNeoHookean> for SolidMaterial {
    fn from(m: StableNeoHookean) -> Self {
        Self::StableNeoHookean(m)
    }
}

impl From<StVK> for SolidMaterial {
    fn from(m: StVK) -> Self {
        Self::StVK(m)
    }
}

impl SolidMaterial {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), MaterialError> {
        match self {
            Self::StableNeoHookean(m) => m.validate(),
            Self::StVK(m) => m.validate(),
        }
    }

    /// `(μ, λ)` as the energy uses them \[Pa\].
    pub fn energy_parameters(&self) -> (f64, f64) {
        match self {
            Self::StableNeoHookean(m) => m.lame(),
            Self::StVK(m) => m.lame(),
        }
    }

    /// Young's modulus \[Pa\].
    pub fn young_modulus(&self) -> f64 {
        match self {
            Self::StableNeoHookean(m) => m.young_modulus,
            Self::StVK(m) => m.young_modulus,
        }
    }

    /// The model's id in the packed state's material records ([`MODEL_STABLE_NEO_HOOKEAN`],
    /// [`MODEL_STVK`]).
    pub(crate) fn model_id(&self) -> u32 {
        match self {
            Self::StableNeoHookean(_) => MODEL_STABLE_NEO_HOOKEAN,
            Self::StVK(_) => MODEL_STVK,
        }
    }
}

/// Cloth: StVK membrane in plane stress plus dihedral bending.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ClothMaterial {
    /// Young's modulus of the fabric \[Pa\].
    pub young_modulus: f64,
    /// Poisson's ratio \[-\], in [0, 0.5).
    pub poisson_ratio: f64,
    /// Thickness \[m\].
    pub thickness: f64,
    /// Bending stiffness `D` \[N·m\]; `None` means the plate value `E t³ / (12 (1 − ν²))`.
    pub bending_stiffness: Option<f64>,
}

impl ClothMaterial {
    /// From Young's modulus \[Pa\], Poisson's ratio \[-\] and thickness \[m\]; plate bending stiffness.
    pub fn new(young_modulus: f64, poisson_ratio: f64, thickness: f64) -> Self {
        Self { young_modulus, poisson_ratio, thickness, bending_stiffness: None }
    }

    /// Overrides the bending stiffness `D` \[N·m\].
    pub fn with_bending_stiffness(mut self, d: f64) -> Self {
        self.bending_stiffness = Some(d);
        self
    }

    /// Membrane `(μ, λ)` \[Pa\] in plane stress: `λ = Eν/(1 − ν²)`.
    pub fn membrane_lame(&self) -> (f64, f64) {
        let (e, nu) = (self.young_modulus, self.poisson_ratio);
        (e / (2.0 * (1.0 + nu)), e * nu / (1.0 - nu * nu))
    }

    /// Bending stiffness `D` \[N·m\].
    pub fn bending(&self) -> f64 {
        let (e, nu, t) = (self.young_modulus, self.poisson_ratio, self.thickness);
        self.bending_stiffness.unwrap_or(e * t * t * t / (12.0 * (1.0 - nu * nu)))
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), MaterialError> {
        check_young_poisson(self.young_modulus, self.poisson_ratio)?;
        check("thickness", self.thickness, self.thickness > 0.0, "must be finite and > 0 m")?;
        if let Some(d) = self.bending_stiffness {
            check("bending_stiffness", d, d >= 0.0, "must be finite and ≥ 0 N·m")?;
        }
        Ok(())
    }
}
