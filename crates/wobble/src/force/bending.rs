//! Bending of a triangle surface by its dihedral angles (a discrete shell, after
//! Grinspun, Hirani, Desbrun and Schröder 2003): every edge shared by two
//! triangles is a hinge with energy
//!
//! ```text
//! E = ½ k (θ − θ̄)²,   k = κ · 3 |ē|² / (Ā₁ + Ā₂)
//! ```
//!
//! θ the signed angle between the two triangles' normals (positive where the
//! surface is convex, seen from the side its normals point to), θ̄ its value at
//! rest, κ a bending modulus (J) and |ē|, Ā₁, Ā₂ the edge's length and the
//! triangles' areas at rest. Each edge stands for a third of its triangles' area,
//! over which it spreads its curvature θ|ē|/Ā; where every edge bends alike (a
//! sphere meshed with near-equilateral triangles) the sum approximates
//! κ/2 ∫ (2H − 2H̄)² dA, and a mesh of one kind refined keeps its energy, so κ is
//! a material value (a strip bent across, where one edge in three bends, stores
//! three times the smooth value at every resolution: see the tests). A damping
//! c = η · 3 |ē|² / (Ā₁ + Ā₂) acts on θ̇.
//!
//! # Gradient
//! A hinge is (x₁, x₂, x₃, x₄): the edge from x₁ to x₂, triangle (x₁, x₂, x₃) and
//! triangle (x₂, x₁, x₄), both wound so their normals n₁, n₂ point outward. With
//! h₃, h₄ the wings' distances from the edge's line and α₃, α₄ the positions of
//! their feet along the edge (0 at x₁, 1 at x₂):
//!
//! ```text
//! ∂θ/∂x₃ = −n₁ / h₃,   ∂θ/∂x₄ = −n₂ / h₄,
//! ∂θ/∂x₁ = −(1 − α₃) ∂θ/∂x₃ − (1 − α₄) ∂θ/∂x₄,   ∂θ/∂x₂ = −α₃ ∂θ/∂x₃ − α₄ ∂θ/∂x₄
//! ```
//!
//! (a wing moved along its own normal flattens the hinge; the edge's ends take
//! the reaction by the lever rule, so the four sum to zero and carry no torque).
//! The force is f = −(k (θ − θ̄) + c θ̇) ∇θ, θ̇ = ∇θ · v.
//!
//! # Jacobian
//! ∂f/∂v = −c ∇θ ∇θᵀ exactly. ∂f/∂x = −k (∇θ ∇θᵀ + (θ − θ̄) ∇²θ); the term adds
//! its Gauss–Newton part −k ∇θ ∇θᵀ, exact at rest (θ = θ̄) and always negative
//! semi-definite, which keeps implicit Euler's matrix symmetric positive definite
//! for bent states too. The tests check the force against finite differences of
//! the energy everywhere, and the Jacobian against finite differences of the
//! force at rest.

use glam::{DMat3, DVec3};

use super::{ForceContext, ForceTerm, JacobianSink, Loads};
use crate::model::Vec3s;

/// One hinge: particles (edge start, edge end, wing of the first triangle, wing
/// of the second), rest angle, stiffness and damping.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hinge {
    /// x₁, x₂ (the edge), x₃, x₄ (the wings).
    pub p: [u32; 4],
    /// θ̄, rad.
    pub rest: f64,
    /// k, N m (per radian²).
    pub stiffness: f64,
    /// c, N m s.
    pub damping: f64,
}

/// Dihedral-angle bending of one body's surface. See the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct Bending {
    name: String,
    /// The hinges.
    pub hinges: Vec<Hinge>,
}

/// θ and ∇θ of the hinge `p` at `x` (`None` for a degenerate hinge: a zero-area
/// triangle or a zero-length edge).
#[must_use]
pub fn angle_and_gradient(x: &Vec3s, p: [u32; 4]) -> Option<(f64, [DVec3; 4])> {
    let [x1, x2, x3, x4] = x.gather(&p);
    let e = x2 - x1;
    let len2 = e.length_squared();
    let n1 = e.cross(x3 - x1);
    let n2 = (x1 - x2).cross(x4 - x2);
    let (a1, a2) = (n1.length_squared(), n2.length_squared());
    if len2 == 0.0 || a1 == 0.0 || a2 == 0.0 {
        return None;
    }
    let len = len2.sqrt();
    let (u1, u2) = (n1 / a1.sqrt(), n2 / a2.sqrt());
    let theta = u1.cross(u2).dot(e / len).atan2(u1.dot(u2));
    // n/h = N |e| / |N|² with N the unnormalised normal (|N| = |e| h).
    let g3 = -n1 * (len / a1);
    let g4 = -n2 * (len / a2);
    let alpha3 = (x3 - x1).dot(e) / len2;
    let alpha4 = (x4 - x1).dot(e) / len2;
    let g1 = -(g3 * (1.0 - alpha3) + g4 * (1.0 - alpha4));
    let g2 = -(g3 * alpha3 + g4 * alpha4);
    Some((theta, [g1, g2, g3, g4]))
}

