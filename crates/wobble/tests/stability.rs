//! The stable time-step estimate (`stability.rs`) against the exact stability limits
//! of each method on a system whose highest frequency is known in closed form, the
//! predicted boundary checked by simulation on both sides, and the blow-up report
//! (`world.rs`).

#[macro_use]
mod support;

use std::f64::consts::SQRT_2;

use glam::DVec3;
use wobble::build::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::force::{Gravity, SpringKind, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::world::{SimParams, StepError, World};

const K: f64 = 100.0;
const M: f64 = 0.5;
const L: f64 = 1.0;
const A: f64 = 0.01;

/// A free particle of mass M between two pinned particles at (∓L, 0, 0), joined to
/// each by an undamped spring of stiffness K and rest length L, displaced by A along
/// the line. Along the line the force is exactly −2K u, so ω² = 2K/M. The Gershgorin
/// row of the free particle is K (w + √(w·0)) twice = 2K/M: the bound is tight.
fn between_two_springs(kind: IntegratorKind, dt: f64) -> World {
    between_two_damped_springs(kind, dt, 0.0)
}

/// The same with spring damping `c` (N s/m): γ = 2c/M.
fn between_two_damped_springs(kind: IntegratorKind, dt: f64, c: f64) -> World {
    let mut b = WorldBuilder::new();
    let left = b.add_particle(DVec3::new(-L, 0.0, 0.0), DVec3::ZERO, 1.0, 0.0);
    let bob = b.add_particle(DVec3::new(A, 0.0, 0.0), DVec3::ZERO, M, 0.0);
    let right = b.add_particle(DVec3::new(L, 0.0, 0.0), DVec3::ZERO, 1.0, 0.0);
    b.pin(left);
    b.pin(right);
    let g = b.springs.group("pair");
    let p = SpringParams::linear(K, c);
    b.springs.push(left, bob, L, p, SpringKind::Structural, g);
    b.springs.push(bob, right, L, p, SpringKind::Structural, g);
    b.build(SimParams { dt, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 }).unwrap()
}

fn omega() -> f64 {
    (2.0 * K / M).sqrt()
}

#[test]
fn stability_estimates_match_exact_limits_for_a_tight_gershgorin_bound() {
    // Exact limits for the undamped oscillator at ω: symplectic Euler and Verlet are
    // stable for hω < 2 (their step matrix has trace 2 − h²ω² and determinant 1);
    // RK4's |R(iy)|² = 1 − y⁶/72 + y⁸/576 ≤ 1 exactly for y ≤ 2√2; explicit Euler
    // (|R|² = 1 + y²), Heun and midpoint (1 + y⁴/4) are unstable at every h.
    // Tolerances: 1e-12 relative for the closed form (one sqrt), 1e-9 for RK4's
    // bisection.
    let w = between_two_springs(IntegratorKind::SymplecticEuler, 1e-3);
    let st = w.stability();
    let (om, at) = st.omega_max();
    assert_eq!(at, 1, "the free particle carries the highest frequency");
    assert_rel!(om, omega(), 1e-14, "ω_max = √(2k/m)");
    for kind in [IntegratorKind::SymplecticEuler, IntegratorKind::Verlet] {
        assert_rel!(st.dt_for(kind).unwrap(), 2.0 / omega(), 1e-12, "{kind}: stable step 2/ω");
    }
    assert_rel!(st.dt_for(IntegratorKind::Rk4).unwrap(), 2.0 * SQRT_2 / omega(), 1e-9, "rk4: stable step 2√2/ω");
    for kind in [IntegratorKind::ExplicitEuler, IntegratorKind::Heun, IntegratorKind::Midpoint] {
        assert_eq!(st.dt_for(kind), None, "{kind}: unstable at any step for an undamped spring");
    }
}

type Mat2 = [[f64; 2]; 2];

fn mat_mul(a: Mat2, b: Mat2) -> Mat2 {
    let mut out = [[0.0; 2]; 2];
    for i in 0..2 {
        for j in 0..2 {
            out[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j];
        }
    }
    out
}

/// Spectral radius of a real 2 × 2 matrix from its characteristic polynomial
/// z² − T z + D.
fn spectral_radius(m: Mat2) -> f64 {
    let (tr, det) = (m[0][0] + m[1][1], m[0][0] * m[1][1] - m[0][1] * m[1][0]);
    let disc = tr * tr - 4.0 * det;
    if disc < 0.0 { det.sqrt() } else { (0.5 * (tr.abs() + disc.sqrt())).abs() }
}

/// One step of `kind` on u'' = −λ u − γ u' as a matrix acting on (u, v): symplectic
/// Euler and Verlet share the characteristic polynomial of
/// [[1 − h²λ, h(1 − hγ)], [−hλ, 1 − hγ]]; explicit Runge–Kutta methods of order p
/// give R(hA) = Σ_{k≤p} (hA)^k / k! with A = [[0, 1], [−λ, −γ]].
fn step_matrix(kind: IntegratorKind, h: f64, lambda: f64, gamma: f64) -> Mat2 {
    let order = match kind {
        IntegratorKind::SymplecticEuler | IntegratorKind::Verlet => {
            return [[1.0 - h * h * lambda, h * (1.0 - h * gamma)], [-h * lambda, 1.0 - h * gamma]];
        }
        IntegratorKind::ExplicitEuler => 1,
        IntegratorKind::Heun | IntegratorKind::Midpoint => 2,
        IntegratorKind::Rk4 => 4,
        // (1 + hγ + h²λ) Δv = h (−λu − γv − hλv), v' = v + Δv, u' = u + h v'.
        IntegratorKind::ImplicitEuler => {
            let d = 1.0 + h * gamma + h * h * lambda;
            return [[1.0 - h * h * lambda / d, h / d], [-h * lambda / d, 1.0 / d]];
        }
        // Springs are explicit under the semi-implicit scheme, damping enters as
        // C/(2h): (1 + hγ/2) Δu = −h²λ u + h (1 − hγ/2) v, v' = Δu/h, u' = u + Δu.
        IntegratorKind::SemiImplicit => {
            let d = 1.0 + 0.5 * h * gamma;
            let e = 1.0 - 0.5 * h * gamma;
            return [[1.0 - h * h * lambda / d, h * e / d], [-h * lambda / d, e / d]];
        }
    };
    let ha = [[0.0, h], [-h * lambda, -h * gamma]];
    let mut term = [[1.0, 0.0], [0.0, 1.0]];
    let mut sum = term;
    for k in 1..=order {
        term = mat_mul(term, ha);
        for row in &mut term {
            for x in row.iter_mut() {
                *x /= f64::from(k);
            }
        }
        for i in 0..2 {
            for j in 0..2 {
                sum[i][j] += term[i][j];
            }
        }
    }
    sum
}

#[test]
fn damped_stability_estimates_bound_the_step_matrix_spectral_radius() {
    // For damped springs (γ = 2c/M, ω² = 2K/M, Gershgorin tight as above) the
    // estimate h* must be the edge of each method's stability region: the spectral
    // radius of the method's own step matrix (built here from its definition) is
    // ≤ 1 (+1e-12 for rounding) at 0.999 h* and > 1 at 1.001 h*. Damping from very
    // light (γ/ω = 1e-3, where the estimate works at |hμ| < 1) to overdamped
    // (γ/ω = 3). Explicit Euler's edge also has the closed form h* = γ/ω² when
    // underdamped (|1 + hμ|² = 1 − hγ + h²ω²): checked to 1e-9.
    let om = omega();
    for ratio in [1e-3, 0.1, 0.5, 1.5, 3.0] {
        let gamma = ratio * om;
        let c = gamma * M / 2.0;
        let st = between_two_damped_springs(IntegratorKind::Rk4, 1e-3, c).stability();
        assert_rel!(st.gamma[1], gamma, 1e-14, "γ bound 2c/M");
        for kind in IntegratorKind::ALL {
            let h =
                st.dt_for(kind).unwrap_or_else(|| panic!("{kind}: damped modes have a stable step (γ/ω = {ratio})"));
            if kind == IntegratorKind::ImplicitEuler {
                // A-stable: no limit, and its step matrix contracts at every step
                // from hω = 1e-3 to 1e4.
                assert_eq!(h, f64::INFINITY, "implicit Euler has no step limit");
                for hw in [1e-3, 0.1, 1.0, 2.0, 10.0, 1e4] {
                    let rho = spectral_radius(step_matrix(kind, hw / om, om * om, gamma));
                    assert!(rho <= 1.0 + 1e-12, "implicit Euler, hω = {hw}, γ/ω = {ratio}: spectral radius {rho}");
                }
                continue;
            }
            if kind == IntegratorKind::SemiImplicit {
                // Conservative estimate (symplectic Euler's); the step matrix's own
                // edge for springs is h ω = 2 whatever γ.
                assert_eq!(Some(h), st.dt_for(IntegratorKind::SymplecticEuler));
                let edge = 2.0 / om;
                assert!(h <= edge * (1.0 + 1e-12));
                assert!(spectral_radius(step_matrix(kind, 0.999 * edge, om * om, gamma)) <= 1.0 + 1e-12);
                assert!(spectral_radius(step_matrix(kind, 1.001 * edge, om * om, gamma)) > 1.0);
                continue;
            }
            let below = spectral_radius(step_matrix(kind, 0.999 * h, om * om, gamma));
            let above = spectral_radius(step_matrix(kind, 1.001 * h, om * om, gamma));
            assert!(
                below <= 1.0 + 1e-12,
                "{kind}, γ/ω = {ratio}: spectral radius {below:.15} > 1 at 0.999 × estimate {h:e}"
            );
            assert!(
                above > 1.0,
                "{kind}, γ/ω = {ratio}: spectral radius {above:.15} ≤ 1 at 1.001 × estimate {h:e}; the estimate is too small"
            );
            if kind == IntegratorKind::ExplicitEuler && ratio < 2.0 {
                assert_rel!(h, gamma / (om * om), 1e-9, "explicit Euler: h* = γ/ω² (γ/ω = {ratio})");
            }
        }
    }
}

#[test]
fn simulation_is_bounded_just_below_the_estimate_and_blows_up_just_above() {
    // At 0.98 × the estimate: symplectic Euler conserves the modified energy
    // v² + ω²u² − hω²uv, which bounds |u| ≤ A / √(1 − (hω/2)²) (≈ 5.03 A at
    // hω = 1.96); Verlet's positions obey the same recurrence (with a different start,
    // x_n = A cos nθ, so the bound holds loosely); RK4 below its limit is
    // dissipative, |u| ≤ A. Checked at every step of 20,000 (1e-9 relative slack for
    // rounding).
    // At 1.05 × the estimate every method grows geometrically: the symplectic pair
    // by |eigenvalue| ≈ 1.88 per step, so the world must report BlowUp within 200
    // steps. RK4 grows by |R(iy)| ≈ 1.41 per step, but once |u| nears L = 100 A the
    // particle swings past the pins, the line geometry stops being linear and the
    // motion saturates far below the runaway threshold; for RK4 the test asserts
    // growth past 20 A within 100 steps instead (still in the linear regime).
    for kind in [IntegratorKind::SymplecticEuler, IntegratorKind::Verlet, IntegratorKind::Rk4] {
        let estimate = between_two_springs(kind, 1e-3).stability().dt_for(kind).unwrap();
        let h = 0.98 * estimate;
        let y = h * omega();
        let bound = if kind == IntegratorKind::Rk4 { A } else { A / (1.0 - 0.25 * y * y).sqrt() };
        let mut w = between_two_springs(kind, h);
        let mut peak: f64 = 0.0;
        for step in 1..=20_000 {
            w.step().unwrap_or_else(|e| panic!("{kind} at 0.98 × estimate failed at step {step}: {e}"));
            let u = w.state.x.get(1).x.abs();
            peak = peak.max(u);
            assert!(
                u <= bound * (1.0 + 1e-9),
                "{kind}: |u| = {u:.6e} exceeds the invariant bound {bound:.6e} at step {step}"
            );
        }
        println!("{kind:>16}: hω = {y:.4}, peak |u| = {:.4} A (bound {:.4} A)", peak / A, bound / A);
        assert!(peak > 0.5 * A, "{kind}: the oscillation must persist (peak {peak:e})");

        let mut w = between_two_springs(kind, 1.05 * estimate);
        if kind == IntegratorKind::Rk4 {
            let grown = (1..=100).find(|_| {
                w.step().unwrap();
                w.state.x.get(1).x.abs() > 20.0 * A
            });
            let step =
                grown.unwrap_or_else(|| panic!("rk4: |u| did not pass 20 A within 100 steps at 1.05 × the estimate"));
            println!("{kind:>16}: at 1.05 × estimate, |u| passed 20 A at step {step}");
            continue;
        }
        let blew_up = (1..=200).find_map(|step| match w.step() {
            Ok(_) => None,
            Err(StepError::BlowUp(b)) => Some((step, b)),
            Err(e) => panic!("{kind}: unexpected error {e}"),
        });
        let (step, report) =
            blew_up.unwrap_or_else(|| panic!("{kind}: no blow-up within 200 steps at 1.05 × the estimate"));
        println!("{kind:>16}: at 1.05 × estimate, blew up at step {step}");
        assert_eq!(report.particle, 1, "{kind}: the free particle runs away");
    }
}

#[test]
fn cloth_estimate_equals_hand_computed_gershgorin_bound() {
    // An interior particle of a cloth with structural, shear and bend springs has 12
    // springs to free neighbours of equal mass m: λ = 12 · k · (w + w) = 24 k/m and
    // γ = 24 c/m; no particle has more. The symplectic limit is then
    // h = (√(γ² + 4λ) − γ)/λ (Jury's test for h²ω² + 2hγ < 4). Tolerance 1e-12.
    let (k, c, n) = (1000.0, 0.5, 16usize);
    let mut b = WorldBuilder::new();
    let s = SpringParams::linear(k, c);
    Cloth { nx: n, ny: n, structural: s, shear: Some(s), bend: Some(s), ..Cloth::default() }
        .build(&mut b, "cloth")
        .unwrap();
    let w = b.build(SimParams::default()).unwrap();
    let m = 1.0 / (n * n) as f64;
    let (lambda, gamma) = (24.0 * k / m, 24.0 * c / m);
    let expected = ((gamma * gamma + 4.0 * lambda).sqrt() - gamma) / lambda;
    let st = w.stability();
    assert_rel!(st.omega_max().0, lambda.sqrt(), 1e-12, "largest Gershgorin row √(24 k/m)");
    assert_rel!(st.dt_for(IntegratorKind::SymplecticEuler).unwrap(), expected, 1e-12, "symplectic stable step");
}

#[test]
fn blow_up_is_reported_with_step_particle_and_stable_step_then_world_halts() {
    // A stiff cloth (k = 1e5 N/m) stepped at h = 1e-2 s, far above its stable step
    // (~1e-4 s): the world must stop with a BlowUp naming the step (1-based, equal to
    // the steps taken), a particle of body `cloth`, the step in use and the stable
    // estimate — and refuse further steps with Halted carrying the same report.
    let mut b = WorldBuilder::new();
    let s = SpringParams::linear(1e5, 0.1);
    let h = Cloth { nx: 12, ny: 12, structural: s, shear: Some(s), bend: Some(s), ..Cloth::default() }
        .build(&mut b, "cloth")
        .unwrap();
    b.pin(h.particle(0, 0));
    b.pin(h.particle(11, 0));
    b.add_force(Gravity::default());
    // Jolt it so that every mode is excited from the first step.
    for i in 0..b.particle_count() {
        if !b.particles.pinned[i] {
            b.state.v.set(i, DVec3::new(0.0, 0.0, if i % 2 == 0 { 0.1 } else { -0.1 }));
        }
    }
    let mut w =
        b.build(SimParams { dt: 1e-2, integrator: IntegratorKind::SymplecticEuler, ..SimParams::default() }).unwrap();
    let stable = w.stability().dt_for(IntegratorKind::SymplecticEuler).unwrap();
    assert!(stable < 1e-3, "the cloth must be stiff: stable step {stable:e}");
    let report = loop {
        match w.step() {
            Ok(_) => assert!(w.steps() < 1000, "no blow-up within 1000 steps"),
            Err(StepError::BlowUp(b)) => break b,
            Err(e) => panic!("unexpected error: {e}"),
        }
    };
    let message = report.to_string();
    println!("{message}");
    assert_eq!(report.step, w.steps(), "the report names the step that failed");
    assert_eq!(report.body.as_deref(), Some("cloth"));
    assert!(!w.particles.pinned[report.particle], "a pinned particle cannot run away");
    assert_eq!(report.dt, 1e-2);
    let reported = report.stable_dt.expect("symplectic Euler has a stable step");
    assert_rel!(reported, stable, 1e-12, "the reported stable step is the estimate for this world");
    for needle in [
        format!("step {}", report.step),
        format!("particle {}", report.particle),
        format!("{reported:.3e}"),
        "cloth".to_owned(),
    ] {
        assert!(message.contains(&needle), "the message must contain `{needle}`: {message}");
    }
    match w.step() {
        Err(StepError::Halted(b)) => assert_eq!(*b, *report, "Halted carries the original report"),
        other => panic!("after a blow-up step() must return Halted, got {other:?}"),
    }
    assert_eq!(w.steps(), report.step, "a halted world does not advance");
}
