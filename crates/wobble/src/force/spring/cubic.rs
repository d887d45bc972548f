//! 000's full cubic law with constraint-based parameters (physics notes §3).

use super::SpringError;

/// The full cubic law with constraint-based parameters (notes §3): g(L) = 0,
/// g'(L) = k, g'(a1 L) = K1, g'(a2 L) = K2, with K1 and K2 held as multiples of k.
///
/// The coefficients are solved once for L = 1, k = 1 ([`CubicLaw::unit`]); for a
/// spring of rest length L and stiffness k they scale as a = k û₀/L², b = k û₁/L,
/// c = k û₂, d = k L û₃ ([`CubicLaw::coefficients`]), which satisfies the same four
/// constraints exactly. So springs of any rest length share one law, and changing a
/// spring's stiffness live scales K1 and K2 with it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicLaw {
    /// Stretch ratio a1 (> 1) where the slope is K1.
    pub a1: f64,
    /// K1 / k.
    pub k1_ratio: f64,
    /// Compression ratio a2 (in (0, 1)) where the slope is K2.
    pub a2: f64,
    /// K2 / k.
    pub k2_ratio: f64,
    /// Factor on b and d in the Jacobian only (default [`DEFAULT_JACOBIAN_DAMPING`];
    /// 1 switches it off).
    pub jacobian_damping: f64,
    /// Coefficients (a, b, c, d) for L = 1 m, k = 1 N/m.
    pub unit: [f64; 4],
}

/// Default Jacobian damping factor on the cubic law's b and d (000 §4.1).
pub const DEFAULT_JACOBIAN_DAMPING: f64 = 0.99;

impl CubicLaw {
    /// Solves the law for slope `k1` (N/m) at stretch `a1` and `k2` at compression
    /// `a2`, relative to the stiffness `k` (N/m) the springs will have; rejects
    /// parameters that make eq. 8 singular or the law inconsistent.
    pub fn new(k: f64, a1: f64, k1: f64, a2: f64, k2: f64, jacobian_damping: f64) -> Result<Self, SpringError> {
        let bad = |why: String| Err(SpringError::BadLaw { why });
        for (name, v) in [("k", k), ("k1", k1), ("k2", k2)] {
            if !(v.is_finite() && v > 0.0) {
                return bad(format!("cubic law: {name} = {v} N/m must be positive and finite"));
            }
        }
        if !(a1.is_finite() && a1 > 1.0) {
            return bad(format!("cubic law: a1 = {a1} must be a stretch ratio > 1"));
        }
        if !(a2.is_finite() && a2 > 0.0 && a2 < 1.0) {
            return bad(format!("cubic law: a2 = {a2} must be a compression ratio in (0, 1)"));
        }
        if !(jacobian_damping.is_finite() && jacobian_damping > 0.0 && jacobian_damping <= 1.0) {
            return bad(format!("cubic law: jacobian_damping = {jacobian_damping} must lie in (0, 1]"));
        }
        let (k1_ratio, k2_ratio) = (k1 / k, k2 / k);
        let unit = solve_cubic(1.0, 1.0, a1, k1_ratio, a2, k2_ratio)?;
        Ok(Self { a1, k1_ratio, a2, k2_ratio, jacobian_damping, unit })
    }

    /// (a, b, c, d) for rest length `rest` (m) and stiffness `k` (N/m): g(r) = a r³ +
    /// b r² + c r + d in N with r in m.
    #[must_use]
    pub fn coefficients(&self, rest: f64, k: f64) -> [f64; 4] {
        let u = self.unit;
        [k * u[0] / (rest * rest), k * u[1] / rest, k * u[2], k * u[3] * rest]
    }

    /// g(l), as the kernel computes it: k L ĝ(l/L) by Horner's rule.
    #[inline(always)]
    pub(super) fn g(&self, l: f64, rest: f64, k: f64) -> f64 {
        let u = &self.unit;
        let rho = l / rest;
        k * rest * (((u[0] * rho + u[1]) * rho + u[2]) * rho + u[3])
    }

    /// (g, g') with b and d scaled by `bd` (1 for the force itself).
    pub(super) fn magnitude(&self, r: f64, rest: f64, k: f64, bd: f64) -> (f64, f64) {
        let u = self.unit;
        let (u1, u3) = (u[1] * bd, u[3] * bd);
        let rho = r / rest;
        let g = k * rest * (((u[0] * rho + u1) * rho + u[2]) * rho + u3);
        let dg = k * ((3.0 * u[0] * rho + 2.0 * u1) * rho + u[2]);
        (g, dg)
    }
}

/// Solves eq. 8 of 000 (notes §3) for the cubic's (a, b, c, d): g(L) = 0, g'(L) = K,
/// g'(a1 L) = K1, g'(a2 L) = K2, by Gaussian elimination with partial pivoting.
/// Fails with [`SpringError::BadLaw`] when the system is singular (a1 = a2, or
/// either equal to 1) or the solution is not finite.
pub fn solve_cubic(l: f64, k: f64, a1: f64, k1: f64, a2: f64, k2: f64) -> Result<[f64; 4], SpringError> {
    if a1 == a2 || a1 == 1.0 || a2 == 1.0 || l.is_nan() || l <= 0.0 {
        return Err(SpringError::BadLaw {
            why: format!(
                "cubic law: the constraints are singular for L = {l}, a1 = {a1}, a2 = {a2} (need L > 0 and a1, a2 and 1 distinct)"
            ),
        });
    }
    let slope = |r: f64| [3.0 * r * r, 2.0 * r, 1.0, 0.0];
    let mut m = [[l * l * l, l * l, l, 1.0], slope(l), slope(a1 * l), slope(a2 * l)];
    let mut rhs = [0.0, k, k1, k2];
    let scale = m.iter().flatten().fold(0.0f64, |s, v| s.max(v.abs()));
    for col in 0..4 {
        let pivot = (col..4).max_by(|&i, &j| m[i][col].abs().total_cmp(&m[j][col].abs())).unwrap_or(col);
        if m[pivot][col].is_nan() || m[pivot][col].abs() <= 1e-13 * scale {
            return Err(SpringError::BadLaw {
                why: format!("cubic law: the constraints are singular for L = {l}, a1 = {a1}, a2 = {a2}"),
            });
        }
        m.swap(col, pivot);
        rhs.swap(col, pivot);
        for row in col + 1..4 {
            let f = m[row][col] / m[col][col];
            let pivot_row = m[col];
            for (dst, src) in m[row].iter_mut().zip(pivot_row).skip(col) {
                *dst -= f * src;
            }
            rhs[row] -= f * rhs[col];
        }
    }
    let mut out = [0.0; 4];
    for row in (0..4).rev() {
        let tail: f64 = (row + 1..4).map(|c| m[row][c] * out[c]).sum();
        out[row] = (rhs[row] - tail) / m[row][row];
    }
    if out.iter().all(|v| v.is_finite()) {
        Ok(out)
    } else {
        Err(SpringError::BadLaw { why: format!("cubic law: no finite solution for a1 = {a1}, a2 = {a2}") })
    }
}
