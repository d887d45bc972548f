//! Terzopoulos's semi-implicit step (002 eqs. 16–20, physics notes §7) checked
//! against the equations as the paper writes them, solved densely here; a stretched
//! cell moves back toward rest and a compressed one out; first-order convergence to
//! the exact trajectory; stability where symplectic Euler blows up; pins; and a
//! clear error when the compressed grid makes the system indefinite.

#[macro_use]
mod support;

use glam::DVec3;
use support::Rng;
use wobble::World;
use wobble::WorldBuilder;
use wobble::build::grid::{ElasticGrid, GridModel};
use wobble::force::grid::GridElasticity;
use wobble::force::{AirDrag, ForceContext, ForceTerm, Gravity, ScalarStiffnessSink};
use wobble::integrate::IntegratorKind;
use wobble::solve::CgSettings;
use wobble::world::SimParams;

const DRAG: f64 = 0.7;

/// A 3 × 3 × 2 grid solid (original or improved model), gravity, air drag, a
/// seeded random deformation and velocity; optionally two particles pinned.
fn grid_world(kind: IntegratorKind, dt: f64, model: GridModel, eta: f64, pins: bool) -> World {
    let mut b = WorldBuilder::new();
    let g = ElasticGrid {
        n: [3, 3, 2],
        spacing: [0.1, 0.1, 0.1],
        model,
        mass: 0.5,
        eta_length: eta,
        eta_angle: 0.5 * eta,
        eta_sdm: 0.5 * eta,
        eta_pillar: 0.5 * eta,
        ..ElasticGrid::default()
    };
    g.build(&mut b, "g").unwrap();
    b.add_force(Gravity::default());
    b.add_force(AirDrag { rate: DRAG });
    let mut rng = Rng::new(11);
    for i in 0..b.state.len() {
        b.state.x.add(i, rng.vec3(0.015));
        b.state.v.set(i, rng.vec3(0.3));
    }
    if pins {
        b.pin(0);
        b.pin(4);
    }
    let mut w = b.build(SimParams { dt, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 }).unwrap();
    w.set_solver_settings(CgSettings {
        tolerance: 1e-13,
        max_iterations: 2000,
        accept_unconverged: false,
        ..CgSettings::default()
    });
    w
}

/// Dense scalar matrix sink.
struct Dense {
    n: usize,
    k: Vec<f64>,
}

impl ScalarStiffnessSink for Dense {
    fn add(&mut self, i: usize, j: usize, value: f64) {
        self.k[i * self.n + j] += value;
    }
}

/// Solves the dense system A x = b (A n × n, row-major) by Gaussian elimination with
/// partial pivoting.
fn dense_solve(mut a: Vec<f64>, mut b: Vec<f64>, n: usize) -> Vec<f64> {
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| a[i * n + c].abs().total_cmp(&a[j * n + c].abs())).unwrap();
        if p != c {
            for k in 0..n {
                a.swap(c * n + k, p * n + k);
            }
            b.swap(c, p);
        }
        for r in c + 1..n {
            let f = a[r * n + c] / a[c * n + c];
            for k in c..n {
                a[r * n + k] -= f * a[c * n + k];
            }
            b[r] -= f * b[c];
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|k| a[r * n + k] * x[k]).sum();
        x[r] = (b[r] - s) / a[r * n + r];
    }
    x
}

/// One step of eqs. 16–20 written as the paper does, solved densely:
/// A = K + M/h² + C/(2h), g = f + (M/h² + C/(2h)) r + (M/h − C/2) v, A r' = g,
/// with C = γ M (the air drag), f the external force (gravity: the total force
/// minus the elastic −K r and the drag −γ M v). Pinned rows are held (r' = r).
fn paper_step(w: &World, h: f64) -> Vec<DVec3> {
    let n = w.state.len();
    let ctx = ForceContext { particles: &w.particles, state: &w.state, t: 0.0 };
    let mut dense = Dense { n, k: vec![0.0; n * n] };
    assert!(w.force_of::<GridElasticity>().unwrap().add_scalar_stiffness(&ctx, &mut dense));
    let free: Vec<usize> = (0..n).filter(|&i| !w.particles.pinned[i]).collect();
    let g_vec = Gravity::default().g;
    let mut next = w.state.x.to_vecs();
    for c in 0..3 {
        let m = free.len();
        let mut a = vec![0.0; m * m];
        let mut g = vec![0.0; m];
        for (r, &i) in free.iter().enumerate() {
            let mass = w.particles.mass[i];
            let (x, v) = (w.state.x.get(i)[c], w.state.v.get(i)[c]);
            let diag = mass / (h * h) + DRAG * mass / (2.0 * h);
            g[r] = mass * g_vec[c] + diag * x + (mass / h - DRAG * mass / 2.0) * v;
            for j in 0..n {
                let kij = dense.k[i * n + j];
                if w.particles.pinned[j] {
                    // Known column: move to the right-hand side.
                    g[r] -= kij * w.state.x.get(j)[c];
                } else {
                    let col = free.iter().position(|&f| f == j).unwrap();
                    a[r * m + col] += kij;
                }
            }
            a[r * m + r] += diag;
        }
        let x = dense_solve(a, g, m);
        for (r, &i) in free.iter().enumerate() {
            next[i][c] = x[r];
        }
    }
    next
}

