//! Conservation laws of a free body with internal forces only (physics notes,
//! preamble): springs act in equal and opposite pairs along the line between their
//! ends, so total linear momentum is conserved by every integrator (each one
//! updates momentum by h Σ f over the same force field, and Σ f = 0), and total
//! angular momentum about any point is conserved by the exact flow. Symplectic
//! Euler conserves it exactly as well: L' = Σ m (x + h v') × v' = Σ m x × v' =
//! L + h Σ x × f(x), and Σ x × f = 0 for central pair forces evaluated at one state.

#[macro_use]
mod support;

use glam::DVec3;
use support::Rng;
use wobble::build::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::force::SpringParams;
use wobble::integrate::IntegratorKind;
use wobble::world::{SimParams, World};

/// A free 16 × 16 cloth (no pins, no gravity, damped springs k = 1000 N/m, c =
/// 0.5 N s/m), offset from the origin so that orbital angular momentum is large, with
/// positions jittered by up to 2 mm and random velocities up to 0.5 m/s per axis.
/// The step h = 1e-4 s is inside every method's stability region here (explicit
/// Euler needs h < c/k = 5e-4 s for these stiffness-proportional damped modes).
fn free_cloth(kind: IntegratorKind) -> World {
    let mut b = WorldBuilder::new();
    let s = SpringParams::linear(1000.0, 0.5);
    let cloth = Cloth {
        nx: 16,
        ny: 16,
        origin: DVec3::new(0.3, 0.2, -0.1),
        structural: s,
        shear: Some(s),
        bend: Some(s),
        ..Cloth::default()
    };
    cloth.build(&mut b, "cloth").unwrap();
    let mut rng = Rng::new(1234);
    for i in 0..b.particle_count() {
        let x = b.state.x.get(i) + rng.vec3(0.002);
        b.state.x.set(i, x);
        b.state.v.set(i, rng.vec3(0.5));
    }
    b.build(SimParams { dt: 1e-4, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 }).unwrap()
}

/// Σ m |v| — the scale against which momentum round-off is measured.
fn momentum_scale(w: &World) -> f64 {
    (0..w.state.len()).map(|i| w.particles.mass[i] * w.state.v.get(i).length()).sum()
}

/// Σ m |x × v| — the scale for angular momentum.
fn angular_scale(w: &World) -> f64 {
    (0..w.state.len()).map(|i| w.particles.mass[i] * w.state.x.get(i).cross(w.state.v.get(i)).length()).sum()
}

#[test]
fn linear_momentum_of_free_cloth_is_conserved_by_every_integrator() {
    // Tolerance 1e-12 of Σ m|v| over 1000 steps: each step adds rounding of order
    // ε Σ m |v| (velocity updates) plus h ε Σ |f| (the per-particle force sums do not
    // cancel bit-exactly), a random walk of ~√1000 · 1e-16 ~ 1e-14.
    // Verlet is the exception, for a known numerical reason rather than a physical
    // one: it rebuilds the velocity from a position difference, (x_{n+1} − x_n)/h,
    // and positions carry rounding ε|x|, so every step costs ε|x|/(h|v|) ≈ 2e-16 ·
    // 0.5 m / (1e-4 s · 0.3 m/s) ≈ 4e-12 of the momentum scale, partly averaging out
    // over particles (measured ~8e-13; it grows in proportion to the distance from
    // the origin). Its tolerance is 1e-10.
    // Implicit Euler conserves momentum only as well as its linear solve: the exact
    // solution satisfies Σ m Δv = Σ b (internal forces' Jacobians have zero column
    // sums), and CG leaves a residual r, so each step changes Σ m v by −Σ r, at most
    // √(3N) ‖r‖ ≤ √(3N) tol ‖b‖. With tol = 1e-12 that is ~3e-11 ‖b‖ per step; its
    // tolerance is 1e-9 of the scale over the run. The semi-implicit scheme solves
    // for Δx with the spring dampers' C (zero column sums) in its matrix: the same
    // argument and tolerance.
    for kind in IntegratorKind::ALL {
        let tol = match kind {
            IntegratorKind::Verlet => 1e-10,
            IntegratorKind::ImplicitEuler | IntegratorKind::SemiImplicit => 1e-9,
            _ => 1e-12,
        };
        let mut w = free_cloth(kind);
        w.set_solver_settings(wobble::solve::CgSettings {
            tolerance: 1e-12,
            max_iterations: 1000,
            ..Default::default()
        });
        let p0 = w.metrics().momentum;
        let scale = momentum_scale(&w);
        let mut worst: f64 = 0.0;
        for step in 1..=1000 {
            w.step().unwrap();
            let drift = (w.metrics().momentum - p0).length();
            worst = worst.max(drift / scale);
            assert!(
                drift <= tol * scale,
                "{kind}: momentum changed by {drift:.3e} kg m/s after {step} steps (scale Σm|v| = {scale:.3e}, limit {tol:e} relative)"
            );
        }
        println!("{kind:>16}: worst momentum drift {worst:.2e} of Σm|v|");
    }
}

