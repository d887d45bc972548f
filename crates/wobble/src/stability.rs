//! The stable time-step estimate.
//!
//! Each force term bounds, per particle i, the rows of M^{-1/2} K M^{-1/2} and
//! M^{-1/2} C M^{-1/2} (Gershgorin): λ_i ≥ the squared angular frequencies and γ_i ≥
//! the damping rates of the modes centred on i. Each particle's worst mode is then
//! the damped oscillator x'' + γ x' + ω² x = 0 with ω² = λ_i, γ = γ_i, and the
//! estimate is the largest h for which every method keeps that oscillator bounded:
//!
//! * symplectic Euler and Verlet: h² ω² + 2 h γ < 4 (Jury's test on the step
//!   matrix), i.e. h < (√(γ² + 4ω²) − γ)/ω²;
//! * explicit Runge–Kutta methods of order p = 1, 2, 4 (Euler, Heun and midpoint,
//!   RK4): |Σ_{k≤p} (hμ)^k/k!| ≤ 1 at both roots μ of μ² + γ μ + ω² = 0, found by
//!   bisection. Euler, Heun and midpoint are unstable at every step when γ = 0.
//! * semi-implicit (002): symplectic Euler's limit, conservatively. Explicit
//!   springs with damping through C/(2h) would be stable up to h ω = 2, but the
//!   grids' K(r) is a secant stiffness whose coefficients α vanish at the rest
//!   shape (so small oscillations are stepped explicitly) and turn negative under
//!   compression (feeding energy in); the implicit part helps only in tension;
//! * implicit Euler: A-stable, so no limit (`f64::INFINITY`); its linearisation can
//!   still fail on strongly non-linear forces, which the CG solve reports.
//!
//! Gershgorin bounds are upper bounds on λ, so the estimate errs on the safe side
//! for stiffness; for damping it is an estimate, not a guarantee.

use crate::force::{ForceContext, ForceTerm};
use crate::integrate::IntegratorKind;

/// Per-particle stiffness and damping bounds and the resulting estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct Stability {
    /// λ_i bound per particle, 1/s² (ω² of its stiffest mode).
    pub lambda: Vec<f64>,
    /// γ_i bound per particle, 1/s.
    pub gamma: Vec<f64>,
}

impl Stability {
    /// Highest angular frequency bound, rad/s, and its particle.
    #[must_use]
    pub fn omega_max(&self) -> (f64, usize) {
        self.lambda.iter().enumerate().fold((0.0, 0), |(best, bi), (i, &l)| {
            let w = l.sqrt();
            if w > best { (w, i) } else { (best, bi) }
        })
    }

    /// The estimate for `kind`, s: `None` when the method is unstable at any step
    /// for some undamped mode; `Some(f64::INFINITY)` when nothing is stiff.
    #[must_use]
    pub fn dt_for(&self, kind: IntegratorKind) -> Option<f64> {
        let mut h_min = f64::INFINITY;
        for (&l, &g) in self.lambda.iter().zip(&self.gamma) {
            if l <= 0.0 && g <= 0.0 {
                continue;
            }
            let h = match kind {
                IntegratorKind::SymplecticEuler | IntegratorKind::Verlet => symplectic_limit(l, g),
                // Conservative: symplectic Euler's limit. For springs the scheme's own
                // edge is h ω = 2 (step matrix trace (2 − h²ω²)/(1 + hγ/2),
                // determinant (1 − hγ/2)/(1 + hγ/2); tests/stability.rs), but the
                // grids' secant K(r) vanishes at rest and feeds energy in under
                // compression, and measured runs fail below 2/ω.
                IntegratorKind::SemiImplicit => symplectic_limit(l, g),
                IntegratorKind::ExplicitEuler => rk_limit(l, g, 1)?,
                IntegratorKind::Heun | IntegratorKind::Midpoint => rk_limit(l, g, 2)?,
                IntegratorKind::Rk4 => rk_limit(l, g, 4)?,
                // Backward Euler is A-stable: no step limit for linear damped modes.
                IntegratorKind::ImplicitEuler => f64::INFINITY,
            };
            h_min = h_min.min(h);
        }
        Some(h_min)
    }
}

/// h < (√(γ² + 4ω²) − γ)/ω² (γ/… limit when ω = 0: h γ < 2).
fn symplectic_limit(lambda: f64, gamma: f64) -> f64 {
    if lambda <= 0.0 {
        return 2.0 / gamma;
    }
    ((gamma * gamma + 4.0 * lambda).sqrt() - gamma) / lambda
}