#[test]
fn step_solves_the_papers_equations() {
    // Against the dense solution of eqs. 16–20 for both models, with and without
    // pins: positions agree to 1e-10 of the displacement (CG to 1e-13), velocities
    // are (r' − r)/h, pinned particles stay put.
    let h = 2e-3;
    for model in [GridModel::Original, GridModel::IMPROVED] {
        for pins in [false, true] {
            let mut w = grid_world(IntegratorKind::SemiImplicit, h, model, 3.0, pins);
            let expected = paper_step(&w, h);
            let before = w.state.x.to_vecs();
            w.step().unwrap();
            let scale = before.iter().zip(&expected).map(|(a, b)| (*b - *a).length()).fold(0.0, f64::max);
            for i in 0..w.state.len() {
                let got = w.state.x.get(i);
                assert!(
                    (got - expected[i]).length() <= 1e-10 * scale,
                    "{model:?} pins {pins}: particle {i} at {got}, paper's step gives {}",
                    expected[i]
                );
                let v = (got - before[i]) / h;
                assert!((w.state.v.get(i) - v).length() <= 1e-12 * v.length().max(1e-9));
                if pins && w.particles.pinned[i] {
                    assert_eq!(got, before[i]);
                }
            }
            assert!(w.metrics().iterations > 0);
        }
    }
}

/// A single cell scaled about its centre, at rest, no gravity: one step.
fn scaled_cell_step(factor: f64, h: f64) -> (Vec<DVec3>, Vec<DVec3>, DVec3) {
    let mut b = WorldBuilder::new();
    let g = ElasticGrid { n: [2, 2, 2], spacing: [0.1; 3], mass: 0.08, eta_length: 1.0, ..ElasticGrid::default() };
    g.build(&mut b, "cell").unwrap();
    let centre: DVec3 = b.state.x.to_vecs().iter().sum::<DVec3>() / 8.0;
    for i in 0..8 {
        let p = b.state.x.get(i);
        b.state.x.set(i, centre + (p - centre) * factor);
    }
    let mut w = b.build(SimParams { dt: h, integrator: IntegratorKind::SemiImplicit, ..SimParams::default() }).unwrap();
    let before = w.state.x.to_vecs();
    w.step().unwrap();
    (before, w.state.x.to_vecs(), centre)
}

#[test]
fn stretched_cell_moves_back_and_compressed_cell_moves_out() {
    // Notes §7: on a single stretched cell a step moves every particle toward the
    // centre, on a compressed one away from it; the centre does not move.
    for (factor, sign) in [(1.2, -1.0), (0.8, 1.0)] {
        let (before, after, centre) = scaled_cell_step(factor, 5e-3);
        for i in 0..8 {
            let out = (before[i] - centre).normalize();
            let moved = after[i] - before[i];
            assert!(sign * moved.dot(out) > 0.0, "scale {factor}: particle {i} moved {moved}");
        }
        let c_after: DVec3 = after.iter().sum::<DVec3>() / 8.0;
        assert!((c_after - centre).length() < 1e-14, "the centre of mass moved");
    }
}

#[test]
fn converges_with_first_order_to_the_exact_trajectory() {
    // Positions at t = 0.1 s against RK4 at h = 1e-5 (its error ~1e-15 here): the
    // semi-implicit error must fall like h (slope 0.85–1.15 over h = 2e-3 … 2.5e-4).
    let t_end = 0.1;
    let reference = {
        let mut w = grid_world(IntegratorKind::Rk4, 1e-5, GridModel::IMPROVED, 3.0, false);
        for _ in 0..10_000 {
            w.step().unwrap();
        }
        w.state.x.to_vecs()
    };
    let hs = [2e-3, 1e-3, 5e-4, 2.5e-4];
    let mut errs = Vec::new();
    for h in hs {
        let mut w = grid_world(IntegratorKind::SemiImplicit, h, GridModel::IMPROVED, 3.0, false);
        let steps = (t_end / h).round() as usize;
        for _ in 0..steps {
            w.step().unwrap();
        }
        let e = w.state.x.to_vecs().iter().zip(&reference).map(|(a, b)| (*a - *b).length()).fold(0.0, f64::max);
        errs.push(e);
    }
    let slope = support::loglog_slope(&hs, &errs);
    assert!((0.85..=1.15).contains(&slope), "order {slope:.3}, errors {errs:?}");
}