/// `a − b` wrapped into (−π, π].
fn wrapped(a: f64, b: f64) -> f64 {
    let d = a - b;
    d - std::f64::consts::TAU * ((d + std::f64::consts::PI) / std::f64::consts::TAU).floor()
}

impl Bending {
    /// Hinges of every interior edge of `triangles` (each edge shared by exactly
    /// two triangles wound consistently), at rest at `x`, with bending modulus
    /// `kappa` (J) and bending viscosity `eta` (J s) scaled per hinge as the module
    /// docs say. Degenerate hinges are left out.
    #[must_use]
    pub fn new(body: &str, triangles: &[[u32; 3]], x: &Vec3s, kappa: f64, eta: f64) -> Self {
        let mut wing: std::collections::HashMap<(u32, u32), u32> = std::collections::HashMap::new();
        for t in triangles {
            for k in 0..3 {
                wing.insert((t[k], t[(k + 1) % 3]), t[(k + 2) % 3]);
            }
        }
        let mut hinges = Vec::new();
        for t in triangles {
            for k in 0..3 {
                let (a, b, c) = (t[k], t[(k + 1) % 3], t[(k + 2) % 3]);
                // Each interior edge once: from its smaller end, where the other
                // triangle runs it the other way.
                let Some(&d) = wing.get(&(b, a)).filter(|_| a < b) else { continue };
                let p = [a, b, c, d];
                let Some((theta, _)) = angle_and_gradient(x, p) else { continue };
                let [xa, xb, xc, xd] = x.gather(&p);
                let area = 0.5 * ((xb - xa).cross(xc - xa).length() + (xa - xb).cross(xd - xb).length());
                let w = 3.0 * (xb - xa).length_squared() / area;
                hinges.push(Hinge { p, rest: theta, stiffness: kappa * w, damping: eta * w });
            }
        }
        Self { name: format!("bending-{body}"), hinges }
    }
}

impl ForceTerm for Bending {
    fn name(&self) -> &str {
        &self.name
    }

    fn add_forces(&mut self, ctx: &ForceContext<'_>, out: &mut Loads) {
        let (x, v) = (&ctx.state.x, &ctx.state.v);
        for h in &self.hinges {
            let Some((theta, g)) = angle_and_gradient(x, h.p) else { continue };
            let rate: f64 = (0..4).map(|k| g[k].dot(v.get(h.p[k] as usize))).sum();
            let s = -(h.stiffness * wrapped(theta, h.rest) + h.damping * rate);
            for (&p, g) in h.p.iter().zip(g) {
                out.f.add(p as usize, g * s);
            }
        }
    }

    fn potential_energy(&self, ctx: &ForceContext<'_>) -> f64 {
        self.hinges
            .iter()
            .filter_map(|h| {
                angle_and_gradient(&ctx.state.x, h.p).map(|(t, _)| 0.5 * h.stiffness * wrapped(t, h.rest).powi(2))
            })
            .sum()
    }

    fn add_jacobian(&self, ctx: &ForceContext<'_>, sink: &mut dyn JacobianSink) {
        for h in &self.hinges {
            let Some((_, g)) = angle_and_gradient(&ctx.state.x, h.p) else { continue };
            for a in 0..4 {
                for b in 0..4 {
                    let ggt = DMat3::from_cols(g[a] * g[b].x, g[a] * g[b].y, g[a] * g[b].z);
                    let (i, j) = (h.p[a] as usize, h.p[b] as usize);
                    sink.add_dfdx(i, j, ggt * -h.stiffness);
                    if h.damping != 0.0 {
                        sink.add_dfdv(i, j, ggt * -h.damping);
                    }
                }
            }
        }
    }

    fn has_jacobian(&self) -> bool {
        true
    }

    fn add_stiffness_bound(&self, ctx: &ForceContext<'_>, k_row: &mut [f64], c_row: &mut [f64]) {
        let w = &ctx.particles.inv_mass;
        for h in &self.hinges {
            let Some((_, g)) = angle_and_gradient(&ctx.state.x, h.p) else { continue };
            // Row i of M^{-1/2} k g gᵀ M^{-1/2}, bounded by absolute values.
            let scaled: [f64; 4] = std::array::from_fn(|k| g[k].length() * w[h.p[k] as usize].sqrt());
            let total: f64 = scaled.iter().sum();
            for (&p, s) in h.p.iter().zip(scaled) {
                k_row[p as usize] += h.stiffness * s * total;
                c_row[p as usize] += h.damping * s * total;
            }
        }
    }