#[test]
fn angular_momentum_of_free_cloth_is_conserved() {
    // Symplectic Euler: exact in exact arithmetic (see the module docs), so only
    // rounding remains: tolerance 1e-12 of Σ m|x × v| over 1000 steps.
    // RK4: not exact; its local error is O(h⁵) in the fast modes. Tolerance 1e-8 of
    // the scale (measured ~3e-10).
    for (kind, tol) in [(IntegratorKind::SymplecticEuler, 1e-12), (IntegratorKind::Rk4, 1e-8)] {
        let mut w = free_cloth(kind);
        let l0 = w.metrics().angular_momentum;
        let scale = angular_scale(&w);
        assert!(
            l0.length() > 0.1 * scale,
            "the test needs a sizeable angular momentum: |L| = {:.3e}, scale {scale:.3e}",
            l0.length()
        );
        let mut worst: f64 = 0.0;
        for step in 1..=1000 {
            w.step().unwrap();
            let drift = (w.metrics().angular_momentum - l0).length();
            worst = worst.max(drift / scale);
            assert!(
                drift <= tol * scale,
                "{kind}: angular momentum changed by {drift:.3e} kg m²/s after {step} steps (scale {scale:.3e}, limit {tol:e} relative)"
            );
        }
        println!("{kind:>16}: worst angular momentum drift {worst:.2e} of Σm|x×v|");
    }
}

#[test]
fn verlet_conserves_discrete_angular_momentum_exactly() {
    // Position Verlet (δ = 0) conserves J_n = Σ m x_n × x_{n+1} / h exactly for
    // central forces: J_n − J_{n−1} = Σ m x_n × (x_{n+1} + x_{n−1}) = Σ m x_n ×
    // (2 x_n + h² a_n) = h² Σ x_n × f_n = 0. Positions are recorded by the test, so
    // this checks the recurrence itself. Rounding: ε |x|/(h |v|) ≈ 4e-12 of the scale
    // per step (as for momentum); tolerance 1e-10.
    // The angular momentum computed from Verlet's reported velocity,
    // (x_{n+1} − x_n)/h + ½ h a_n, differs from J by ½ h Σ (x_{n+1} − x_n) × f_n,
    // a bounded O(h² |v| |f|) wobble rather than a drift: bounded by 1e-5 of the scale
    // here (measured values printed).
    let h = 1e-4;
    let mut w = free_cloth(IntegratorKind::Verlet);
    let scale = angular_scale(&w);
    let l0 = w.metrics().angular_momentum;
    let mass = w.particles.mass.clone();
    let j = |a: &[DVec3], b: &[DVec3]| (0..a.len()).map(|i| mass[i] * a[i].cross(b[i])).sum::<DVec3>() / h;
    let mut prev = w.state.x.to_vecs();
    let mut j0 = None;
    let (mut worst_j, mut worst_l): (f64, f64) = (0.0, 0.0);
    for step in 1..=1000 {
        w.step().unwrap();
        let cur = w.state.x.to_vecs();
        let jn = j(&prev, &cur);
        let j_ref = *j0.get_or_insert(jn);
        let drift = (jn - j_ref).length();
        worst_j = worst_j.max(drift / scale);
        assert!(
            drift <= 1e-10 * scale,
            "discrete angular momentum Σ m x_n × x_(n+1)/h changed by {drift:.3e} after {step} steps (scale {scale:.3e})"
        );
        let l_drift = (w.metrics().angular_momentum - l0).length();
        worst_l = worst_l.max(l_drift / scale);
        assert!(
            l_drift <= 1e-5 * scale,
            "Verlet's reported angular momentum moved by {l_drift:.3e} after {step} steps (scale {scale:.3e}, limit 1e-5)"
        );
        prev = cur;
    }
    println!("verlet: discrete J drift {worst_j:.2e}, reported L wobble {worst_l:.2e} of Σm|x×v|");
}

#[test]
fn damped_free_cloth_loses_energy_but_keeps_momentum() {
    // Relative-velocity damping dissipates: the total energy must not increase
    // (beyond rounding, 1e-12 relative) from one step to the next under RK4 at a step
    // well inside its stability region, while the centre of mass moves uniformly:
    // x_cm(t) = x_cm(0) + t P/M (tolerance 1e-12 m).
    let mut w = free_cloth(IntegratorKind::Rk4);
    let m0 = w.metrics();
    let total_mass = w.particles.total_mass();
    let cm = |w: &World| (0..w.state.len()).map(|i| w.particles.mass[i] * w.state.x.get(i)).sum::<DVec3>() / total_mass;
    let cm0 = cm(&w);
    let mut prev = m0.total;
    for step in 1..=1000 {
        w.step().unwrap();
        let e = w.metrics().total;
        assert!(e <= prev * (1.0 + 1e-12), "energy rose from {prev:.15e} to {e:.15e} J at step {step}");
        prev = e;
        let expected = cm0 + m0.momentum / total_mass * w.time();
        assert_vec_close!(cm(&w), expected, 1e-12, "centre of mass after {step} steps");
    }
    assert!(prev < 0.9 * m0.total, "damping should have removed energy: {:.4e} → {prev:.4e} J", m0.total);
}