/// A stiff 4 × 4 × 4 improved grid solid (0.3 m, 1 kg, η = 400 N m on the grid
/// lines, 200 N m on the other families) with light air drag, no gravity.
fn stiff_grid() -> WorldBuilder {
    let mut b = WorldBuilder::new();
    let g = ElasticGrid {
        n: [4, 4, 4],
        spacing: [0.1; 3],
        model: GridModel::IMPROVED,
        mass: 1.0,
        eta_length: 400.0,
        eta_angle: 200.0,
        eta_sdm: 200.0,
        eta_pillar: 200.0,
        ..ElasticGrid::default()
    };
    g.build(&mut b, "g").unwrap();
    b.add_force(AirDrag { rate: 0.1 });
    b
}

/// The stiff grid stretched uniformly by `stretch` about its centre and released
/// from rest.
fn stretched_release(kind: IntegratorKind, dt: f64, stretch: f64) -> World {
    let mut b = stiff_grid();
    let centre: DVec3 = b.state.x.to_vecs().iter().sum::<DVec3>() / b.state.len() as f64;
    for i in 0..b.state.len() {
        let p = b.state.x.get(i);
        b.state.x.set(i, centre + (p - centre) * stretch);
    }
    b.build(SimParams { dt, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 }).unwrap()
}

/// Runs `w` for `seconds`; returns (start, highest, final) total energy, or the
/// error that stopped it.
fn energies(w: &mut World, seconds: f64) -> Result<(f64, f64, f64), String> {
    let e0 = w.metrics().total;
    let mut worst = e0;
    let steps = (seconds / w.params().dt).ceil() as usize;
    for _ in 0..steps {
        w.step().map_err(|e| e.to_string())?;
        worst = worst.max(w.metrics().total);
    }
    Ok((e0, worst, w.metrics().total))
}

#[test]
fn indefinite_system_is_reported_not_solved() {
    // A cell crushed to 5 % of its size has strongly negative α: with a large step
    // the matrix K + M/h² is indefinite, and the step must say so (no NaN).
    let mut b = WorldBuilder::new();
    let g = ElasticGrid { n: [2, 2, 2], spacing: [0.1; 3], mass: 1e-3, eta_length: 50.0, ..ElasticGrid::default() };
    g.build(&mut b, "cell").unwrap();
    let centre: DVec3 = b.state.x.to_vecs().iter().sum::<DVec3>() / 8.0;
    let mut rng = Rng::new(3);
    for i in 0..8 {
        let p = b.state.x.get(i);
        b.state.x.set(i, centre + (p - centre) * 0.05 + rng.vec3(1e-3));
    }
    let mut w =
        b.build(SimParams { dt: 0.05, integrator: IntegratorKind::SemiImplicit, ..SimParams::default() }).unwrap();
    let err = w.step().expect_err("an indefinite system must be reported");
    let text = err.to_string();
    assert!(text.contains("not positive definite"), "{text}");
    assert!(w.state.x.to_vecs().iter().all(|p| p.is_finite()));
}

/// A spring of negative stiffness from one particle to the origin, f = −K x with
/// K = `before` until `switch` (s) and `after` from then on: the scheme's matrix
/// K + M/h² turns indefinite when |K| exceeds M/h².
#[derive(Debug)]
struct Softening {
    switch: f64,
    before: f64,
    after: f64,
}

impl Softening {
    fn k(&self, t: f64) -> f64 {
        if t < self.switch { self.before } else { self.after }
    }
}

impl ForceTerm for Softening {
    fn name(&self) -> &str {
        "softening"
    }
    fn add_forces(&mut self, ctx: &ForceContext<'_>, out: &mut wobble::force::Loads) {
        out.f.add(0, ctx.state.x.get(0) * -self.k(ctx.t));
    }
    fn add_scalar_stiffness(&self, ctx: &ForceContext<'_>, sink: &mut dyn ScalarStiffnessSink) -> bool {
        sink.add(0, 0, self.k(ctx.t));
        true
    }
}