    fn counts(&self) -> Vec<(String, usize)> {
        vec![("bending hinges".to_owned(), self.hinges.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Particles, State};

    /// A bent hinge: edge along x, wings out along ±y, lowered by `drop`.
    fn hinge(drop: f64) -> Vec3s {
        Vec3s::from_vecs(&[
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 0.1, 0.05),
            DVec3::new(0.4, 0.9, -drop),
            DVec3::new(0.7, -1.1, -1.3 * drop),
        ])
    }

    fn context(x: &Vec3s, v: &Vec3s) -> (Particles, State) {
        let mut particles = Particles::default();
        for _ in 0..x.len() {
            particles.push(1.0, 0.0);
        }
        let mut state = State::default();
        for i in 0..x.len() {
            state.push(x.get(i), v.get(i));
        }
        (particles, state)
    }

    fn energy_force(term: &mut Bending, x: &Vec3s, v: &Vec3s) -> (f64, Loads) {
        let (particles, state) = context(x, v);
        let ctx = ForceContext { particles: &particles, state: &state, t: 0.0 };
        let mut loads = Loads::zeros(x.len());
        term.add_forces(&ctx, &mut loads);
        (term.potential_energy(&ctx), loads)
    }

    #[test]
    fn a_convex_hinge_has_a_positive_angle_and_a_flat_one_none() {
        let flat = Vec3s::from_vecs(&[DVec3::ZERO, DVec3::X, DVec3::new(0.5, 1.0, 0.0), DVec3::new(0.5, -1.0, 0.0)]);
        assert_eq!(angle_and_gradient(&flat, [0, 1, 2, 3]).unwrap().0, 0.0);
        // Triangles (x1, x2, x3) and (x2, x1, x4) face +z; lowering both wings makes
        // a roof, convex seen from above: θ = 2 atan(h / 1) for wings at unit
        // distance lowered by h.
        let h = 0.3;
        let roof = Vec3s::from_vecs(&[DVec3::ZERO, DVec3::X, DVec3::new(0.5, 1.0, -h), DVec3::new(0.5, -1.0, -h)]);
        let (theta, _) = angle_and_gradient(&roof, [0, 1, 2, 3]).unwrap();
        assert!((theta - 2.0 * h.atan()).abs() < 1e-14, "θ = {theta}");
    }

    #[test]
    fn forces_are_minus_the_energy_gradient_and_carry_no_net_force_or_torque() {
        let rest = hinge(0.1);
        let v = Vec3s::zeros(4);
        let mut term = Bending::new("b", &[[0, 1, 2], [1, 0, 3]], &rest, 0.7, 0.0);
        assert_eq!(term.hinges.len(), 1);
        let x = hinge(0.45);
        let (_, loads) = energy_force(&mut term, &x, &v);
        let (mut net, mut torque) = (DVec3::ZERO, DVec3::ZERO);
        for i in 0..4 {
            let f = loads.f.get(i);
            net += f;
            torque += x.get(i).cross(f);
            for axis in 0..3 {
                let step = 1e-6;
                let (mut xp, mut xm) = (x.clone(), x.clone());
                let mut d = DVec3::ZERO;
                d[axis] = step;
                xp.set(i, x.get(i) + d);
                xm.set(i, x.get(i) - d);
                let (ep, _) = energy_force(&mut term, &xp, &v);
                let (em, _) = energy_force(&mut term, &xm, &v);
                let fd = -(ep - em) / (2.0 * step);
                assert!(
                    (fd - f[axis]).abs() < 1e-7 * (1.0 + fd.abs()),
                    "particle {i} axis {axis}: {fd} vs {}",
                    f[axis]
                );
            }
        }
        assert!(net.length() < 1e-12 && torque.length() < 1e-12, "net {net}, torque {torque}");
    }

    /// The assembled blocks of the term at `x`, `v`.
    fn blocks(term: &Bending, x: &Vec3s, v: &Vec3s) -> (Vec<DMat3>, Vec<DMat3>) {
        struct Dense(Vec<DMat3>, Vec<DMat3>);
        impl JacobianSink for Dense {
            fn add_dfdx(&mut self, i: usize, j: usize, b: DMat3) {
                self.0[4 * i + j] += b;
            }
            fn add_dfdv(&mut self, i: usize, j: usize, b: DMat3) {
                self.1[4 * i + j] += b;
            }
        }
        let (particles, state) = context(x, v);
        let ctx = ForceContext { particles: &particles, state: &state, t: 0.0 };
        let mut sink = Dense(vec![DMat3::ZERO; 16], vec![DMat3::ZERO; 16]);
        term.add_jacobian(&ctx, &mut sink);
        (sink.0, sink.1)
    }

    #[test]
    fn the_jacobian_matches_finite_differences_of_the_force_at_rest_and_in_velocity() {
        let rest = hinge(0.2);
        let mut term = Bending::new("b", &[[0, 1, 2], [1, 0, 3]], &rest, 0.7, 0.3);
        let v = Vec3s::from_vecs(&[DVec3::new(0.1, -0.2, 0.3), DVec3::ZERO, DVec3::new(0.0, 0.4, -0.1), DVec3::X]);
        let (dfdx, dfdv) = blocks(&term, &rest, &v);
        let zero = Vec3s::zeros(4);
        for j in 0..4 {
            for axis in 0..3 {
                let step = 1e-6;
                let mut d = DVec3::ZERO;
                d[axis] = step;
                let (mut xp, mut xm) = (rest.clone(), rest.clone());
                xp.set(j, rest.get(j) + d);
                xm.set(j, rest.get(j) - d);
                let (_, fp) = energy_force(&mut term, &xp, &zero);
                let (_, fm) = energy_force(&mut term, &xm, &zero);
                let (mut vp, mut vm) = (v.clone(), v.clone());
                vp.set(j, v.get(j) + d);
                vm.set(j, v.get(j) - d);
                let (_, gp) = energy_force(&mut term, &rest, &vp);
                let (_, gm) = energy_force(&mut term, &rest, &vm);
                for i in 0..4 {
                    let fd_x = (fp.f.get(i) - fm.f.get(i)) / (2.0 * step);
                    let fd_v = (gp.f.get(i) - gm.f.get(i)) / (2.0 * step);
                    let (jx, jv) = (dfdx[4 * i + j].col(axis), dfdv[4 * i + j].col(axis));
                    assert!((fd_x - jx).length() < 1e-6, "∂f{i}/∂x{j}[{axis}]: {fd_x} vs {jx}");
                    assert!((fd_v - jv).length() < 1e-8, "∂f{i}/∂v{j}[{axis}]: {fd_v} vs {jv}");
                }
            }
        }
    }

    #[test]
    fn a_bent_strip_stores_the_same_energy_at_any_resolution() {
        // A strip of width 1 and length L = r φ, split into n quads across its
        // length, each quad into two triangles, bent into a cylinder arc of radius
        // r. Each of the n − 1 interior edges across the strip bends by θ = φ/n and
        // borders two triangles of area L/(2n) each; the quads' diagonals stay flat.
        // So E = (n − 1) · ½ κ (φ/n)² · 3 · 1² / (L/n) = 3 (n − 1)/n · ½ κ L / r²:
        // the smooth energy ½ κ ∫ (2H)² dA = ½ κ L / r² times 3 (n − 1)/n, the factor 3
        // because the formula gives each edge a third of its triangles' area while
        // here only one edge in three bends. The same for any n but the end hinge.
        let (r, angle, kappa) = (1.0, 1.0, 2.0);
        let energy = |n: usize| {
            let mut pts = Vec::new();
            for k in 0..=n {
                let phi = angle * k as f64 / n as f64;
                for z in [0.0, 1.0] {
                    pts.push(DVec3::new(r * phi.sin(), r * phi.cos(), z));
                }
            }
            let bent = Vec3s::from_vecs(&pts);
            let flat: Vec<DVec3> =
                (0..=n).flat_map(|k| [0.0, 1.0].map(|z| DVec3::new(r * angle * k as f64 / n as f64, 1.0, z))).collect();
            let mut tris = Vec::new();
            for k in 0..n as u32 {
                let (a, b, c, d) = (2 * k, 2 * k + 1, 2 * k + 2, 2 * k + 3);
                tris.extend([[a, c, b], [b, c, d]]);
            }
            let term = Bending::new("s", &tris, &Vec3s::from_vecs(&flat), kappa, 0.0);
            let (particles, state) = context(&bent, &Vec3s::zeros(bent.len()));
            term.potential_energy(&ForceContext { particles: &particles, state: &state, t: 0.0 })
        };
        let smooth = 0.5 * kappa * (r * angle) / (r * r);
        for n in [8usize, 32, 128] {
            // The chord angle between neighbouring facets is φ/n exactly.
            let expected = 3.0 * (n - 1) as f64 / n as f64 * smooth;
            let e = energy(n);
            assert!((e / expected - 1.0).abs() < 1e-12, "{n} segments: {e} against {expected}");
        }
    }
}
