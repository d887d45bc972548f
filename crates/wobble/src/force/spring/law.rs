//! The spring laws: linear and two-term StVK inline, the full cubic in `cubic.rs`;
//! and the Jacobian blocks of a spring of any law.

use glam::{DMat3, DVec3};

use super::CubicLaw;

/// How a spring's force depends on its length.
///
/// Every law is written in the rest-length-free form g(r) = k L ĝ(r/L) with ĝ a
/// polynomial fixed by dimensionless parameters, so one law serves springs of any
/// rest length L and stiffness k (a cloth's structural and shear springs share it),
/// and g'(L) = k for every law.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum SpringLaw {
    /// Hooke: g(r) = k (r − L) (physics notes §1).
    #[default]
    Linear,
    /// Two-term St Venant–Kirchhoff: g(r) = k/(2L²) r³ − (k/2) r (notes §2). Soft in
    /// compression: it pushes back less and less below L/√3.
    StVK,
    /// Full cubic g(r) = a r³ + b r² + c r + d from four slope constraints (notes §3).
    Cubic(CubicLaw),
}

impl SpringLaw {
    /// Signed force magnitude g(r) (N, positive when stretched) and its derivative
    /// g'(r) (N/m) for rest length `rest` (m) and stiffness `k` (N/m).
    #[inline]
    #[must_use]
    pub fn magnitude(&self, r: f64, rest: f64, k: f64) -> (f64, f64) {
        match self {
            SpringLaw::Linear => (k * (r - rest), k),
            SpringLaw::StVK => (stvk_g(r, rest, k), 0.5 * k * (3.0 * (r / rest) * (r / rest) - 1.0)),
            SpringLaw::Cubic(c) => c.magnitude(r, rest, k, 1.0),
        }
    }

    /// g and g' as the Jacobian sees them: for the cubic law with b and d scaled by
    /// its Jacobian damping factor (notes §3, "Jacobian damping"); otherwise equal to
    /// [`SpringLaw::magnitude`].
    #[inline]
    #[must_use]
    pub fn jacobian_magnitude(&self, r: f64, rest: f64, k: f64) -> (f64, f64) {
        match self {
            SpringLaw::Cubic(c) => c.magnitude(r, rest, k, c.jacobian_damping),
            other => other.magnitude(r, rest, k),
        }
    }

    /// Stored energy ∫_L^r g, J.
    #[must_use]
    pub fn energy(&self, r: f64, rest: f64, k: f64) -> f64 {
        match self {
            SpringLaw::Linear => 0.5 * k * (r - rest) * (r - rest),
            SpringLaw::StVK => unit_cubic_energy([0.5, 0.0, -0.5, 0.0], r, rest, k),
            SpringLaw::Cubic(c) => unit_cubic_energy(c.unit, r, rest, k),
        }
    }

    /// Short name for reports and scene files.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            SpringLaw::Linear => "linear",
            SpringLaw::StVK => "stvk",
            SpringLaw::Cubic(_) => "cubic",
        }
    }

    /// The law's force magnitude alone, exactly as the kernel computes it.
    #[inline(always)]
    pub(super) fn g(&self, l: f64, rest: f64, k: f64) -> f64 {
        match self {
            SpringLaw::Linear => k * (l - rest),
            SpringLaw::StVK => stvk_g(l, rest, k),
            SpringLaw::Cubic(c) => c.g(l, rest, k),
        }
    }
}

/// k L (ρ³ − ρ)/2 with ρ = l/L: the StVK magnitude, as the kernel computes it.
#[inline(always)]
pub(super) fn stvk_g(l: f64, rest: f64, k: f64) -> f64 {
    let rho = l / rest;
    k * rest * (0.5 * (rho * rho * rho - rho))
}

/// ∫_L^r k L ĝ(r'/L) dr' for ĝ(ρ) = u0 ρ³ + u1 ρ² + u2 ρ + u3.
fn unit_cubic_energy(u: [f64; 4], r: f64, rest: f64, k: f64) -> f64 {
    let rho = r / rest;
    let p = |n: i32| (rho.powi(n) - 1.0) / f64::from(n);
    k * rest * rest * (u[0] * p(4) + u[1] * p(3) + u[2] * p(2) + u[3] * p(1))
}

/// Jacobian blocks of one spring's force on its first end with respect to that end:
/// (∂f_a/∂x_a, ∂f_a/∂v_a). For any law, with g and g' its magnitude and slope,
/// ∂f_a/∂x_a = −[ (g/r)(I − n nᵀ) + g' n nᵀ ] (notes §1 and §3 with F = g n); the
/// damping's dependence on position is left out, as in Baraff–Witkin, which keeps the
/// matrix symmetric. ∂f_a/∂v_a = −c n nᵀ. The cubic law's Jacobian damping (b and d
/// scaled, notes §3) applies here and only here.
///
/// Coincident ends (r below the smallest normal number) have no direction n; the
/// force there is zero (see the kernel), and so are both blocks.
#[must_use]
pub fn spring_blocks(law: SpringLaw, xa: DVec3, xb: DVec3, rest: f64, k: f64, c: f64) -> (DMat3, DMat3) {
    let d = xb - xa;
    let r = d.length();
    if r < f64::MIN_POSITIVE {
        return (DMat3::ZERO, DMat3::ZERO);
    }
    let n = d / r;
    let nn = DMat3::from_cols(n * n.x, n * n.y, n * n.z);
    let (g, dg) = law.jacobian_magnitude(r, rest, k);
    let kx = -((DMat3::IDENTITY - nn) * (g / r) + nn * dg);
    let kv = nn * -c;
    (kx, kv)
}

/// [`spring_blocks`] with the stiffness part made negative semi-definite: the
/// transverse tension g/r and the slope g' are clamped at zero, which drops the
/// terms a compressed spring (or a law with negative slope, StVK below L/√3)
/// contributes with the wrong sign. For [`JacobianSink::definite`](crate::force::JacobianSink::definite) sinks.
/// Zero for coincident ends, as [`spring_blocks`].
#[must_use]
pub fn spring_blocks_definite(law: SpringLaw, xa: DVec3, xb: DVec3, rest: f64, k: f64, c: f64) -> (DMat3, DMat3) {
    let d = xb - xa;
    let r = d.length();
    if r < f64::MIN_POSITIVE {
        return (DMat3::ZERO, DMat3::ZERO);
    }
    let n = d / r;
    let nn = DMat3::from_cols(n * n.x, n * n.y, n * n.z);
    let (g, dg) = law.jacobian_magnitude(r, rest, k);
    let kx = -((DMat3::IDENTITY - nn) * (g / r).max(0.0) + nn * dg.max(0.0));
    (kx, nn * -c)
}