/// A complex number, just enough for amplification factors.
#[derive(Clone, Copy, Debug)]
struct Complex {
    re: f64,
    im: f64,
}

impl Complex {
    fn mul(self, o: Complex) -> Complex {
        Complex { re: self.re * o.re - self.im * o.im, im: self.re * o.im + self.im * o.re }
    }
    fn scale(self, s: f64) -> Complex {
        Complex { re: self.re * s, im: self.im * s }
    }
}

/// |R(z)|² − 1 for R(z) = Σ_{k≤order} z^k / k!.
///
/// For |z| ≥ 1 it is computed as 2 Re w + |w|² with w = R − 1. For smaller |z| that
/// form cancels: on the imaginary axis its O(|z|²) terms cancel down to the true
/// O(|z|^{order+2}) growth (−y⁶/72 for RK4), which rounding swamps below |z| ≈ 1e-3.
/// There the exact identity |R|² − 1 = (e^{2x} − 1) − 2 Re(conj(e^z) T) + |T|², with
/// T = e^z − R = Σ_{k>order} z^k / k! the truncation tail, is used instead: every
/// term is small and computed to full relative accuracy.
fn rk_growth(z: Complex, order: u32) -> f64 {
    let mut term = Complex { re: 1.0, im: 0.0 };
    let mut w = Complex { re: 0.0, im: 0.0 };
    for k in 1..=order {
        term = term.mul(z).scale(1.0 / f64::from(k));
        w = Complex { re: w.re + term.re, im: w.im + term.im };
    }
    if z.re * z.re + z.im * z.im >= 1.0 {
        return 2.0 * w.re + (w.re * w.re + w.im * w.im);
    }
    // |z| < 1: twenty tail terms reach below 1/(order + 20)! of the first.
    let mut tail = Complex { re: 0.0, im: 0.0 };
    for k in order + 1..=order + 20 {
        term = term.mul(z).scale(1.0 / f64::from(k));
        tail = Complex { re: tail.re + term.re, im: tail.im + term.im };
    }
    let ex = z.re.exp();
    let (ez_re, ez_im) = (ex * z.im.cos(), ex * z.im.sin());
    (2.0 * z.re).exp_m1() - 2.0 * (ez_re * tail.re + ez_im * tail.im) + (tail.re * tail.re + tail.im * tail.im)
}

/// Largest h with |R(h μ)| ≤ 1 at both roots μ of μ² + γμ + λ = 0, or `None` when
/// even tiny steps grow (undamped modes for orders 1 and 2).
fn rk_limit(lambda: f64, gamma: f64, order: u32) -> Option<f64> {
    let d = gamma * gamma - 4.0 * lambda;
    // Roots of μ² + γμ + λ: a real pair, or a conjugate pair (same |R|, so one).
    let roots = if d >= 0.0 {
        let s = d.sqrt();
        [Complex { re: 0.5 * (-gamma + s), im: 0.0 }, Complex { re: 0.5 * (-gamma - s), im: 0.0 }]
    } else {
        let c = Complex { re: -0.5 * gamma, im: 0.5 * (-d).sqrt() };
        [c, c]
    };
    let stable = |h: f64| roots.iter().all(|&mu| rk_growth(mu.scale(h), order) <= 0.0);
    let scale = 1.0 / lambda.sqrt().max(gamma).max(1e-300);
    // Scan up from a tiny step to find the first unstable one, then bisect.
    let mut lo = 1e-6 * scale;
    if !stable(lo) {
        return None;
    }
    let mut hi = lo;
    while stable(hi) {
        lo = hi;
        hi *= 1.5;
        if hi > 1e6 * scale {
            return Some(f64::INFINITY);
        }
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if stable(mid) { lo = mid } else { hi = mid }
    }
    Some(lo)
}

/// Gathers the bounds of `terms` at `ctx`.
pub fn estimate<'a>(ctx: &ForceContext<'_>, terms: impl Iterator<Item = &'a dyn ForceTerm>) -> Stability {
    let n = ctx.state.len();
    let (mut lambda, mut gamma) = (vec![0.0; n], vec![0.0; n]);
    for t in terms {
        t.add_stiffness_bound(ctx, &mut lambda, &mut gamma);
    }
    Stability { lambda, gamma }
}
