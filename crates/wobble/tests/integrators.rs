//! Integrators (`integrate/`) against exact discrete solutions, the analytic harmonic
//! oscillator, measured convergence orders and exact energy amplification factors.

#[macro_use]
mod support;

use std::f64::consts::TAU;

use glam::DVec3;
use support::{Rng, loglog_slope, oscillator};
use wobble::build::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::force::{Gravity, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::world::{SimParams, World};

const G: f64 = 9.81;

fn free_particle(kind: IntegratorKind, dt: f64, verlet_drag: f64, v0: DVec3, gravity: bool) -> World {
    let mut b = WorldBuilder::new();
    b.add_particle(DVec3::ZERO, v0, 1.0, 0.0);
    if gravity {
        b.add_force(Gravity { g: DVec3::new(0.0, -G, 0.0) });
    }
    b.build(SimParams { dt, integrator: kind, verlet_drag, constraint_iterations: 1 }).unwrap()
}

/// The exact discrete free-fall solution of each method from rest at the origin,
/// as (downward displacement / (g h²), downward velocity / (g h)) after n steps:
///
/// * Heun, midpoint, RK4 integrate the constant acceleration exactly: (½ n², n).
/// * Explicit Euler: x_{k+1} = x_k + h v_k with v_k = k g h, so x_n = g h² Σ_{k<n} k
///   = ½ n (n − 1); v_n = n g h.
/// * Symplectic Euler (and implicit Euler, as gravity has no Jacobian): x_{k+1} =
///   x_k + h v_{k+1}, so x_n = g h² Σ_{k=1}^{n} k = ½ n (n + 1); v_n = n g h.
/// * Position Verlet with δ = 0: the Taylor start x_1 = x_0 + h v_0 + ½ g h² and
///   x_{n+1} = 2 x_n − x_{n−1} + g h² make every second difference exactly g h², so
///   x_n = ½ g (n h)²; the stored velocity (x_n − x_{n−1})/h + ½ h g = n g h.
fn exact_free_fall(kind: IntegratorKind, n: f64) -> (f64, f64) {
    match kind {
        IntegratorKind::Heun | IntegratorKind::Midpoint | IntegratorKind::Rk4 | IntegratorKind::Verlet => {
            (0.5 * n * n, n)
        }
        IntegratorKind::ExplicitEuler => (0.5 * n * (n - 1.0), n),
        // Gravity has no Jacobian, so implicit Euler's step is v += h g, x += h v:
        // symplectic Euler's. So is the semi-implicit step without stiffness or
        // damping: (m/h²) Δx = m g + m v/h gives v' = Δx/h = v + h g, x' = x + h v'.
        IntegratorKind::SymplecticEuler | IntegratorKind::ImplicitEuler | IntegratorKind::SemiImplicit => {
            (0.5 * n * (n + 1.0), n)
        }
    }
}

#[test]
fn free_fall_matches_exact_discrete_solution_of_each_method() {
    // Tolerance 1e-12 relative to ½ g t²: each step rounds a handful of operations,
    // so after 400 steps the error is a few hundred ulps at most (~1e-13).
    let h = 1e-3;
    for kind in IntegratorKind::ALL {
        let mut w = free_particle(kind, h, 0.0, DVec3::ZERO, true);
        for step in 1..=400u32 {
            w.step().unwrap();
            let n = f64::from(step);
            let (x_units, v_units) = exact_free_fall(kind, n);
            let scale = 0.5 * G * (n * h) * (n * h);
            let y = w.state.x.get(0).y;
            assert_close!(y, -G * h * h * x_units, 1e-12 * scale, "{kind}: position after {step} steps");
            assert_close!(
                w.state.v.get(0).y,
                -G * h * v_units,
                1e-12 * G * h * n,
                "{kind}: velocity after {step} steps"
            );
            assert_eq!(w.state.x.get(0).x, 0.0, "{kind}: no sideways motion");
        }
    }
}

#[test]
fn verlet_drag_decays_free_velocity_geometrically() {
    // Jakobsen's drag δ with no force: x_{n+1} − x_n = (1 − δ)(x_n − x_{n−1}), so
    // v_n = (1 − δ)^n v_0 and x_n = x_0 + h v_0 (1 − δ)(1 − (1 − δ)^n)/δ.
    // Tolerance 1e-12 relative (rounding over 500 steps).
    let (h, delta) = (1e-3, 0.01);
    let v0 = DVec3::new(2.0, -1.0, 0.5);
    let mut w = free_particle(IntegratorKind::Verlet, h, delta, v0, false);
    for step in 1..=500 {
        w.step().unwrap();
        let keep = (1.0f64 - delta).powi(step);
        let x = h * v0 * (1.0 - delta) * (1.0 - keep) / delta;
        assert_vec_close!(w.state.v.get(0), v0 * keep, 1e-12 * v0.length(), "velocity after {step} steps");
        assert_vec_close!(w.state.x.get(0), x, 1e-12 * x.length(), "position after {step} steps");
    }
}

/// Upward zero crossings of u(t) = x(t) − rest, linearly interpolated between steps.
/// Near a zero crossing the exact solution is a sine with zero curvature, so linear
/// interpolation errs by O((ωh)³) of a step.
fn upward_crossings(w: &mut World, rest: f64, steps: usize) -> Vec<f64> {
    let mut out = Vec::new();
    let mut prev = (w.time(), w.state.x.get(1).x - rest);
    for _ in 0..steps {
        w.step().unwrap();
        let cur = (w.time(), w.state.x.get(1).x - rest);
        if prev.1 < 0.0 && cur.1 >= 0.0 {
            out.push(prev.0 + (cur.0 - prev.0) * (-prev.1) / (cur.1 - prev.1));
        }
        prev = cur;
    }
    out
}

#[test]
fn oscillator_period_and_amplitude_match_analytic_with_rk4() {
    // x'' = −(k/m)(x − L): period 2π √(m/k), amplitude √(u² + (v/ω)²) constant.
    // RK4 at h = T/1000 has relative phase error ~ (ωh)⁴/120 ~ 1e-11 per step and
    // amplitude decay (ωh)⁶/144 per step; interpolation of crossings is O((ωh)³).
    // Tolerance 1e-4 relative for both, as specified; measured values are printed.
    let (k, m, rest, a): (f64, f64, f64, f64) = (50.0, 0.5, 1.0, 0.1);
    let omega = (k / m).sqrt();
    let period = TAU / omega;
    let h = period / 1000.0;
    let mut w = oscillator(IntegratorKind::Rk4, h, k, m, rest, a);
    let crossings = upward_crossings(&mut w, rest, 5100);
    assert!(crossings.len() >= 5, "expected 5 upward crossings in 5.1 periods, found {}", crossings.len());
    let measured = (crossings[crossings.len() - 1] - crossings[0]) / (crossings.len() - 1) as f64;
    println!(
        "period: measured {measured:.12} s, analytic {period:.12} s, relative error {:.2e}",
        (measured / period - 1.0).abs()
    );
    assert_rel!(measured, period, 1e-4, "oscillator period 2π√(m/k)");
    // The first upward crossing of A cos ωt is at 3T/4.
    assert_rel!(crossings[0], 0.75 * period, 1e-4, "phase: first upward crossing at 3T/4");
    let mut w = oscillator(IntegratorKind::Rk4, h, k, m, rest, a);
    let mut worst: f64 = 0.0;
    for _ in 0..5000 {
        w.step().unwrap();
        let (u, v) = (w.state.x.get(1).x - rest, w.state.v.get(1).x);
        let amp = (u * u + (v / omega) * (v / omega)).sqrt();
        worst = worst.max((amp / a - 1.0).abs());
        assert_rel!(amp, a, 1e-4, "amplitude √(u² + (v/ω)²) at t = {}", w.time());
    }
    println!("amplitude: worst relative error {worst:.2e}");
}

/// Position error at T = 1 s of the oscillator with ω = 5 rad/s (ωT = 5 rad, not a
/// multiple of π/2, so both phase and amplitude errors show in the position) for
/// h = 2^−k.
fn oscillator_error_at_one_second(kind: IntegratorKind, k_exp: i32) -> f64 {
    let (k, m, rest, a): (f64, f64, f64, f64) = (5.0, 0.2, 1.0, 0.1);
    let omega = (k / m).sqrt();
    let h = 2f64.powi(-k_exp);
    let mut w = oscillator(kind, h, k, m, rest, a);
    let n = 1u64 << k_exp;
    w.run(n).unwrap();
    assert_eq!(w.time(), 1.0, "h = 2^-{k_exp} sums to exactly 1 s");
    let exact = rest + a * (omega * 1.0).cos();
    (w.state.x.get(1).x - exact).abs()
}

#[test]
fn measured_convergence_orders_match_theory() {
    // Global error ∝ h^p: the least-squares slope of log(error) over log(h) for
    // h = 2^−7 … 2^−10 must be within ±0.25 of p = 1, 1, 2, 2, 4, 2 (Euler,
    // symplectic Euler, Heun, midpoint, RK4, Verlet with δ = 0). At these steps ωh ≤
    // 0.04, well inside the asymptotic range, and RK4's smallest error (~1e-10) is far
    // above rounding (~1e-15).
    let ks = [7, 8, 9, 10];
    let hs: Vec<f64> = ks.iter().map(|&k| 2f64.powi(-k)).collect();
    let mut failures = Vec::new();
    for kind in IntegratorKind::ALL {
        let errs: Vec<f64> = ks.iter().map(|&k| oscillator_error_at_one_second(kind, k)).collect();
        let shown = errs.iter().map(|e| format!("{e:.3e}")).collect::<Vec<_>>().join(", ");
        let slope = loglog_slope(&hs, &errs);
        let p = f64::from(kind.order());
        println!("{kind:>16}: order {p}, measured slope {slope:.3}, errors [{shown}]");
        if (slope - p).abs() > 0.25 {
            failures.push(format!("{kind}: measured slope {slope:.3}, expected {p} ± 0.25 (errors [{shown}])"));
        }
    }
    assert!(failures.is_empty(), "convergence orders off:\n{}", failures.join("\n"));
}

#[test]
fn explicit_runge_kutta_energy_amplification_is_exactly_stability_function() {
    // For the harmonic oscillator in the scaled coordinates (ωu, v) the step matrix of
    // an explicit Runge–Kutta method is R(hA) with A skew-symmetric, hence normal, so
    // the energy E = ½ m (v² + ω² u²) is multiplied every step by exactly |R(iωh)|²:
    //   Euler        1 + y²                      (grows: Euler adds energy)
    //   Heun, mid.   1 + y⁴/4                    (grows)
    //   RK4          1 − y⁶/72 + y⁸/576          (decays for y < 2√2)
    // with y = ωh. Checked over N steps: E_N / E_0 = |R|^{2N}, tolerance 1e-10
    // relative (rounding over ≤ 2000 steps).
    let (k, m, rest, a): (f64, f64, f64, f64) = (25.0, 1.0, 1.0, 0.05);
    let omega = (k / m).sqrt();
    let energy = |w: &World| {
        let (u, v) = (w.state.x.get(1).x - rest, w.state.v.get(1).x);
        0.5 * m * (v * v + omega * omega * u * u)
    };
    for (kind, y, steps) in [
        (IntegratorKind::ExplicitEuler, 0.05, 2000),
        (IntegratorKind::Heun, 0.3, 2000),
        (IntegratorKind::Midpoint, 0.3, 2000),
        (IntegratorKind::Rk4, 0.8, 2000),
    ] {
        let factor: f64 = match kind {
            IntegratorKind::ExplicitEuler => 1.0 + y * y,
            IntegratorKind::Heun | IntegratorKind::Midpoint => 1.0 + y.powi(4) / 4.0,
            _ => 1.0 - y.powi(6) / 72.0 + y.powi(8) / 576.0,
        };
        let mut w = oscillator(kind, y / omega, k, m, rest, a);
        let e0 = energy(&w);
        w.run(steps).unwrap();
        let ratio = energy(&w) / e0;
        let expected = factor.powi(steps as i32);
        println!("{kind:>10}: E_N/E_0 = {ratio:.12e}, |R(iωh)|^(2N) = {expected:.12e}");
        assert_rel!(ratio, expected, 1e-10, "{kind}: energy growth over {steps} steps at ωh = {y}");
        if kind == IntegratorKind::ExplicitEuler {
            assert!(ratio > 100.0, "explicit Euler must add energy to an undamped oscillator: E_N/E_0 = {ratio}");
        }
    }
}

#[test]
fn symplectic_euler_conserves_its_modified_energy_exactly() {
    // Symplectic Euler v' = v − hω²u, u' = u + h v' conserves exactly the modified
    // energy Q = v² + ω² u² − h ω² u v (substitute and expand). So Q is constant to
    // rounding (tolerance 1e-12 relative over 20,000 steps) while the plain energy
    // oscillates within the bounds Q/(1 ± ωh/2).
    let (k, m, rest, a): (f64, f64, f64, f64) = (25.0, 1.0, 1.0, 0.05);
    let omega = (k / m).sqrt();
    let h = 0.02; // ωh = 0.1
    let mut w = oscillator(IntegratorKind::SymplecticEuler, h, k, m, rest, a);
    let q = |w: &World| {
        let (u, v) = (w.state.x.get(1).x - rest, w.state.v.get(1).x);
        v * v + omega * omega * u * u - h * omega * omega * u * v
    };
    let q0 = q(&w);
    for step in 0..20_000 {
        w.step().unwrap();
        assert_rel!(q(&w), q0, 1e-12, "modified energy after {step} steps");
    }
}

/// Total energy samples (kinetic + potential, from `World::metrics`) over `steps`.
fn energy_series(w: &mut World, steps: usize) -> Vec<f64> {
    (0..steps)
        .map(|_| {
            w.step().unwrap();
            w.metrics().total
        })
        .collect()
}

/// Mean of the last tenth over mean of the first tenth, minus one.
fn tenth_drift(e: &[f64]) -> f64 {
    let t = e.len() / 10;
    let first = e[..t].iter().sum::<f64>() / t as f64;
    let last = e[e.len() - t..].iter().sum::<f64>() / t as f64;
    last / first - 1.0
}

/// An 8 × 8 cloth without pins, gravity or damping, positions jittered by up to 1 mm
/// (a tenth of the spacing) so that every mode rings. Highest ω ≲ 1.3e3 rad/s (the
/// Gershgorin bound), so h = 1e-4 s gives ωh ≲ 0.13.
fn ringing_cloth(kind: IntegratorKind) -> World {
    let mut b = WorldBuilder::new();
    let s = SpringParams::linear(1000.0, 0.0);
    Cloth { nx: 8, ny: 8, structural: s, shear: Some(s), bend: Some(s), ..Cloth::default() }
        .build(&mut b, "cloth")
        .unwrap();
    let mut rng = Rng::new(77);
    for i in 0..b.particle_count() {
        let x = b.state.x.get(i) + rng.vec3(0.001);
        b.state.x.set(i, x);
    }
    b.build(SimParams { dt: 1e-4, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 }).unwrap()
}

#[test]
fn symplectic_methods_keep_energy_bounded_and_explicit_euler_gains_energy() {
    // Symplectic Euler and Verlet (δ = 0) conserve a modified energy, so the mean
    // energy over the last tenth of 20,000 steps equals that over the first tenth to
    // within the averaging noise: tolerance 1e-3 relative. Explicit Euler multiplies
    // every undamped mode's energy by 1 + (ωh)² per step, so its mean energy grows.
    for kind in [IntegratorKind::SymplecticEuler, IntegratorKind::Verlet] {
        let mut w = oscillator(kind, 0.02, 25.0, 1.0, 1.0, 0.05);
        let drift = tenth_drift(&energy_series(&mut w, 20_000));
        println!("{kind:>16} oscillator: energy drift {drift:+.3e}");
        assert!(drift.abs() < 1e-3, "{kind}: oscillator energy drifted by {drift:+.3e} (limit 1e-3)");
        let mut w = ringing_cloth(kind);
        let drift = tenth_drift(&energy_series(&mut w, 20_000));
        println!("{kind:>16} cloth:      energy drift {drift:+.3e}");
        assert!(drift.abs() < 1e-3, "{kind}: cloth energy drifted by {drift:+.3e} (limit 1e-3)");
    }
    let mut w = oscillator(IntegratorKind::ExplicitEuler, 0.02, 25.0, 1.0, 1.0, 0.05);
    let drift = tenth_drift(&energy_series(&mut w, 1_000));
    println!("explicit Euler oscillator: energy growth {drift:+.3e}");
    // (1 + (ωh)²)^900 = 1.01^900 ≈ 7.8e3 between the two tenths' centres.
    assert!(drift > 1.0, "explicit Euler should gain energy: measured change {drift:+.3e}");
    let mut w = ringing_cloth(IntegratorKind::ExplicitEuler);
    let drift = tenth_drift(&energy_series(&mut w, 1_000));
    println!("explicit Euler cloth: energy growth {drift:+.3e}");
    assert!(drift > 1e-3, "explicit Euler should gain energy on the undamped cloth: measured change {drift:+.3e}");
}
