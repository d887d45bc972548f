//! The block-sparse solver and implicit Euler (physics notes §5; `solve/`,
//! `integrate/implicit_euler.rs`): CG to tolerance on random SPD block systems with
//! and without filtering, its failure reports, implicit Euler's exact discrete
//! solution and first-order convergence on an oscillator, stability where
//! symplectic Euler blows up (measured), momentum conservation on a free body, pins
//! held exactly, and the iteration count reported per step.

#[macro_use]
mod support;

use glam::{DMat3, DVec3};
use support::{Rng, loglog_slope, oscillator};
use wobble::build::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::force::{CubicLaw, Gravity, SpringLaw, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::model::Vec3s;
use wobble::solve::{BlockMatrix, Cg, CgError, CgSettings, SolverKind, Stencils};
use wobble::world::{SimParams, StepError, World};

/// A random SPD block matrix: a spring-graph Laplacian of random PSD 3×3 blocks
/// G Gᵀ (scale `k`) plus a random positive mass diagonal.
fn random_spd(rng: &mut Rng, n: usize, edges: usize, k: f64) -> BlockMatrix {
    random_spd_banded(rng, n, edges, k, n)
}

/// As [`random_spd`], each edge joining rows at most `band` apart (a mesh numbered
/// along its geometry, as a cloth's rows are).
fn random_spd_banded(rng: &mut Rng, n: usize, edges: usize, k: f64, band: usize) -> BlockMatrix {
    let mut pairs = Vec::new();
    let mut blocks = Vec::new();
    for _ in 0..edges {
        let i = rng.below(n);
        let mut j = rng.below(n);
        while j == i || j.abs_diff(i) > band {
            j = rng.below(n);
        }
        let g = DMat3::from_cols(rng.vec3(1.0), rng.vec3(1.0), rng.vec3(1.0));
        pairs.push((i as u32, j as u32));
        blocks.push((i, j, g * g.transpose() * k));
    }
    let mut a = BlockMatrix::with_pattern(n, &pairs);
    for (i, j, p) in blocks {
        a.add(i, i, p);
        a.add(j, j, p);
        a.add(i, j, -p);
        a.add(j, i, -p);
    }
    let masses: Vec<f64> = (0..n).map(|_| rng.range(0.5, 2.0)).collect();
    a.add_scaled_mass(1.0, &masses);
    assert!(a.missed().is_empty());
    a
}

fn random_vec(rng: &mut Rng, n: usize) -> Vec3s {
    let mut v = Vec3s::zeros(n);
    for i in 0..n {
        v.set(i, rng.vec3(1.0));
    }
    v
}

fn norm(v: &Vec3s) -> f64 {
    (0..v.len()).map(|i| v.get(i).length_squared()).sum::<f64>().sqrt()
}

#[test]
fn cg_solves_random_spd_block_systems_to_tolerance() {
    // The residual ‖b − A x‖/‖b‖ recomputed here from the matrix (not the solver's
    // recurrence) must be within the tolerance (plus 1e-3 of it for the recurrence's
    // drift), and the reported residual within it too. Conditioning up to k/m = 1e4. With filtering, fixed rows of x are exactly zero and the free
    // rows' equations hold.
    let mut rng = Rng::new(11);
    // 5,000 and 9,000 blocks joined within a band: the sweeps in two runs and a
    // separator; 6,000 joined at random: a separator too large, one run.
    for (case, (n, edges, k, band)) in [
        (10, 30, 1.0, 10),
        (200, 800, 100.0, 200),
        (500, 3000, 1e4, 500),
        (5000, 20_000, 100.0, 40),
        (9000, 36_000, 1e3, 60),
        (6000, 20_000, 100.0, 6000),
    ]
    .into_iter()
    .enumerate()
    {
        let a = random_spd_banded(&mut rng, n, edges, k, band);
        assert!(a.asymmetry() <= 1e-12 * k, "case {case}: the test matrix must be symmetric");
        let b = random_vec(&mut rng, n);
        for fixed in [vec![], (0..n).map(|i| i % 7 == 0).collect::<Vec<bool>>()] {
            let tol = 1e-10;
            let mut cg = Cg::new(CgSettings { tolerance: tol, max_iterations: 10_000, ..CgSettings::default() });
            let mut x = Vec3s::zeros(n);
            let report = cg.solve(&a, &b, &mut x, &fixed).unwrap();
            let mut ax = Vec3s::zeros(n);
            a.mul(&x, &mut ax);
            let is_fixed = |i: usize| fixed.get(i).copied().unwrap_or(false);
            let (mut r2, mut b2) = (0.0, 0.0);
            for i in 0..n {
                if is_fixed(i) {
                    assert_eq!(x.get(i), DVec3::ZERO, "case {case}: fixed row {i} moved");
                } else {
                    r2 += (b.get(i) - ax.get(i)).length_squared();
                    b2 += b.get(i).length_squared();
                }
            }
            let residual = (r2 / b2).sqrt();
            println!(
                "case {case} ({n} blocks, k = {k}, {} fixed): {} iterations, residual {residual:.2e} (reported {:.2e})",
                fixed.iter().filter(|f| **f).count(),
                report.iterations,
                report.residual
            );
            assert!(report.iterations > 0, "case {case}: no iterations");
            assert!(residual <= 1.001 * tol, "case {case}: true residual {residual:e} above tolerance {tol:e}");
            assert!(report.residual <= tol, "case {case}: reported residual {:e}", report.residual);
        }
    }
}

#[test]
fn block_jacobi_preconditioning_helps_on_badly_scaled_masses() {
    // Masses spread over six orders of magnitude make κ(A) ≳ 1e6, so plain CG would
    // need of the order of √κ ≈ 1000 iterations. Block-Jacobi preconditioning
    // rescales each particle's block, so the solve must take fewer than n = 300.
    let mut rng = Rng::new(12);
    let n = 300;
    let mut a = random_spd(&mut rng, n, 600, 1.0);
    let masses: Vec<f64> = (0..n).map(|i| 10f64.powi((i % 7) as i32)).collect();
    a.add_scaled_mass(1.0, &masses);
    let b = random_vec(&mut rng, n);
    let mut cg = Cg::new(CgSettings { tolerance: 1e-10, max_iterations: 10_000, ..CgSettings::default() });
    let mut x = Vec3s::zeros(n);
    let report = cg.solve(&a, &b, &mut x, &[]).unwrap();
    println!("badly scaled: {} iterations", report.iterations);
    assert!((report.iterations as usize) < n, "{} iterations for {n} blocks", report.iterations);
}

#[test]
fn the_direct_solver_converges_in_one_iteration_and_reports_indefinite_matrices() {
    // With its exact factor as preconditioner CG is done after one iteration (the
    // true residual then below 1e-12), with and without fixed rows; the symbolic
    // analysis is made once for a pattern and reused.
    let mut rng = Rng::new(31);
    let n = 200;
    let a = random_spd(&mut rng, n, 900, 1e3);
    let settings = CgSettings { tolerance: 1e-12, solver: SolverKind::Cholesky, ..CgSettings::default() };
    let mut cg = Cg::new(settings);
    for fixed in [vec![], (0..n).map(|i| i % 7 == 3).collect::<Vec<bool>>()] {
        let b = random_vec(&mut rng, n);
        let mut x = Vec3s::zeros(n);
        let report = cg.solve(&a, &b, &mut x, &fixed).unwrap();
        assert!(report.iterations <= 1, "{} iterations", report.iterations);
        assert!(report.residual <= 1e-12, "residual {:e}", report.residual);
    }
    // −I and a matrix with one negative diagonal block: a pivot that is not
    // positive, reported as such.
    let mut minus = BlockMatrix::with_pattern(4, &[(0, 1)]);
    minus.add_scaled_mass(-1.0, &[1.0; 4]);
    let mut tilted = random_spd(&mut rng, 30, 60, 1.0);
    tilted.add(7, 7, DMat3::IDENTITY * -1e6);
    for (name, m) in [("−I", minus), ("one negative block", tilted)] {
        let b = random_vec(&mut rng, m.rows());
        let mut x = Vec3s::zeros(m.rows());
        match Cg::new(settings).solve(&m, &b, &mut x, &[]) {
            Err(CgError::NotPositivePivot { .. }) => {}
            other => panic!("{name} must be reported as not positive definite, got {other:?}"),
        }
    }
}

#[test]
fn auto_finishes_badly_conditioned_solves_directly() {
    // Masses spread over six decades: block-SSOR CG needs well over the budget of
    // `auto`, which then finishes with the factorisation in an iteration or two;
    // a well-conditioned system stays with CG (identical iterations and answer).
    use wobble::solve::cg::AUTO_SWITCH_ITERATIONS;
    // A stiff chain (a 1D Laplacian: condition number about 4 (n/π)² k/(k + m)):
    // what a long rope of stiff springs at a large step gives.
    let mut rng = Rng::new(41);
    let n = 800;
    let links: Vec<(u32, u32)> = (0..n as u32 - 1).map(|i| (i, i + 1)).collect();
    let mut bad = BlockMatrix::with_pattern(n, &links);
    bad.add_scaled_mass(1.0, &vec![1.0; n]);
    for &(i, j) in &links {
        let k = DMat3::IDENTITY * 1e4;
        let (i, j) = (i as usize, j as usize);
        bad.add(i, i, k);
        bad.add(j, j, k);
        bad.add(i, j, -k);
        bad.add(j, i, -k);
    }
    let good = random_spd(&mut rng, n, 4 * n, 1.0);
    let b = random_vec(&mut rng, n);
    let solve = |a: &BlockMatrix, solver: SolverKind| {
        let mut x = Vec3s::zeros(n);
        let settings = CgSettings { tolerance: 1e-10, max_iterations: 10_000, solver, ..CgSettings::default() };
        let report = Cg::new(settings).solve(a, &b, &mut x, &[]).unwrap();
        (report, x)
    };
    let (cg, x_cg) = solve(&bad, SolverKind::Cg);
    let (auto, x_auto) = solve(&bad, SolverKind::Auto);
    println!("stiff chain: cg {} iterations, auto {}", cg.iterations, auto.iterations);
    assert!(cg.iterations > 2 * AUTO_SWITCH_ITERATIONS, "CG took only {} iterations", cg.iterations);
    assert!(auto.iterations <= AUTO_SWITCH_ITERATIONS + 2, "auto took {} iterations", auto.iterations);
    assert!(auto.residual <= 1e-10);
    let diff = (0..n).map(|i| (x_cg.get(i) - x_auto.get(i)).length_squared()).sum::<f64>().sqrt();
    assert!(diff <= 1e-8 * norm(&x_cg), "answers differ by {diff:e}");
    let ((cg, x_cg), (auto, x_auto)) = (solve(&good, SolverKind::Cg), solve(&good, SolverKind::Auto));
    assert!(cg.iterations < AUTO_SWITCH_ITERATIONS);
    assert_eq!((cg.iterations, cg.residual), (auto.iterations, auto.residual));
    assert_eq!(x_cg, x_auto);
}

#[test]
fn cg_reports_indefinite_matrices_and_non_convergence() {
    let n = 4;
    let mut a = BlockMatrix::with_pattern(n, &[(0, 1)]);
    a.add_scaled_mass(-1.0, &[1.0; 4]);
    let b = random_vec(&mut Rng::new(1), n);
    let mut x = Vec3s::zeros(n);
    match Cg::new(CgSettings::default()).solve(&a, &b, &mut x, &[]) {
        Err(CgError::NotPositiveDefinite { iteration: 1, curvature }) => assert!(curvature < 0.0),
        other => panic!("−I must be reported as not positive definite, got {other:?}"),
    }
    let mut rng = Rng::new(2);
    let a = random_spd(&mut rng, 100, 400, 1e3);
    let b = random_vec(&mut rng, 100);
    let mut x = Vec3s::zeros(100);
    match Cg::new(CgSettings { tolerance: 1e-12, max_iterations: 2, ..CgSettings::default() }).solve(
        &a,
        &b,
        &mut x,
        &[],
    ) {
        Err(CgError::NoConvergence { iterations: 2, residual }) => assert!(residual > 1e-12),
        other => panic!("two iterations cannot reach 1e-12 here, got {other:?}"),
    }
    // With a fixed budget the same solve returns its last iterate and its residual.
    let budget = CgSettings { tolerance: 1e-12, max_iterations: 2, accept_unconverged: true, ..CgSettings::default() };
    let mut x = Vec3s::zeros(100);
    let report = Cg::new(budget).solve(&a, &b, &mut x, &[]).unwrap();
    assert_eq!(report.iterations, 2);
    assert!(report.residual > 1e-12 && report.residual < 1.0, "residual {}", report.residual);
    // b = 0: x = 0 at once.
    let mut x = random_vec(&mut rng, 100);
    let report = Cg::new(CgSettings::default()).solve(&a, &Vec3s::zeros(100), &mut x, &[]).unwrap();
    assert_eq!(report.iterations, 0);
    assert!(norm(&x) == 0.0);
    // A NaN force must not pass as a zero right-hand side: it is reported with the
    // particle (a NaN norm would otherwise skip the loop and return "converged").
    let mut b = random_vec(&mut rng, 100);
    b.set(37, glam::DVec3::new(0.0, f64::NAN, 0.0));
    let mut x = Vec3s::zeros(100);
    match Cg::new(CgSettings::default()).solve(&a, &b, &mut x, &[]) {
        Err(CgError::NonFinite { particle: 37 }) => {}
        other => panic!("a NaN right-hand side must be reported, got {other:?}"),
    }
}

#[test]
fn implicit_euler_follows_its_exact_recurrence_on_a_linear_oscillator() {
    // Along the spring's axis the linearisation is exact, so one step is the matrix
    // [[1 − h²λ/D, h/D], [−hλ/D, 1/D]] on (u, v) with D = 1 + h²λ, λ = k/m
    // (physics notes §5 with ∂f/∂x = −k, no damping). 200 steps at hω = 0.5, CG to
    // 1e-14: tolerance 1e-10 of the amplitude.
    let (k, m, rest, a): (f64, f64, f64, f64) = (400.0, 0.5, 1.0, 0.1);
    let lambda = k / m;
    let h = 0.5 / lambda.sqrt();
    let mut w = oscillator(IntegratorKind::ImplicitEuler, h, k, m, rest, a);
    w.set_solver_settings(CgSettings { tolerance: 1e-14, max_iterations: 100, ..CgSettings::default() });
    let d = 1.0 + h * h * lambda;
    let (mut u, mut v) = (a, 0.0);
    for step in 1..=200 {
        w.step().unwrap();
        (u, v) = ((1.0 - h * h * lambda / d) * u + h / d * v, -h * lambda / d * u + v / d);
        assert_close!(w.state.x.get(1).x - rest, u, 1e-10 * a, "u after {step} steps");
        assert_close!(w.state.v.get(1).x, v, 1e-10 * a * lambda.sqrt(), "v after {step} steps");
    }
    // Numerical damping: the amplitude decays (|eigenvalue|² = 1/D per step).
    let energy = |u: f64, v: f64| v * v + lambda * u * u;
    assert!(energy(u, v) < energy(a, 0.0) * d.powi(-150), "implicit Euler must dissipate");
}

#[test]
fn implicit_euler_converges_at_first_order() {
    // Error at t = 1 s against a cos(ωt) for h = 2^-7 … 2^-10: log-log slope 1 ± 0.15.
    let (k, m, rest, a): (f64, f64, f64, f64) = (25.0, 1.0, 1.0, 0.05);
    let omega = (k / m).sqrt();
    let ks = [7, 8, 9, 10];
    let hs: Vec<f64> = ks.iter().map(|&e| 2f64.powi(-e)).collect();
    let errs: Vec<f64> = hs
        .iter()
        .map(|&h| {
            let mut w = oscillator(IntegratorKind::ImplicitEuler, h, k, m, rest, a);
            w.set_solver_settings(CgSettings { tolerance: 1e-13, max_iterations: 100, ..CgSettings::default() });
            let steps = (1.0 / h).round() as u64;
            w.run(steps).unwrap();
            (w.state.x.get(1).x - rest - a * (omega * 1.0).cos()).abs()
        })
        .collect();
    let slope = loglog_slope(&hs, &errs);
    println!("implicit Euler errors {errs:?}, slope {slope:.3}");
    assert!((slope - 1.0).abs() < 0.15, "slope {slope}");
}

/// A stiff 16 × 16 cloth hung from its two top corners under gravity, with `law`.
fn stiff_cloth(kind: IntegratorKind, dt: f64, law: SpringLaw) -> World {
    stiff_cloth_damped(kind, dt, law, 0.05)
}

/// [`stiff_cloth`] with spring damping `c` (N s/m).
fn stiff_cloth_damped(kind: IntegratorKind, dt: f64, law: SpringLaw, c: f64) -> World {
    let mut b = WorldBuilder::new();
    let s = SpringParams::linear(5000.0, c).with_law(law);
    let h = Cloth {
        nx: 16,
        ny: 16,
        spacing: 0.02,
        mass: 0.2,
        structural: s,
        shear: Some(s),
        bend: Some(s),
        ..Cloth::default()
    }
    .build(&mut b, "cloth")
    .unwrap();
    b.pin(h.particle(0, 0));
    b.pin(h.particle(15, 0));
    b.add_force(Gravity::default());
    b.build(SimParams { dt, integrator: kind, ..SimParams::default() }).unwrap()
}

fn cubic_law() -> SpringLaw {
    SpringLaw::Cubic(CubicLaw::new(5000.0, 1.1, 30000.0, 0.9, 10000.0, 0.99).unwrap())
}

#[test]
fn implicit_euler_is_stable_where_symplectic_euler_blows_up() {
    // At 4× symplectic Euler's stable-step estimate, symplectic Euler must blow up
    // within 2000 steps (measured), while implicit Euler runs 2000 steps with every
    // spring law, staying finite and ending with strain below 10 % (the cloth hangs,
    // it does not explode).
    for law in [SpringLaw::Linear, SpringLaw::StVK, cubic_law()] {
        let probe = stiff_cloth(IntegratorKind::SymplecticEuler, 1e-4, law);
        let stable = probe.stability().dt_for(IntegratorKind::SymplecticEuler).unwrap();
        let dt = 4.0 * stable;
        let mut sym = stiff_cloth(IntegratorKind::SymplecticEuler, dt, law);
        let blew = match sym.run(2000) {
            Err(StepError::BlowUp(b)) => Some(b.step),
            Ok(()) => None,
            Err(e) => panic!("{}: unexpected error {e}", law.name()),
        };
        assert!(
            blew.is_some(),
            "{}: symplectic Euler survived 2000 steps at 4 × its estimate {stable:e} s",
            law.name()
        );
        let mut imp = stiff_cloth(IntegratorKind::ImplicitEuler, dt, law);
        imp.run(2000).unwrap_or_else(|e| panic!("{}: implicit Euler failed at dt = {dt:e}: {e}", law.name()));
        let strain = imp.metrics();
        println!(
            "{}: stable estimate {stable:.3e} s, dt {dt:.3e} s: symplectic blew up at step {}, implicit Euler max strain {:.4}, {} CG iterations in the last step",
            law.name(),
            blew.unwrap(),
            strain.strain_max,
            imp.last_report().iterations
        );
        assert!(strain.strain_max < 0.1, "{}: max strain {}", law.name(), strain.strain_max);
    }
}

#[test]
fn implicit_euler_holds_pins_exactly_and_reports_iterations() {
    // The pinned corners are filtered out of the solve: their positions must stay
    // bit-identical. Every step reports ≥ 1 CG iteration and a residual within the
    // tolerance.
    let mut w = stiff_cloth(IntegratorKind::ImplicitEuler, 2e-3, cubic_law());
    let tol = w.solver_settings().tolerance;
    let pins: Vec<usize> = (0..w.state.len()).filter(|&i| w.particles.pinned[i]).collect();
    assert_eq!(pins.len(), 2);
    let start: Vec<DVec3> = pins.iter().map(|&i| w.state.x.get(i)).collect();
    for _ in 0..300 {
        let r = w.step().unwrap();
        assert!(r.iterations >= 1 && r.residual <= tol, "report {r:?}");
        for (p, x0) in pins.iter().zip(&start) {
            assert_eq!(w.state.x.get(*p), *x0, "pin {p} moved");
            assert_eq!(w.state.v.get(*p), DVec3::ZERO, "pin {p} has velocity");
        }
    }
    let m = w.metrics();
    assert_eq!(m.iterations, w.last_report().iterations, "metrics carry the iterations");
}

#[test]
fn implicit_euler_conserves_momentum_of_a_free_cubic_cloth() {
    // No pins, no gravity, cubic springs, random velocities: Σ m v may change only by
    // the CG residual's sum (see conservation.rs), at most √(3N) · 1e-12 · ‖b‖ per
    // step: tolerance 1e-9 of Σ m|v| over 300 steps.
    let mut b = WorldBuilder::new();
    let s = SpringParams::linear(5000.0, 0.1).with_law(cubic_law());
    Cloth { nx: 12, ny: 12, spacing: 0.02, structural: s, shear: Some(s), bend: Some(s), ..Cloth::default() }
        .build(&mut b, "cloth")
        .unwrap();
    let mut rng = Rng::new(9);
    for i in 0..b.particle_count() {
        let x = b.state.x.get(i) + rng.vec3(0.002);
        b.state.x.set(i, x);
        b.state.v.set(i, rng.vec3(0.5));
    }
    let mut w =
        b.build(SimParams { dt: 2e-3, integrator: IntegratorKind::ImplicitEuler, ..SimParams::default() }).unwrap();
    w.set_solver_settings(CgSettings { tolerance: 1e-12, max_iterations: 2000, ..CgSettings::default() });
    let p0 = w.metrics().momentum;
    let scale: f64 = (0..w.state.len()).map(|i| w.particles.mass[i] * w.state.v.get(i).length()).sum();
    for step in 1..=300 {
        w.step().unwrap();
        let drift = (w.metrics().momentum - p0).length();
        assert!(drift <= 1e-9 * scale, "step {step}: momentum drift {drift:e} (scale {scale:e})");
    }
}

#[test]
fn implicit_euler_is_bitwise_identical_across_thread_counts() {
    // The spring kernel sums in a data-fixed order and block-SSOR CG splits its
    // sweeps by the row count alone (5,184 rows: two runs and a separator), so a
    // 72 × 72 cubic cloth (above the parallel threshold) must give the same bits on
    // 1, 2 and 3 threads after 5 implicit steps.
    let make = || {
        let mut b = WorldBuilder::new();
        let s = SpringParams::linear(5000.0, 0.05).with_law(cubic_law());
        let h =
            Cloth { nx: 72, ny: 72, spacing: 0.02, structural: s, shear: Some(s), bend: Some(s), ..Cloth::default() }
                .build(&mut b, "cloth")
                .unwrap();
        b.pin(h.particle(0, 0));
        b.pin(h.particle(71, 0));
        b.add_force(Gravity::default());
        b.build(SimParams { dt: 2e-3, integrator: IntegratorKind::ImplicitEuler, ..SimParams::default() }).unwrap()
    };
    for solver in SolverKind::ALL {
        let run = |threads: usize| {
            let mut w = make();
            w.set_solver_settings(CgSettings { solver, ..CgSettings::default() });
            support::pool(threads).install(|| w.run(5)).unwrap();
            w.state
        };
        let one = run(1);
        for threads in [2, 3] {
            let other = run(threads);
            for i in 0..one.len() {
                let name = solver.name();
                assert_eq!(one.x.get(i), other.x.get(i), "{name}, {threads} threads: particle {i} position differs");
                assert_eq!(one.v.get(i), other.v.get(i), "{name}, {threads} threads: particle {i} velocity differs");
            }
        }
    }
}

#[test]
fn indefinite_steps_fall_back_to_the_definite_jacobian() {
    // A stiff cloth compressed to 70 % of its size, free, no gravity, at h = 20 ms:
    // compressed springs' negative transverse stiffness h² |g|/r outweighs the
    // particle masses, so the exact system is indefinite. The step must succeed
    // through the definite fallback (reported), stay finite, and the cloth must
    // expand back toward its rest size.
    let mut b = WorldBuilder::new();
    let s = SpringParams::linear(5000.0, 0.1);
    Cloth {
        nx: 12,
        ny: 12,
        spacing: 0.02,
        mass: 0.05,
        structural: s,
        shear: Some(s),
        bend: Some(s),
        ..Cloth::default()
    }
    .build(&mut b, "cloth")
    .unwrap();
    let mut rng = Rng::new(3);
    for i in 0..b.particle_count() {
        let x = b.state.x.get(i) * 0.7 + rng.vec3(1e-4);
        b.state.x.set(i, x);
    }
    let mut w =
        b.build(SimParams { dt: 0.02, integrator: IntegratorKind::ImplicitEuler, ..SimParams::default() }).unwrap();
    let width = |w: &World| w.state.x.get(11).x - w.state.x.get(0).x;
    let start = w.save_state();
    for solver in [SolverKind::Cg, SolverKind::Cholesky] {
        w.restore_state(&start).unwrap();
        w.set_solver_settings(CgSettings { solver, ..CgSettings::default() });
        let w0 = width(&w);
        let r = w.step().unwrap();
        assert!(r.definite_fallback, "{solver:?}: the exact system should have been indefinite: {r:?}");
        w.run(50).unwrap();
        assert!(width(&w) > w0, "{solver:?}: the compressed cloth should expand: width {} → {}", w0, width(&w));
    }
}

#[test]
fn block_matrix_pattern_records_misses_and_widens() {
    // Blocks outside the pattern are recorded, not lost silently; widening makes
    // room for them (values cleared), and a product then uses them. The diagonal is
    // always present, and `asymmetry` sees a one-sided block.
    let mut a = BlockMatrix::with_pattern(3, &[(0, 1)]);
    assert_eq!(a.nnz_blocks(), 5, "3 diagonal + (0,1) + (1,0)");
    let m = DMat3::from_cols(DVec3::new(1.0, 2.0, 3.0), DVec3::new(0.0, 4.0, 5.0), DVec3::new(0.0, 0.0, 6.0));
    a.add(0, 1, m);
    a.add(2, 0, m);
    assert_eq!(a.missed(), &[(2, 0)]);
    assert_eq!(a.block(0, 1), m);
    assert!(a.asymmetry() > 0.0, "(0,1) without its transpose is asymmetric");
    a.widen();
    assert!(a.missed().is_empty() && a.find(2, 0).is_some() && a.find(0, 2).is_some());
    assert_eq!(a.block(0, 1), DMat3::ZERO, "widening clears values");
    a.add(2, 0, m);
    a.add(0, 2, m.transpose());
    assert_eq!(a.asymmetry(), 0.0);
    let mut x = Vec3s::zeros(3);
    x.set(0, DVec3::new(1.0, -1.0, 2.0));
    let mut y = Vec3s::zeros(3);
    a.mul(&x, &mut y);
    assert_eq!(y.get(2), m * x.get(0));
    assert_eq!(y.get(0), DVec3::ZERO);
}

/// x solving A x = b on the free rows by dense Cholesky (fixed rows zero): the
/// reference for the iterative solvers.
fn dense_solve(a: &BlockMatrix, b: &Vec3s, fixed: &[bool]) -> Vec3s {
    let n = a.rows();
    let free: Vec<usize> = (0..n).filter(|&i| !fixed.get(i).copied().unwrap_or(false)).collect();
    let m = 3 * free.len();
    let mut d = vec![0.0; m * m];
    let mut rhs = vec![0.0; m];
    for (r, &i) in free.iter().enumerate() {
        rhs[3 * r..3 * r + 3].copy_from_slice(&b.get(i).to_array());
        for (c, &j) in free.iter().enumerate() {
            let blk = a.block(i, j);
            for (col, axis) in [blk.x_axis, blk.y_axis, blk.z_axis].into_iter().enumerate() {
                for (row, v) in axis.to_array().into_iter().enumerate() {
                    d[(3 * r + row) * m + 3 * c + col] = v;
                }
            }
        }
    }
    // Cholesky, D = L Lᵀ, in place (lower triangle).
    for j in 0..m {
        let mut s = d[j * m + j];
        for k in 0..j {
            s -= d[j * m + k] * d[j * m + k];
        }
        assert!(s > 0.0, "the test matrix must be positive definite");
        let l = s.sqrt();
        d[j * m + j] = l;
        for i in j + 1..m {
            let mut s = d[i * m + j];
            for k in 0..j {
                s -= d[i * m + k] * d[j * m + k];
            }
            d[i * m + j] = s / l;
        }
    }
    for i in 0..m {
        let mut s = rhs[i];
        for k in 0..i {
            s -= d[i * m + k] * rhs[k];
        }
        rhs[i] = s / d[i * m + i];
    }
    for i in (0..m).rev() {
        let mut s = rhs[i];
        for k in i + 1..m {
            s -= d[k * m + i] * rhs[k];
        }
        rhs[i] = s / d[i * m + i];
    }
    let mut x = Vec3s::zeros(n);
    for (r, &i) in free.iter().enumerate() {
        x.set(i, DVec3::from_slice(&rhs[3 * r..3 * r + 3]));
    }
    x
}

#[test]
fn every_solver_matches_a_dense_solve_to_1e_10() {
    // Tolerance 1e-12 on the true residual; the answer must agree with a dense
    // Cholesky solve to 1e-10 of its largest entry (κ here is at most about 1e4, so
    // a 1e-12 residual bounds the error near 1e-8 in the worst case and far below in
    // practice). Cold and warm starts, with and without fixed rows.
    let mut rng = Rng::new(21);
    for solver in SolverKind::ALL {
        for (case, (n, edges, k)) in [(6, 12, 1.0), (40, 120, 100.0), (120, 500, 1e3)].into_iter().enumerate() {
            let a = random_spd(&mut rng, n, edges, k);
            let b = random_vec(&mut rng, n);
            for fixed in [vec![], (0..n).map(|i| i % 5 == 1).collect::<Vec<bool>>()] {
                let reference = dense_solve(&a, &b, &fixed);
                let scale = (0..n).map(|i| reference.get(i).abs().max_element()).fold(0.0, f64::max);
                for warm in [false, true] {
                    let mut x = if warm { random_vec(&mut rng, n) } else { Vec3s::zeros(n) };
                    let settings =
                        CgSettings { tolerance: 1e-12, max_iterations: 10_000, solver, ..CgSettings::default() };
                    let report = Cg::new(settings).solve(&a, &b, &mut x, &fixed).unwrap();
                    let err = (0..n).map(|i| (x.get(i) - reference.get(i)).abs().max_element()).fold(0.0, f64::max);
                    println!(
                        "{} case {case} ({} fixed, warm {warm}): {} iterations, residual {:.1e}, error {:.1e} of {scale:.1e}",
                        solver.name(),
                        fixed.iter().filter(|f| **f).count(),
                        report.iterations,
                        report.residual,
                        err
                    );
                    assert!(report.residual <= 1e-12, "{}: residual {:e}", solver.name(), report.residual);
                    assert!(err <= 1e-10 * scale, "{} case {case}: error {err:e} against {scale:e}", solver.name());
                }
            }
        }
    }
}

/// The benchmark cloth (`wobble::build::bench`, two corners pinned) under implicit
/// Euler at h = 1e-3 s with `solver`, released from rest.
fn swinging_bench_cloth(n: usize, solver: SolverKind) -> World {
    let (mut w, _) = wobble::build::bench::bench_world(n).unwrap();
    w.set_integrator(IntegratorKind::ImplicitEuler);
    w.set_dt(1e-3).unwrap();
    w.set_solver_settings(CgSettings { tolerance: 1e-6, solver, ..CgSettings::default() });
    w
}

#[test]
fn ssor_warm_started_cg_gives_the_block_jacobi_answer_in_fewer_iterations() {
    // Issue 13: the same answer as the solver before it to the tolerance: positions
    // within 1e-6 m after 100 steps of the swinging 32² benchmark cloth (its lower
    // corners fall about 5 mm in that time), with fewer iterations (warm start and SSOR;
    // measured about 6 against 25 per step).
    let run = |solver| {
        let mut w = swinging_bench_cloth(32, solver);
        let mut iterations = 0u64;
        for _ in 0..100 {
            let r = w.step().unwrap();
            assert!(r.residual <= 1e-6, "{}: residual {:e}", solver.name(), r.residual);
            iterations += u64::from(r.iterations);
        }
        (w.state.x.to_vecs(), iterations)
    };
    let (old, old_it) = run(SolverKind::CgJacobi);
    let (new, new_it) = run(SolverKind::Cg);
    let moved = old
        .iter()
        .zip(wobble::build::bench::bench_world(32).unwrap().0.state.x.to_vecs())
        .map(|(a, b)| a.distance(b))
        .fold(0.0, f64::max);
    let diff = old.iter().zip(&new).map(|(a, b)| a.distance(*b)).fold(0.0, f64::max);
    println!(
        "after 100 steps: largest displacement {moved:.3e} m, largest difference {diff:.3e} m; iterations {old_it} (cg-jacobi), {new_it} (cg)"
    );
    assert!(moved > 1e-3, "the cloth must swing, moved {moved:e} m");
    assert!(diff <= 1e-6, "the solvers differ by {diff:e} m");
    assert!(2 * new_it < old_it, "cg took {new_it} iterations against {old_it}");
}

#[test]
fn the_warm_start_picks_high_orders_on_a_swinging_cloth_and_saves_iterations() {
    // The 32² benchmark cloth swings smoothly: the order that predicted the last Δv
    // best is high most of the time, and the solves need fewer iterations than when
    // the extrapolation is at most linear (the warm start before this change).
    let run = |order: u8| {
        let mut w = swinging_bench_cloth(32, SolverKind::Cg);
        w.set_solver_settings(CgSettings { warm_start_order: order, ..w.solver_settings() });
        let (mut iterations, mut orders) = (0u64, [0u32; 5]);
        for _ in 0..100 {
            let r = w.step().unwrap();
            assert!(r.residual <= 1e-6);
            assert!(r.warm_start_order <= order, "order {} above the highest allowed, {order}", r.warm_start_order);
            iterations += u64::from(r.iterations);
            orders[usize::from(r.warm_start_order)] += 1;
        }
        (w.state.x.to_vecs(), iterations, orders)
    };
    let (linear, linear_it, _) = run(1);
    let (full, full_it, orders) = run(CgSettings::MAX_WARM_START_ORDER);
    let diff = linear.iter().zip(&full).map(|(a, b)| a.distance(*b)).fold(0.0, f64::max);
    println!(
        "iterations: {linear_it} (at most linear), {full_it} (up to order 4, used {orders:?}); difference {diff:.2e} m"
    );
    assert!(diff <= 1e-6, "the warm start changed the answer by {diff:e} m");
    assert!(orders[2..].iter().sum::<u32>() >= 80, "orders used: {orders:?}");
    assert!(10 * full_it <= 8 * linear_it, "{full_it} iterations against {linear_it}");
}

#[test]
fn a_velocity_change_the_guess_predicts_exactly_needs_no_iteration() {
    // Loose particles of different masses falling freely: every step solves
    // M Δv = h M g, whose answer the first step finds (A = M, which block SSOR
    // inverts exactly), so from then on the guess is exact, the lowest order is
    // chosen among the equally good ones, and the solve stops before its first
    // iteration.
    let mut b = WorldBuilder::new();
    for i in 0..10 {
        b.add_particle(DVec3::new(0.1 * i as f64, 1.0, 0.0), DVec3::ZERO, 0.01 * (1 + i) as f64, 0.0);
    }
    b.add_force(Gravity::default());
    let mut w =
        b.build(SimParams { dt: 1e-3, integrator: IntegratorKind::ImplicitEuler, ..SimParams::default() }).unwrap();
    let first = w.step().unwrap();
    assert!(first.iterations > 0, "the first step starts from zero");
    for step in 1..10 {
        let r = w.step().unwrap();
        assert_eq!((r.iterations, r.warm_start_order), (0, 0), "step {step}: {r:?}");
    }
}

#[test]
fn a_resumed_implicit_run_continues_bit_for_bit_with_its_warm_start() {
    // The warm start (the last five Δv, from which each step's order is chosen)
    // changes the next solves' iterates, so it is part of a checkpoint: a world
    // restored from the bytes saved at step 10 must reach the same bits at step 20
    // as the world that ran on.
    let mut w = swinging_bench_cloth(32, SolverKind::Cg);
    w.run(10).unwrap();
    let saved = w.save_state();
    w.run(10).unwrap();
    let mut resumed = swinging_bench_cloth(32, SolverKind::Cg);
    resumed.restore_state(&saved).unwrap();
    resumed.run(10).unwrap();
    for i in 0..w.state.len() {
        assert_eq!(w.state.x.get(i), resumed.state.x.get(i), "particle {i} position differs after resuming");
    }
}

#[test]
fn a_solve_that_hits_its_cap_stops_the_run_with_step_residual_and_advice() {
    let mut w = swinging_bench_cloth(32, SolverKind::Cg);
    w.set_solver_settings(CgSettings { tolerance: 1e-12, max_iterations: 1, ..CgSettings::default() });
    match w.step() {
        Err(e @ StepError::Integrator { step: 1, .. }) => {
            let text = e.to_string();
            println!("{text}");
            for part in [
                "step 1",
                "did not converge in 1 iterations",
                "relative residual",
                "smaller time step",
                "cg_max_iterations",
                "cg_accept_unconverged",
            ] {
                assert!(text.contains(part), "`{part}` missing from: {text}");
            }
        }
        other => panic!("one iteration cannot reach 1e-12, got {other:?}"),
    }
    // Allowed by the scene: the run goes on with the unconverged solve.
    let mut w = swinging_bench_cloth(32, SolverKind::Cg);
    w.set_solver_settings(CgSettings {
        tolerance: 1e-12,
        max_iterations: 1,
        accept_unconverged: true,
        ..CgSettings::default()
    });
    let r = w.step().unwrap();
    assert_eq!(r.iterations, 1);
    assert!(r.residual > 1e-12, "residual {:e}", r.residual);
}

/// Contact stencils outside the pattern (`Stencils`): solving A + C, with C applied
/// without a matrix and A holding the stencils' diagonal blocks, gives the same
/// answer as the same system with every stencil block written into a widened
/// pattern, for both preconditioners, with and without fixed rows (tolerance
/// 1e-12 on both solves, answers within 1e-9 of their size).
#[test]
fn stencils_outside_the_pattern_solve_as_blocks_inside_it() {
    let mut rng = Rng::new(23);
    let n = 120;
    let base = random_spd(&mut rng, n, 400, 50.0);
    let mut stencils = Stencils::default();
    let mut pairs = base.pattern();
    let mut entries = Vec::new();
    for _ in 0..60 {
        // A vertex against a triangle: weights 1 and −(barycentric).
        let mut p = [0u32; 4];
        for slot in &mut p {
            *slot = rng.below(n) as u32;
        }
        if p[1] == p[0] || p[2] == p[0] || p[3] == p[0] || p[1] == p[2] || p[2] == p[3] || p[1] == p[3] {
            continue;
        }
        let (u, v) = (rng.range(0.1, 0.5), rng.range(0.1, 0.4));
        let w = [1.0, -u, -v, -(1.0 - u - v)];
        let nrm = rng.vec3(1.0).normalize();
        let nn = DMat3::from_cols(nrm * nrm.x, nrm * nrm.y, nrm * nrm.z);
        let m = nn * rng.range(10.0, 1000.0) + (DMat3::IDENTITY - nn) * rng.range(0.0, 50.0);
        stencils.push(p, w, m);
        for a in 0..4 {
            for b in 0..4 {
                pairs.push((p[a], p[b]));
                entries.push((p[a] as usize, p[b] as usize, m * (w[a] * w[b])));
            }
        }
    }
    stencils.index(n);
    // A with the stencils' diagonals (what the implicit sink builds), and the full
    // matrix with every block.
    let mut with_diagonals = base.clone();
    let mut full = BlockMatrix::with_pattern(n, &pairs);
    for (i, j) in base.pattern() {
        full.add(i as usize, j as usize, base.block(i as usize, j as usize));
    }
    for &(i, j, b) in &entries {
        full.add(i, j, b);
        if i == j {
            with_diagonals.add(i, i, b);
        }
    }
    assert!(full.missed().is_empty() && with_diagonals.missed().is_empty());
    let b = random_vec(&mut rng, n);
    for solver in [SolverKind::Cg, SolverKind::CgJacobi, SolverKind::Cholesky] {
        for fixed in [vec![], (0..n).map(|i| i % 9 == 0).collect::<Vec<bool>>()] {
            let settings = CgSettings { tolerance: 1e-12, max_iterations: 10_000, solver, ..CgSettings::default() };
            let (mut x1, mut x2) = (Vec3s::zeros(n), Vec3s::zeros(n));
            Cg::new(settings).solve_with(&with_diagonals, &stencils, &b, &mut x1, &fixed).unwrap();
            Cg::new(settings).solve(&full, &b, &mut x2, &fixed).unwrap();
            let diff = (0..n).map(|i| (x1.get(i) - x2.get(i)).length_squared()).sum::<f64>().sqrt();
            assert!(diff <= 1e-9 * norm(&x2), "{solver:?}, {} fixed: answers differ by {diff:e}", fixed.len());
        }
    }
}

/// A stiff 16 × 16 cubic cloth (exact Jacobian: no 0.99 factor) with spring
/// damping `c`, swinging for 0.1 s at h = 5 ms, then shaken by random velocities
/// of up to 5 cm/s: a step whose linearisation leaves a large residual.
fn shaken_cubic_cloth(c: f64) -> World {
    let law = SpringLaw::Cubic(CubicLaw::new(5000.0, 1.1, 30000.0, 0.9, 10000.0, 1.0).unwrap());
    let mut w = stiff_cloth_damped(IntegratorKind::ImplicitEuler, 5e-3, law, c);
    w.run(20).unwrap();
    let mut rng = Rng::new(7);
    for i in 0..w.state.len() {
        let v = w.state.v.get(i) + rng.vec3(0.05);
        w.state.v.set(i, v);
    }
    w
}

/// The same step taken with 1..=`k` Newton iterations asked for (linear solves
/// to 1e-12): each one's report and end positions.
fn newton_steps(w: &mut World, k: u32) -> Vec<(wobble::integrate::StepReport, Vec3s)> {
    let saved = w.save_state();
    (1..=k)
        .map(|k| {
            w.restore_state(&saved).unwrap();
            w.set_solver_settings(CgSettings {
                tolerance: 1e-12,
                max_iterations: 100_000,
                newton_iterations: k,
                newton_tolerance: 1e-300,
                ..CgSettings::default()
            });
            let report = w.step().unwrap();
            (report, w.state.x.clone())
        })
        .collect()
}

/// The relative non-linear residual after 1..=`k` Newton iterations of the same
/// step (each taking all the iterations asked for), and the end positions of each.
fn newton_residuals(w: &mut World, k: u32) -> (Vec<f64>, Vec<Vec3s>) {
    let mut out = (Vec::new(), Vec::new());
    for (asked, (report, ends)) in (1..=k).zip(newton_steps(w, k)) {
        assert_eq!(report.newton_iterations, asked);
        out.0.push(report.newton_residual);
        out.1.push(ends);
    }
    out
}

/// Newton iterations on the non-linear backward Euler system converge
/// quadratically where the Jacobian is exact (no spring damping, whose ∂f/∂x
/// the Jacobian leaves out as Baraff–Witkin do): once the residual is small, each
/// iteration squares it, r(k+1) ≤ C r(k)² with C = 10, until the rounding floor of
/// the positions (about 1e-9 relative here: k = 30,000 N/m times 1e-17 m).
#[test]
fn newton_iterations_drive_the_nonlinear_residual_down_quadratically() {
    let (r, ends) = newton_residuals(&mut shaken_cubic_cloth(0.0), 6);
    println!("relative residuals after 1..6 Newton iterations: {r:?}");
    assert!(r[0] > 0.1, "the linearised step leaves a real residual here: {r:?}");
    let floor = 1e-8;
    let mut squared = 0;
    for k in 0..5 {
        if r[k] < floor {
            break;
        }
        assert!(r[k + 1] < r[k], "Newton did not reduce the residual: {r:?}");
        if r[k] < 0.05 && r[k + 1] > floor {
            assert!(r[k + 1] <= 10.0 * r[k] * r[k], "not quadratic from {:e} to {:e}: {r:?}", r[k], r[k + 1]);
            squared += 1;
        }
    }
    assert!(squared >= 2, "fewer than two iterations measured in the quadratic range: {r:?}");
    assert!(r[5] < floor, "Newton did not reach the floor: {r:?}");
    // The converged step differs from the linearised one; the last two agree.
    let diff = |a: &Vec3s, b: &Vec3s| (0..a.len()).map(|i| (a.get(i) - b.get(i)).length()).fold(0.0, f64::max);
    assert!(diff(&ends[4], &ends[5]) < 1e-6 * diff(&ends[0], &ends[5]), "{r:?}");
    // With spring damping the Jacobian is no longer exact: convergence turns
    // linear, still reaching 1e-7 within six iterations.
    let (r, _) = newton_residuals(&mut shaken_cubic_cloth(0.05), 6);
    println!("with damping: {r:?}");
    assert!(r.windows(2).all(|p| p[1] < p[0]) && r[5] < 1e-7, "{r:?}");
}

#[test]
fn newton_iterations_leave_the_default_step_unchanged_and_are_resumable() {
    let exact = SpringLaw::Cubic(CubicLaw::new(5000.0, 1.1, 30000.0, 0.9, 10000.0, 1.0).unwrap());
    // One iteration without a tolerance is the linearised step, bit for bit, and
    // computes no residual.
    let mut a = stiff_cloth(IntegratorKind::ImplicitEuler, 2e-3, exact);
    let mut b = stiff_cloth(IntegratorKind::ImplicitEuler, 2e-3, exact);
    b.set_solver_settings(CgSettings { newton_iterations: 1, ..CgSettings::default() });
    a.run(30).unwrap();
    b.run(30).unwrap();
    assert_eq!(a.state.x, b.state.x);
    assert_eq!(a.last_report().newton_residual, 0.0, "not computed by default");
    // Three iterations: a checkpoint in the middle resumes bit for bit.
    let three = CgSettings { newton_iterations: 3, ..CgSettings::default() };
    let mut c = stiff_cloth(IntegratorKind::ImplicitEuler, 2e-3, exact);
    c.set_solver_settings(three);
    c.run(10).unwrap();
    let saved = c.save_state();
    c.run(10).unwrap();
    let mut d = stiff_cloth(IntegratorKind::ImplicitEuler, 2e-3, exact);
    d.set_solver_settings(three);
    d.restore_state(&saved).unwrap();
    d.run(10).unwrap();
    assert_eq!(c.state.x, d.state.x);
    assert_eq!(c.metrics().newton_residual, d.metrics().newton_residual);
    let r = c.metrics().newton_residual;
    assert!(r > 0.0 && r < 1e-5, "residual after three iterations: {r:e}");
}

/// 000's Jacobian damping (0.99 on the cubic's b and d) makes the Jacobian
/// something other than the force's derivative: the linearised step then leaves a
/// residual as large as the step's own momentum change, and Newton iterations with
/// that Jacobian gain only a few per cent each. Measured, so users who ask for
/// Newton iterations know to set `jacobian_damping = 1`.
#[test]
fn newton_needs_the_exact_cubic_jacobian() {
    let mut damped = stiff_cloth(IntegratorKind::ImplicitEuler, 2e-3, cubic_law());
    damped.run(10).unwrap();
    let (r, _) = newton_residuals(&mut damped, 5);
    println!("jacobian_damping 0.99: {r:?}");
    assert!(r[0] > 0.5 && r[4] > 0.5 * r[0], "{r:?}");
    let exact = SpringLaw::Cubic(CubicLaw::new(5000.0, 1.1, 30000.0, 0.9, 10000.0, 1.0).unwrap());
    let mut w = stiff_cloth(IntegratorKind::ImplicitEuler, 2e-3, exact);
    w.run(10).unwrap();
    let (r, _) = newton_residuals(&mut w, 2);
    println!("jacobian_damping 1: {r:?}");
    assert!(r[0] < 0.05 && r[1] < 1e-5, "{r:?}");
}

/// A step whose linear solve fails (here: a time step 40 × too long for the
/// iteration budget) leaves the state as it was, and the step after it starts
/// cold: bit for bit the step of a fresh integrator from the same state, not one
/// warm-started from the failed solve's last iterate.
#[test]
fn a_failed_implicit_step_leaves_the_state_and_the_next_step_starts_cold() {
    let settings = CgSettings { max_iterations: 25, ..CgSettings::default() };
    let mut a = stiff_cloth(IntegratorKind::ImplicitEuler, 2e-3, SpringLaw::Linear);
    a.set_solver_settings(settings);
    a.run(20).unwrap();
    // 18 iterations a step at 2 ms; 32 at 80 ms (the same count from 0.2 s to 5 s).
    assert!(a.last_report().iterations < 25, "{:?}", a.last_report());
    let saved = a.save_state();
    a.set_dt(8e-2).unwrap();
    let before = a.state.clone();
    let err = a.step().expect_err("a budget of 25 iterations should not solve a step of 80 ms");
    assert!(matches!(err, StepError::Integrator { .. }), "{err}");
    assert_eq!(a.state.x, before.x);
    assert_eq!(a.state.v, before.v);
    a.set_dt(2e-3).unwrap();
    a.step().unwrap();
    // The same state, a fresh integrator (no warm start).
    let mut b = stiff_cloth(IntegratorKind::ImplicitEuler, 2e-3, SpringLaw::Linear);
    b.restore_state(&saved).unwrap();
    b.set_solver_settings(settings);
    b.step().unwrap();
    assert!(a.state.x == b.state.x, "the step after the failure was not a cold start");
    // And it is a real difference: warm-started from the history, the step ends
    // elsewhere (within the tolerance).
    let mut c = stiff_cloth(IntegratorKind::ImplicitEuler, 2e-3, SpringLaw::Linear);
    c.set_solver_settings(settings);
    c.restore_state(&saved).unwrap();
    c.step().unwrap();
    assert_ne!(c.state.x, b.state.x, "a warm start should change the step's last bits");
}

/// Far from the solution a full Newton step can raise the residual: on a cloth
/// squeezed to half its size and shaken (linear springs, h = 50 ms) the fifth
/// full step did (0.037 → 0.038 before the line search). With the line search
/// the residual never rises from one iteration count to the next, and the run
/// that stopped early (no step along δ lowered it) reports fewer iterations.
#[test]
fn newton_with_its_line_search_never_raises_the_residual() {
    let mut w = stiff_cloth_damped(IntegratorKind::ImplicitEuler, 5e-2, SpringLaw::Linear, 0.0);
    let mut rng = Rng::new(9);
    for i in 0..w.state.len() {
        let x = w.state.x.get(i) * 0.5 + rng.vec3(0.002);
        w.state.x.set(i, x);
        let v = w.state.v.get(i) + rng.vec3(1.0);
        w.state.v.set(i, v);
    }
    let mut r: Vec<f64> = Vec::new();
    for (asked, (report, _)) in (1..=8).zip(newton_steps(&mut w, 8)) {
        assert!(report.newton_iterations <= asked, "{report:?}");
        r.push(report.newton_residual);
    }
    println!("relative residuals after 1..8 Newton iterations: {r:?}");
    assert!(r[0] > 1.0, "the linearised step leaves a large residual here: {r:?}");
    assert!(r.windows(2).all(|p| p[1] <= p[0]), "the residual rose: {r:?}");
    assert!(r[7] < 0.05 * r[0], "Newton still gains: {r:?}");
}