#[test]
fn a_step_that_fails_after_a_successful_half_leaves_the_state_as_it_was() {
    // m = 1 kg, h = 0.1 s (M/h² = 100): K = −200 N/m makes the whole step
    // indefinite but its first half (M/(h/2)² = 400) fine; from t = 0.04 s on
    // K = −1e12 N/m, so the second half fails at every halving. The step must
    // fail with the state untouched (the clock does not move on a failure),
    // not half advanced.
    let mut b = WorldBuilder::new();
    b.add_particle(DVec3::new(0.1, 0.2, 0.0), DVec3::new(0.3, 0.0, 0.0), 1.0, 0.0);
    b.add_force(Softening { switch: 0.04, before: -200.0, after: -1e12 });
    let mut w =
        b.build(SimParams { dt: 0.1, integrator: IntegratorKind::SemiImplicit, ..SimParams::default() }).unwrap();
    let (x0, v0) = (w.state.x.get(0), w.state.v.get(0));
    let err = w.step().expect_err("the second half cannot be solved");
    assert!(err.to_string().contains("not positive definite"), "{err}");
    assert_eq!((w.state.x.get(0), w.state.v.get(0), w.time()), (x0, v0, 0.0), "the failed step moved the state");
}

/// The stiff grid held by its two end faces (x = 0 and x = max), pulled apart to
/// `stretch` times its length, with a seeded random velocity.
fn held_stretched(kind: IntegratorKind, dt: f64, stretch: f64) -> World {
    let mut b = stiff_grid();
    let mut rng = Rng::new(5);
    for i in 0..b.state.len() {
        let p = b.state.x.get(i);
        b.state.x.set(i, DVec3::new(p.x * stretch, p.y, p.z));
        if p.x.abs() < 1e-9 || (p.x - 0.3).abs() < 1e-9 {
            b.pin(i);
        } else {
            b.state.v.set(i, rng.vec3(0.2));
        }
    }
    b.build(SimParams { dt, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 }).unwrap()
}

#[test]
fn implicit_stiffness_carries_a_strongly_stretched_grid_past_the_explicit_limit() {
    // 002's use of the scheme: where the grid is stretched, α > 0 and K(r) is
    // positive, so the implicit part acts where the explicit limit is set. A grid
    // pulled to 1.5 × and 2 × its length between its end faces (η = 400 N m):
    // * at 2 × symplectic Euler's estimate, symplectic Euler blows up within 10
    //   steps; the semi-implicit step runs 0.5 s without blowing up;
    // * at 0.9 × that estimate, the semi-implicit step never raises the total
    //   energy (its implicit part only dissipates here), while symplectic Euler's
    //   energy oscillates above its start.
    // Its limit near rest is checked by
    // `near_rest_the_scheme_is_explicit_and_not_unconditionally_stable`.
    for stretch in [1.5, 2.0] {
        let probe = held_stretched(IntegratorKind::SymplecticEuler, 1e-4, stretch);
        let h_se = probe.stability().dt_for(IntegratorKind::SymplecticEuler).unwrap();

        let mut se = held_stretched(IntegratorKind::SymplecticEuler, 2.0 * h_se, stretch);
        assert!((0..10).any(|_| se.step().is_err()), "stretch {stretch}: symplectic Euler at 2 × should blow up");
        let mut si = held_stretched(IntegratorKind::SemiImplicit, 2.0 * h_se, stretch);
        energies(&mut si, 0.5).unwrap_or_else(|e| panic!("stretch {stretch}: semi-implicit at 2 × failed: {e}"));

        let mut si = held_stretched(IntegratorKind::SemiImplicit, 0.9 * h_se, stretch);
        let (e0, worst, end) = energies(&mut si, 0.5).unwrap();
        assert!(worst <= e0 * (1.0 + 1e-12) && end < e0, "stretch {stretch}: energy {e0} → highest {worst}, end {end}");
        let mut se = held_stretched(IntegratorKind::SymplecticEuler, 0.9 * h_se, stretch);
        let (e0, worst, _) = energies(&mut se, 0.5).unwrap();
        assert!(worst > e0, "stretch {stretch}: symplectic Euler's energy should oscillate above its start");
    }
}

#[test]
fn near_rest_the_scheme_is_explicit_and_not_unconditionally_stable() {
    // The secant K(r) vanishes at the rest shape (α = 0), so oscillation about rest
    // is stepped explicitly: a grid stretched by only 5 % and released blows up at
    // 2 × the estimate (stability.rs): the step is not unconditionally stable, and
    // the blow-up is reported, not returned as NaN.
    let probe = stretched_release(IntegratorKind::SemiImplicit, 1e-4, 1.05);
    let h = probe.stability().dt_for(IntegratorKind::SemiImplicit).unwrap();
    let mut w = stretched_release(IntegratorKind::SemiImplicit, 2.0 * h, 1.05);
    let err = energies(&mut w, 1.0).expect_err("2 × the estimate near rest should blow up");
    assert!(err.contains("blew up") || err.contains("not positive definite"), "{err}");
}
