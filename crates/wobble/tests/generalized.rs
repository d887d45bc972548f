//! Oriented particles and generalized springs (001 §4; physics notes §6).
//!
//! Invariants checked: forces sum to zero and their moments cancel the torques (so
//! linear and angular momentum are conserved), forces and torques are the negative
//! gradient of the energy, a rigid motion produces no load, damping only removes
//! energy, every integrator advances the rotation and keeps q unit, and a spring
//! without bend or twist is the plain linear spring, bit for bit.

#[macro_use]
mod support;

use glam::{DQuat, DVec3};
use support::Rng;
use wobble::build::WorldBuilder;
use wobble::build::chain::Chain;
use wobble::build::jelly::JellyCube;
use wobble::build::rod::Rod;
use wobble::force::generalized::{angular_momentum, linear_momentum, quat_norm_error};
use wobble::force::{AngularLaw, ForceContext, ForceTerm, GeneralizedParams, GeneralizedSprings, Loads, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::model::{Particles, State};
use wobble::world::{SimParams, World};

/// A smooth law with every feature but one-sidedness: symmetric bend and twist with
/// cubic parts (a one-sided bend law jumps where the bend axis crosses h, which
/// spoils the order of Runge–Kutta methods).
fn smooth_params(damped: bool) -> GeneralizedParams {
    let mut p = rich_params(damped);
    p.bend.negative = p.bend.positive;
    p.twist.negative = p.twist.positive;
    p
}

/// A law with every feature: one-sided bend with a cubic part, one-sided twist.
fn rich_params(damped: bool) -> GeneralizedParams {
    let mut p = GeneralizedParams::new(80.0, 0.0, 0.0, 0.0);
    p.bend = AngularLaw { positive: 2.0, negative: 5.0, cubic: 0.7 };
    p.twist = AngularLaw { positive: 1.5, negative: 0.9, cubic: 0.3 };
    if damped {
        p.damping = 0.8;
        p.bend_damping = 0.05;
        p.twist_damping = 0.03;
    }
    p
}

/// Five oriented particles at random places and orientations joined by six
/// generalized springs at rest, then perturbed: positions by `dx`, orientations by
/// random rotations of up to `dphi` rad, random velocities and spins.
fn cluster(
    seed: u64,
    params: GeneralizedParams,
    dx: f64,
    dphi: f64,
    speed: f64,
) -> (Particles, State, GeneralizedSprings) {
    let mut rng = Rng::new(seed);
    let mut b = WorldBuilder::new();
    for _ in 0..5 {
        let i = b.add_particle(rng.vec3(0.5), DVec3::ZERO, rng.range(0.5, 2.0), rng.range(0.05, 0.15));
        let axis = rng.vec3(1.0).normalize();
        b.state.q[i] = DQuat::from_axis_angle(axis, rng.range(-3.0, 3.0));
    }
    b.make_oriented("cluster", 0..5, None).unwrap();
    let mut term = GeneralizedSprings::new("cluster");
    let g = term.group("cluster", params).unwrap();
    for (a, c) in [(0, 1), (1, 2), (2, 3), (3, 4), (0, 2), (4, 1)] {
        let hint = rng.vec3(1.0);
        term.push_at_rest(&b.particles, &b.state, a, c, g, hint, rng.vec3(1.0)).unwrap();
    }
    let mut state = b.state.clone();
    for i in 0..5 {
        state.x.set(i, state.x.get(i) + rng.vec3(dx));
        let axis = rng.vec3(1.0).normalize();
        state.q[i] = DQuat::from_axis_angle(axis, rng.range(-dphi, dphi)) * state.q[i];
        state.v.set(i, rng.vec3(speed));
        state.w.set(i, rng.vec3(3.0 * speed));
    }
    (b.particles, state, term)
}

fn loads_of(term: &mut GeneralizedSprings, particles: &Particles, state: &State) -> Loads {
    let mut out = Loads::zeros(state.len());
    term.add_forces(&ForceContext { particles, state, t: 0.0 }, &mut out);
    out
}

#[test]
fn forces_sum_to_zero_and_moments_cancel_torques() {
    for seed in 1..=20 {
        let (particles, state, mut term) = cluster(seed, rich_params(true), 0.1, 0.8, 1.0);
        let l = loads_of(&mut term, &particles, &state);
        let (mut f, mut m, mut scale) = (DVec3::ZERO, DVec3::ZERO, 0.0f64);
        for i in 0..state.len() {
            f += l.f.get(i);
            m += state.x.get(i).cross(l.f.get(i)) + l.tau.get(i);
            scale = scale.max(l.f.get(i).length()).max(l.tau.get(i).length());
        }
        assert!(scale > 1e-3, "seed {seed}: the perturbation must load the springs");
        // Sums of O(10) terms of size `scale`: round-off ~ 10 ε scale.
        assert!(f.length() <= 1e-13 * scale, "seed {seed}: Σf = {f:?} (scale {scale})");
        assert!(m.length() <= 1e-13 * scale, "seed {seed}: Σ(x × f + τ) = {m:?} (scale {scale})");
    }
}

/// Rotates every orientation of particle `i` by the world rotation vector `phi`.
fn rotate(state: &mut State, i: usize, phi: DVec3) {
    state.q[i] = (DQuat::from_scaled_axis(phi) * state.q[i]).normalize();
}

#[test]
fn forces_and_torques_are_minus_the_energy_gradient() {
    // Stretch and a symmetric bend law (with its cubic part): the energy is exact
    // everywhere (module docs). The twist, a pure couple about the spring, is checked
    // on its own below; a one-sided bend in a planar bend in the next test.
    let mut p = smooth_params(false);
    p.twist = AngularLaw::NONE;
    for seed in 1..=10 {
        let (particles, state, mut term) = cluster(seed, p, 0.1, 0.6, 0.0);
        let l = loads_of(&mut term, &particles, &state);
        let energy = |s: &State| term.potential_energy(&ForceContext { particles: &particles, state: s, t: 0.0 });
        let h = 1e-6;
        for i in 0..state.len() {
            for c in 0..3 {
                let e = DVec3::AXES[c];
                let (mut sp, mut sm) = (state.clone(), state.clone());
                sp.x.set(i, sp.x.get(i) + e * h);
                sm.x.set(i, sm.x.get(i) - e * h);
                let fd = -(energy(&sp) - energy(&sm)) / (2.0 * h);
                assert_close!(l.f.get(i)[c], fd, 1e-6 * (1.0 + fd.abs()), "seed {seed}: force {i}.{c}");
                let (mut rp, mut rm) = (state.clone(), state.clone());
                rotate(&mut rp, i, e * h);
                rotate(&mut rm, i, -e * h);
                let fd = -(energy(&rp) - energy(&rm)) / (2.0 * h);
                assert_close!(l.tau.get(i)[c], fd, 1e-6 * (1.0 + fd.abs()), "seed {seed}: torque {i}.{c}");
            }
        }
    }
}

/// Two oriented particles: A at the origin, B at (1, 0, 0), references at rest
/// along the x axis; twist reference +y, bend axis +z.
fn pair(params: GeneralizedParams) -> (Particles, State, GeneralizedSprings) {
    let mut b = WorldBuilder::new();
    b.add_particle(DVec3::ZERO, DVec3::ZERO, 1.0, 0.1);
    b.add_particle(DVec3::X, DVec3::ZERO, 1.0, 0.1);
    b.make_oriented("pair", 0..2, None).unwrap();
    let mut term = GeneralizedSprings::new("pair");
    let g = term.group("pair", params).unwrap();
    term.push_at_rest(&b.particles, &b.state, 0, 1, g, DVec3::Y, DVec3::Z).unwrap();
    (b.particles, b.state, term)
}

#[test]
fn bend_torque_turns_the_reference_back_and_pushes_the_far_end() {
    let (j, alpha) = (2.0, 0.3);
    let (particles, mut state, mut term) = pair(GeneralizedParams::spring_3d(0.0, 0.0, j));
    // A turned by +α about z: its reference points up-right; the torque turns it back
    // (−z) with magnitude J α; the couple pushes B up (+y) by J α / d.
    state.q[0] = DQuat::from_rotation_z(alpha);
    let l = loads_of(&mut term, &particles, &state);
    assert_vec_close!(l.tau.get(0), DVec3::new(0.0, 0.0, -j * alpha), 1e-14, "torque on A");
    assert_vec_close!(l.tau.get(1), DVec3::ZERO, 1e-14, "torque on B");
    assert_vec_close!(l.f.get(1), DVec3::new(0.0, j * alpha, 0.0), 1e-14, "couple force on B");
    assert_vec_close!(l.f.get(0), DVec3::new(0.0, -j * alpha, 0.0), 1e-14, "couple force on A");
}

#[test]
fn twist_torque_is_a_couple_about_the_spring() {
    let (j, beta) = (1.5, 0.4);
    let (particles, mut state, mut term) = pair(GeneralizedParams::new(0.0, 0.0, 0.0, j));
    // B turned by +β about the spring: A is twisted along (+x), B back (−x); no force.
    state.q[1] = DQuat::from_rotation_x(beta);
    let l = loads_of(&mut term, &particles, &state);
    assert_vec_close!(l.tau.get(0), DVec3::new(j * beta, 0.0, 0.0), 1e-14, "torque on A");
    assert_vec_close!(l.tau.get(1), DVec3::new(-j * beta, 0.0, 0.0), 1e-14, "torque on B");
    assert_vec_close!(l.f.get(0), DVec3::ZERO, 0.0, "no force on A");
    assert_vec_close!(l.f.get(1), DVec3::ZERO, 0.0, "no force on B");
}

#[test]
fn one_sided_bend_uses_the_constant_of_the_bend_sign() {
    // Bend axis +z. A smile (both ends turned so the tangent turns counter-clockwise
    // from A to B) is positive; an arch negative.
    let (jp, jn, alpha) = (1.0, 4.0, 0.2);
    let mut p = GeneralizedParams::plain(0.0, 0.0);
    p.bend = AngularLaw::one_sided(jp, jn);
    let (particles, rest, mut term) = pair(p);
    for (sign, j) in [(1.0, jp), (-1.0, jn)] {
        let mut state = rest.clone();
        // Smile: A's tangent points down-right (turned −α), B's up-right (turned +α).
        state.q[0] = DQuat::from_rotation_z(-sign * alpha);
        state.q[1] = DQuat::from_rotation_z(sign * alpha);
        let [ta, tb, _] = term.angles(0, &state);
        assert_close!(ta, sign * alpha, 1e-14, "signed bend at A");
        assert_close!(tb, sign * alpha, 1e-14, "signed bend at B");
        let l = loads_of(&mut term, &particles, &state);
        assert_close!(l.tau.get(0).length(), j * alpha, 1e-14, "torque at A uses J for sign {sign}");
        assert_close!(l.tau.get(1).length(), j * alpha, 1e-14, "torque at B uses J for sign {sign}");
        // The torques turn each end back: A by +sign about z.
        assert_close!(l.tau.get(0).z, sign * j * alpha, 1e-14, "direction at A");
        assert_close!(l.tau.get(1).z, -sign * j * alpha, 1e-14, "direction at B");
    }
    // In this planar bend the one-sided energy is exact: check the gradient.
    let mut state = rest.clone();
    state.q[0] = DQuat::from_rotation_z(-alpha);
    let l = loads_of(&mut term, &particles, &state);
    let energy = |s: &State| term.potential_energy(&ForceContext { particles: &particles, state: s, t: 0.0 });
    let h = 1e-6;
    let (mut sp, mut sm) = (state.clone(), state.clone());
    rotate(&mut sp, 0, DVec3::Z * h);
    rotate(&mut sm, 0, -DVec3::Z * h);
    assert_close!(l.tau.get(0).z, -(energy(&sp) - energy(&sm)) / (2.0 * h), 1e-8, "τ_z = −∂E/∂φ_z");
}

#[test]
fn twist_torque_is_minus_the_energy_gradient_about_the_spring() {
    // The twist loads are a pure couple about u (001; notes §6). They match the
    // energy's gradient for rotations of either end about the spring; the change of
    // the projected references when an end tilts across the spring is not part of
    // the model (module docs), so only that component is checked.
    let law = AngularLaw { positive: 1.5, negative: 0.9, cubic: 0.3 };
    let mut p = GeneralizedParams::plain(0.0, 0.0);
    p.twist = law;
    let mut rng = Rng::new(17);
    for case in 0..10 {
        let (particles, mut state, mut term) = pair(p);
        state.x.set(1, state.x.get(1) + rng.vec3(0.3));
        for i in 0..2 {
            state.q[i] = DQuat::from_axis_angle(rng.vec3(1.0).normalize(), rng.range(-1.0, 1.0));
        }
        let l = loads_of(&mut term, &particles, &state);
        let u = (state.x.get(1) - state.x.get(0)).normalize();
        let energy = |s: &State| term.potential_energy(&ForceContext { particles: &particles, state: s, t: 0.0 });
        let h = 1e-6;
        for i in 0..2 {
            let (mut sp, mut sm) = (state.clone(), state.clone());
            rotate(&mut sp, i, u * h);
            rotate(&mut sm, i, -u * h);
            let fd = -(energy(&sp) - energy(&sm)) / (2.0 * h);
            assert_close!(l.tau.get(i).dot(u), fd, 1e-6 * (1.0 + fd.abs()), "case {case}: twist torque on {i} about u");
            assert!(l.f.get(i) == DVec3::ZERO, "case {case}: the twist adds no force");
        }
    }
}

#[test]
fn rigid_motion_produces_no_load() {
    let mut rng = Rng::new(7);
    for seed in 1..=10 {
        // At rest (no perturbation), then moved, turned and set moving rigidly.
        let (particles, mut state, mut term) = cluster(seed, rich_params(true), 0.0, 0.0, 0.0);
        let r = DQuat::from_axis_angle(rng.vec3(1.0).normalize(), rng.range(-3.0, 3.0));
        let (shift, vel, spin) = (rng.vec3(2.0), rng.vec3(1.0), rng.vec3(2.0));
        for i in 0..state.len() {
            let x = r * state.x.get(i) + shift;
            state.x.set(i, x);
            state.q[i] = r * state.q[i];
            state.v.set(i, vel + spin.cross(x));
            state.w.set(i, spin);
        }
        let l = loads_of(&mut term, &particles, &state);
        for i in 0..state.len() {
            // Rest angles are recomputed after a rotation of O(1): round-off ~1e-15,
            // times stiffness ~100 and the damping of the rigid velocities.
            assert!(l.f.get(i).length() < 1e-11, "seed {seed}: force {i} = {:?}", l.f.get(i));
            assert!(l.tau.get(i).length() < 1e-11, "seed {seed}: torque {i} = {:?}", l.tau.get(i));
        }
    }
}

#[test]
fn damping_only_removes_energy() {
    // The damping loads' power Σ f·v + τ·ω is never positive: loads with damping
    // minus loads without, at random states.
    for seed in 1..=30 {
        let (particles, state, mut damped) = cluster(seed, rich_params(true), 0.1, 0.8, 1.0);
        let (_, _, mut undamped) = cluster(seed, rich_params(false), 0.1, 0.8, 1.0);
        let (ld, lu) = (loads_of(&mut damped, &particles, &state), loads_of(&mut undamped, &particles, &state));
        let power: f64 = (0..state.len())
            .map(|i| {
                (ld.f.get(i) - lu.f.get(i)).dot(state.v.get(i)) + (ld.tau.get(i) - lu.tau.get(i)).dot(state.w.get(i))
            })
            .sum();
        assert!(power < 0.0, "seed {seed}: damping power = {power} W must be negative");
    }
}

fn world_from(particles: Particles, state: State, term: GeneralizedSprings, kind: IntegratorKind, dt: f64) -> World {
    let mut b = WorldBuilder::new();
    b.particles = particles;
    b.state = state;
    b.add_force(term);
    b.build(SimParams { dt, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 }).unwrap()
}

fn total_energy(world: &World) -> f64 {
    let (p, s) = (&world.particles, &world.state);
    let kinetic: f64 = (0..s.len())
        .map(|i| {
            0.5 * p.mass[i] * s.v.get(i).length_squared()
                + 0.5 * s.w.get(i).dot(p.world_inertia(i, s.q[i]) * s.w.get(i))
        })
        .sum();
    let ctx = ForceContext { particles: p, state: s, t: 0.0 };
    kinetic + world.forces.iter().map(|f| f.potential_energy(&ctx)).sum::<f64>()
}

#[test]
fn free_body_conserves_momentum_symplectic_euler_to_round_off() {
    // Symplectic Euler: L_{n+1} − L_n = h Σ (x_n × f_n + τ_n) exactly (isotropic
    // inertia), which is zero up to round-off; P likewise.
    let (particles, state, term) = cluster(3, rich_params(true), 0.1, 0.8, 1.0);
    let mut world = world_from(particles, state, term, IntegratorKind::SymplecticEuler, 1e-4);
    let (p0, l0) = (linear_momentum(&world.particles, &world.state), angular_momentum(&world.particles, &world.state));
    world.run(5000).unwrap();
    let (p1, l1) = (linear_momentum(&world.particles, &world.state), angular_momentum(&world.particles, &world.state));
    let scale = p0.length().max(l0.length()).max(1.0);
    // 5000 steps, each adding round-off ~1e-16 of the momentum scale.
    assert!((p1 - p0).length() < 1e-11 * scale, "ΔP = {:?}", p1 - p0);
    assert!((l1 - l0).length() < 1e-11 * scale, "ΔL = {:?}", l1 - l0);
    assert!(quat_norm_error(&world.state.q) < 1e-14, "|q| − 1 = {}", quat_norm_error(&world.state.q));
}

#[test]
fn free_body_conserves_momentum_rk4() {
    // RK4 keeps every linear invariant (P) exactly; angular momentum is quadratic in
    // the state, so it drifts by the method's truncation error O(h⁴), not round-off:
    // checked to be tiny and to shrink ~16× when h halves.
    let drift = |dt: f64, steps: u64| {
        let (particles, state, term) = cluster(3, smooth_params(true), 0.1, 0.8, 1.0);
        let mut world = world_from(particles, state, term, IntegratorKind::Rk4, dt);
        let (p0, l0) =
            (linear_momentum(&world.particles, &world.state), angular_momentum(&world.particles, &world.state));
        world.run(steps).unwrap();
        let (p1, l1) =
            (linear_momentum(&world.particles, &world.state), angular_momentum(&world.particles, &world.state));
        assert!(quat_norm_error(&world.state.q) < 1e-14);
        ((p1 - p0).length(), (l1 - l0).length(), l0.length())
    };
    let (dp, dl1, l0) = drift(2e-3, 2000);
    assert!(dp < 1e-12, "RK4 ΔP = {dp}");
    assert!(dl1 < 1e-6 * l0.max(1.0), "RK4 ΔL = {dl1} for |L| = {l0}");
    let (_, dl2, _) = drift(1e-3, 4000);
    eprintln!("RK4 angular momentum drift: {dl1:.3e} at h, {dl2:.3e} at h/2");
    assert!(dl2 < dl1 / 8.0 || dl1 < 1e-13, "ΔL at h/2 = {dl2} should be ≪ {dl1} (fourth order)");
}

/// A free oriented particle (1 kg, radius 0.1 m) spinning at `omega`, stepped
/// by `kind` at `dt`.
fn spinner(kind: IntegratorKind, dt: f64, omega: DVec3) -> World {
    let mut b = WorldBuilder::new();
    let i = b.add_particle(DVec3::ZERO, DVec3::ZERO, 1.0, 0.1);
    b.make_oriented("spinner", 0..1, None).unwrap();
    b.set_orientation(i, DQuat::IDENTITY, omega);
    b.build(SimParams { dt, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 }).unwrap()
}

#[test]
fn every_integrator_advances_rotation_and_keeps_q_unit() {
    // A free oriented particle with a constant spin ω turns by |ω| t about ω.
    let omega = DVec3::new(0.3, -1.2, 0.7);
    let (dt, steps) = (1e-3, 2000u64);
    let t = dt * steps as f64;
    for kind in IntegratorKind::ALL {
        let mut world = spinner(kind, dt, omega);
        world.run(steps).unwrap();
        let q = world.state.q[0];
        let expected = DQuat::from_scaled_axis(omega * t);
        // Each step q ← normalize(q + h/2 ω q) turns by 2 atan(h|ω|/2) instead of h|ω|
        // (a first-order method for q): an error of (h|ω|)³/12 per step, far below 1e-6.
        let err = (q.inverse() * expected).to_scaled_axis().length();
        assert!(err < 1e-6, "{kind}: orientation error {err} rad");
        assert!((q.length() - 1.0).abs() < 1e-14, "{kind}: |q| = {}", q.length());
        assert_vec_close!(world.state.w.get(0), omega, 1e-14, "{kind}: ω is constant");
    }
}

#[test]
fn orientation_converges_at_each_methods_order() {
    // A free oriented particle spinning at a constant |ω| = 6 rad/s for 1 s, at
    // h = 1/20 … 1/160 s: the orientation's global error falls as h^p with p the
    // method's order, 2 for Heun and midpoint and 4 for RK4 — q̇ = ½ [ω, 0] q is
    // integrated as the method integrates any state, the stages' quaternions
    // normalised (measured: slopes 2.00, 1.99 and 4.00; the normalisation of the
    // stages does not cost RK4 its order here). Slopes within 0.3 of p; the
    // errors stay far above rounding (the smallest is 2.5e-9 rad, RK4 at 1/160).
    let omega = DVec3::new(2.0, -5.0, 2.8);
    let error = |kind: IntegratorKind, dt: f64| {
        let mut world = spinner(kind, dt, omega);
        world.run((1.0 / dt).round() as u64).unwrap();
        let expected = DQuat::from_scaled_axis(omega * world.time());
        // The angle between them, 2 |vector part| of q⁻¹ q_exact (to first order;
        // an acos of the scalar part could not resolve the smallest errors).
        2.0 * (world.state.q[0].inverse() * expected).xyz().length()
    };
    let hs = [1.0 / 20.0, 1.0 / 40.0, 1.0 / 80.0, 1.0 / 160.0];
    for (kind, order) in [(IntegratorKind::Heun, 2.0), (IntegratorKind::Midpoint, 2.0), (IntegratorKind::Rk4, 4.0)] {
        let errs: Vec<f64> = hs.iter().map(|&h| error(kind, h)).collect();
        let slope = support::loglog_slope(&hs, &errs);
        assert!(
            (slope - order).abs() < 0.3,
            "{kind}: orientation error slope {slope:.2} (errors {errs:.2?}), expected {order}"
        );
    }
}

#[test]
fn a_rotational_runaway_or_a_broken_orientation_stops_the_world_naming_the_particle() {
    // The health check looks at the rotation too: a particle spun up to 1e8 rad/s
    // (rotational energy far beyond 1e4 times the world's energy scale) or given a
    // NaN orientation stops the world at that step with a message naming it,
    // although its position and velocity stay finite and slow.
    for (label, spoil, reason) in [
        ("spin", (|w: &mut World| w.state.w.set(1, DVec3::new(0.0, 1e8, 0.0))) as fn(&mut World), "spins at"),
        (
            "orientation",
            |w: &mut World| w.state.q[1] = DQuat::from_xyzw(f64::NAN, 0.0, 0.0, 1.0),
            "non-finite orientation",
        ),
    ] {
        let mut b = WorldBuilder::new();
        for k in 0..3 {
            b.add_particle(DVec3::new(0.1 * k as f64, 0.0, 0.0), DVec3::ZERO, 1.0, 0.05);
        }
        b.make_oriented("spinners", 0..3, None).unwrap();
        b.set_orientation(1, DQuat::IDENTITY, DVec3::new(0.0, 2.0, 0.0));
        let mut world =
            b.build(SimParams { dt: 1e-3, integrator: IntegratorKind::Rk4, ..SimParams::default() }).unwrap();
        world.run(5).expect("a gentle spin is healthy");
        spoil(&mut world);
        match world.step() {
            Err(wobble::world::StepError::BlowUp(b)) => {
                assert_eq!((b.step, b.particle), (6, 1), "{label}: {b:?}");
                assert!(b.reason.contains(reason), "{label}: {}", b.reason);
            }
            other => panic!("{label}: the world went on: {other:?}"),
        }
    }
}

#[test]
fn every_integrator_turns_torque_into_angular_acceleration() {
    // A bent pair with A pinned: B's angular acceleration at the first step is τ/I.
    for kind in IntegratorKind::ALL {
        let (particles, mut state, term) = pair(GeneralizedParams::spring_3d(0.0, 0.0, 2.0));
        state.q[1] = DQuat::from_rotation_z(0.1);
        let inertia = particles.inertia[1].x;
        let mut world = world_from(particles, state, term, kind, 1e-4);
        world.set_pinned(0, true);
        let w0 = world.state.w.get(1);
        world.step().unwrap();
        let alpha = (world.state.w.get(1) - w0) / 1e-4;
        // τ on B = −J θ about z (turns it back): α = −0.2 / I, to O(h).
        assert_close!(alpha.z, -0.2 / inertia, 1e-2 * 0.2 / inertia, "{kind}: angular acceleration");
    }
}

#[test]
fn bent_spring_returns_to_straight() {
    let mut p = GeneralizedParams::new(500.0, 1.0, 1.0, 0.5).with_angular_damping(0.02, 0.02);
    p.bend = AngularLaw::symmetric(1.0);
    let (particles, mut state, term) = pair(p);
    state.q[0] = DQuat::from_rotation_z(0.5);
    state.q[1] = DQuat::from_rotation_y(0.4) * DQuat::from_rotation_x(0.6);
    let mut world = world_from(particles, state, term, IntegratorKind::Rk4, 2e-4);
    let start = world.force_of::<GeneralizedSprings>().unwrap().angles(0, &world.state);
    let e0 = total_energy(&world);
    world.run(20_000).unwrap();
    let end = world.force_of::<GeneralizedSprings>().unwrap().angles(0, &world.state);
    for k in 0..3 {
        assert!(end[k].abs() < 1e-3 * start[k].abs().max(0.1), "angle {k}: {} → {}", start[k], end[k]);
    }
    assert!(total_energy(&world) < 1e-3 * e0, "energy {e0} → {}", total_energy(&world));
}

#[test]
fn damped_run_never_gains_energy() {
    // A damped 3D spring network (stretch and a smooth bend: conservative elastic
    // loads, see the energy-gradient test) loses energy every step.
    let mut p = smooth_params(true);
    p.twist = AngularLaw::NONE;
    let (particles, state, term) = cluster(11, p, 0.1, 0.8, 1.0);
    let mut world = world_from(particles, state, term, IntegratorKind::Rk4, 5e-4);
    let mut e = total_energy(&world);
    for step in 0..4000 {
        world.step().unwrap();
        let e1 = total_energy(&world);
        // RK4's per-step energy error at this h is far below the damping loss; allow
        // round-off of the energy sum only.
        assert!(e1 <= e + 1e-12 * e.abs().max(1.0), "step {step}: energy rose {e} → {e1}");
        e = e1;
    }
}

/// A chain of 6 particles (5 springs, fewer than a vectorised run of 8, so the
/// network sums them in index order) with random initial velocities.
fn chain_pair(kind: IntegratorKind) -> (World, World) {
    let (k, c) = (300.0, 0.7);
    let chain = Chain {
        count: 6,
        start: DVec3::new(0.1, 0.2, -0.3),
        end: DVec3::new(1.3, -0.4, 0.5),
        mass: 0.6,
        structural: SpringParams::linear(k, c),
        bend: None,
        radius: 0.0,
    };
    let params = SimParams { dt: 1e-3, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 };
    let mut rng = Rng::new(99);
    let v: Vec<DVec3> = (0..6).map(|_| rng.vec3(1.0)).collect();
    let mut a = WorldBuilder::new();
    chain.build(&mut a, "chain").unwrap();
    let mut b = WorldBuilder::new();
    b.state = a.state.clone();
    b.particles = a.particles.clone();
    let mut term = GeneralizedSprings::new("g");
    let g = term.group("g", GeneralizedParams::plain(k, c)).unwrap();
    for s in 0..5 {
        term.push_at_rest(&b.particles, &b.state, s, s + 1, g, DVec3::Z, DVec3::Z).unwrap();
    }
    b.add_force(term);
    for (i, v) in v.iter().enumerate() {
        a.state.v.set(i, *v);
        b.state.v.set(i, *v);
    }
    (a.build(params).unwrap(), b.build(params).unwrap())
}

#[test]
fn plain_generalized_spring_equals_linear_spring_bit_for_bit() {
    for kind in [IntegratorKind::SymplecticEuler, IntegratorKind::Rk4, IntegratorKind::Verlet] {
        let (mut plain, mut general) = chain_pair(kind);
        plain.run(2000).unwrap();
        general.run(2000).unwrap();
        for i in 0..6 {
            for (p, g, what) in [
                (plain.state.x.get(i), general.state.x.get(i), "x"),
                (plain.state.v.get(i), general.state.v.get(i), "v"),
            ] {
                assert!(
                    p.to_array().map(f64::to_bits) == g.to_array().map(f64::to_bits),
                    "{kind}: {what}[{i}] differs: {p:?} vs {g:?}"
                );
            }
        }
    }
}

#[test]
fn plain_generalized_lattice_matches_spring_network_to_1e12() {
    // A larger body: the network sums its springs in vectorised runs, the
    // generalized term in index order, so the bits differ by summation order only.
    use wobble::build::lattice::Lattice;
    let (k, c) = (500.0, 0.5);
    let lattice = Lattice {
        n: [4, 4, 4],
        spacing: 0.1,
        structural: SpringParams::linear(k, c),
        shear: None,
        ..Lattice::default()
    };
    let params = SimParams { dt: 5e-4, integrator: IntegratorKind::Rk4, verlet_drag: 0.0, constraint_iterations: 1 };
    let mut a = WorldBuilder::new();
    lattice.build(&mut a, "l").unwrap();
    let pairs = a.springs.pairs();
    let mut rng = Rng::new(5);
    for i in 0..a.particle_count() {
        a.state.v.set(i, rng.vec3(0.5));
    }
    let mut b = WorldBuilder::new();
    b.state = a.state.clone();
    b.particles = a.particles.clone();
    let rest = {
        let mut r = a.state.clone();
        r.v = wobble::model::Vec3s::zeros(r.len());
        r
    };
    let mut term = GeneralizedSprings::new("g");
    let g = term.group("g", GeneralizedParams::plain(k, c)).unwrap();
    for [p, q] in &pairs {
        term.push_at_rest(&b.particles, &rest, *p as usize, *q as usize, g, DVec3::Z, DVec3::Z).unwrap();
    }
    b.add_force(term);
    let (mut wa, mut wb) = (a.build(params).unwrap(), b.build(params).unwrap());
    wa.run(400).unwrap();
    wb.run(400).unwrap();
    let scale = (0..wa.state.len()).map(|i| wa.state.x.get(i).length()).fold(0.0, f64::max);
    for i in 0..wa.state.len() {
        let d = (wa.state.x.get(i) - wb.state.x.get(i)).length();
        assert!(d <= 1e-12 * scale, "particle {i}: |Δx| = {d:.3e} (scale {scale})");
    }
}

#[test]
fn rod_builder_makes_oriented_particles_and_the_stable_dt_is_finite() {
    let rod = Rod { count: 8, ..Rod::default() };
    let mut b = WorldBuilder::new();
    rod.build(&mut b, "rod").unwrap();
    for i in 0..8 {
        let m = b.particles.mass[i];
        assert_close!(b.particles.inertia[i].x, 0.4 * m * rod.radius * rod.radius, 1e-18, "sphere inertia");
    }
    let world = b.build(SimParams::default()).unwrap();
    assert!(world.rotational());
    let dt = world.stability().dt_for(IntegratorKind::SymplecticEuler).unwrap();
    assert!(dt.is_finite() && dt > 0.0, "stable dt {dt}");
}

#[test]
fn rod_runs_stably_just_below_the_stable_dt_estimate() {
    // The bound includes the bend and twist modes: a bent, twisted rod stepped at
    // 0.9 × the estimate stays bounded; at 3× it blows up (the estimate is not
    // absurdly conservative in the other direction).
    let run = |factor: f64| {
        let rod = Rod { count: 6, springs: GeneralizedParams::new(1e3, 0.0, 0.5, 0.5), ..Rod::default() };
        let mut b = WorldBuilder::new();
        rod.build(&mut b, "rod").unwrap();
        b.state.q[2] = DQuat::from_rotation_y(0.3) * DQuat::from_rotation_x(0.5);
        let world = b.build(SimParams { integrator: IntegratorKind::SymplecticEuler, ..SimParams::default() }).unwrap();
        let dt = world.stability().dt_for(IntegratorKind::SymplecticEuler).unwrap();
        let mut world = world;
        world.set_dt(dt * factor).unwrap();
        world.run(20_000).is_ok() && world.state.first_non_finite().is_none()
    };
    assert!(run(0.9), "stable at 0.9 × the estimate");
    assert!(!run(3.0), "unstable at 3 × the estimate");
}

#[test]
fn mobile_hangs_level_at_its_balance_points() {
    // Each bar hangs from the centre of mass of everything below it, so with gravity
    // the mobile settles with its bars level: after 2 s the largest bar tilt is below
    // the sag the bars' own bending allows (0.02 rad here).
    use wobble::build::mobile::Mobile;
    use wobble::force::Gravity;
    let mut b = WorldBuilder::new();
    let h = Mobile::default().build(&mut b, "mobile").unwrap();
    b.add_force(Gravity::default());
    let mut world = b.build(SimParams { integrator: IntegratorKind::SymplecticEuler, ..SimParams::default() }).unwrap();
    let dt = 0.5 * world.stability().dt_for(IntegratorKind::SymplecticEuler).unwrap();
    world.set_dt(dt).unwrap();
    world.run((2.0 / dt) as u64).unwrap();
    for bar in &h.bars {
        let (a, c) = (world.state.x.get(bar[0]), world.state.x.get(*bar.last().unwrap()));
        let d = c - a;
        let tilt = (d.y / d.length()).asin().abs();
        assert!(tilt < 0.02, "bar tilt {tilt} rad");
    }
    assert!(quat_norm_error(&world.state.q) < 1e-12);
}

#[test]
fn creased_sheet_started_flat_folds_to_its_crease() {
    // The rest shape is folded 90° along the crease; started flat the sheet folds:
    // after 1.6 s (no gravity) the angle between its two halves' edges is within 5° of
    // the crease.
    use wobble::build::sheet::Sheet;
    let sheet = Sheet::default();
    let mut b = WorldBuilder::new();
    let h = sheet.build(&mut b, "sheet").unwrap();
    let mut world = b.build(SimParams { dt: 5e-5, integrator: IntegratorKind::Rk4, ..SimParams::default() }).unwrap();
    world.run(32_000).unwrap();
    let x = |i: usize| world.state.x.get(h.particle(i, 0));
    let left = x(sheet.crease) - x(0);
    let right = x(sheet.nx - 1) - x(sheet.crease);
    let angle = left.angle_between(right);
    assert_close!(angle, sheet.crease_angle, 5f64.to_radians(), "fold angle");
}

/// A 4 × 4 × 4 jelly cube on a floor under gravity, particles displaced by up to
/// 1 mm (seeded) to break the symmetry; returns the world and its height after `t` s
/// over its initial height.
fn standing_jelly(springs: GeneralizedParams, t: f64) -> (World, f64) {
    use wobble::constraint::{Collider, Shape, Surface};
    use wobble::force::Gravity;
    let jelly = JellyCube { origin: DVec3::new(-0.15, 0.02, -0.15), springs, ..JellyCube::default() };
    let mut b = WorldBuilder::new();
    jelly.build(&mut b, "jelly").unwrap();
    let mut rng = Rng::new(21);
    for i in 0..b.particle_count() {
        b.state.x.set(i, b.state.x.get(i) + rng.vec3(1e-3));
    }
    b.add_force(Gravity::default());
    b.add_constraint(Collider::new(
        "floor",
        Shape::Plane { point: DVec3::ZERO, normal: DVec3::Y },
        Surface { restitution: 0.2, friction: 0.5 },
    ));
    let height = |w: &World| {
        let ys: Vec<f64> = (0..w.state.len()).map(|i| w.state.x.get(i).y).collect();
        ys.iter().copied().fold(f64::NEG_INFINITY, f64::max) - ys.iter().copied().fold(f64::INFINITY, f64::min)
    };
    let mut world = b.build(SimParams { dt: 5e-5, ..SimParams::default() }).unwrap();
    let h0 = height(&world);
    world.run((t / 5e-5) as u64).unwrap();
    let h = height(&world) / h0;
    (world, h)
}

#[test]
fn jelly_cube_without_diagonals_stands_with_generalized_springs_and_collapses_with_plain_ones() {
    // 001 §3, Fig. 2: edge springs alone give a lattice no shear resistance; the bend
    // and twist of generalized springs supply it.
    let general = JellyCube::default().springs;
    let (_, h_general) = standing_jelly(general, 1.5);
    let (_, h_plain) = standing_jelly(GeneralizedParams::plain(general.stretch, general.damping), 1.5);
    assert!(h_general > 0.95, "generalized jelly sagged to {h_general} of its height");
    assert!(h_plain < 0.5, "plain jelly kept {h_plain} of its height");
}

#[test]
fn oriented_world_is_bit_identical_for_any_thread_count() {
    let run =
        |threads: usize| support::pool(threads).install(|| standing_jelly(JellyCube::default().springs, 0.2).0.state);
    use wobble::build::jelly::JellyCube;
    let (one, two, three) = (run(1), run(2), run(3));
    for s in [&two, &three] {
        assert!(s.x.x.iter().zip(&one.x.x).all(|(a, b)| a.to_bits() == b.to_bits()), "positions differ");
        assert!(
            s.q.iter().zip(&one.q).all(|(a, b)| a.to_array().map(f64::to_bits) == b.to_array().map(f64::to_bits)),
            "orientations differ"
        );
    }
}

#[test]
fn rod_initial_twist_is_the_sum_of_its_springs_twist_angles() {
    let rod = Rod { count: 7, initial_twist: 2.5, ..Rod::default() };
    let mut b = WorldBuilder::new();
    rod.build(&mut b, "rod").unwrap();
    let world = b.build(SimParams::default()).unwrap();
    let term = world.force_of::<GeneralizedSprings>().unwrap();
    let total: f64 = (0..term.len()).map(|s| term.angles(s, &world.state)[2]).sum();
    // Each spring's second end is turned 2.5/6 rad further about u than its first,
    // so its twist angle (from X to Y about u) is +2.5/6; they sum to 2.5.
    assert_close!(total, 2.5, 1e-12, "total twist");
    for s in 0..term.len() {
        let [ta, tb, _] = term.angles(s, &world.state);
        assert!(ta.abs() < 1e-12 && tb.abs() < 1e-12, "a twist about the rod does not bend it");
    }
}

#[test]
fn offset_octahedra_of_the_mobile_weights_are_wound_outward() {
    // Every offset triangle of a weight's octahedron has its normal pointing away
    // from the weight (counter-clockwise seen from outside, like the body surfaces).
    use wobble::build::mobile::Mobile;
    let mut b = WorldBuilder::new();
    let h = Mobile::default().build(&mut b, "mobile").unwrap();
    let mut checked = 0;
    for s in &b.topology.offsets {
        let x = s.positions(&b.state);
        for t in &s.triangles {
            let p = s.particle[t[0] as usize] as usize;
            if !h.weights.contains(&p) {
                continue;
            }
            let [a, c, d] = t.map(|i| x[i as usize]);
            let n = (c - a).cross(d - a);
            assert!(n.dot((a + c + d) / 3.0 - b.state.x.get(p)) > 0.0, "inward face {t:?}");
            checked += 1;
        }
    }
    assert_eq!(checked, 8 * h.weights.len());
}

#[test]
fn rod_tube_is_wound_outward() {
    let rod = Rod { count: 5, tube_radius: 0.03, ..Rod::default() };
    let mut b = WorldBuilder::new();
    rod.build(&mut b, "rod").unwrap();
    let s = &b.topology.offsets[0];
    let x = s.positions(&b.state);
    for t in &s.triangles {
        let [a, c, d] = t.map(|i| x[i as usize]);
        let centre = (a + c + d) / 3.0;
        // Away from the rod's axis (the x axis from start to end).
        let radial = DVec3::new(0.0, centre.y, centre.z);
        assert!((c - a).cross(d - a).dot(radial) > 0.0, "inward face {t:?}");
    }
    assert_eq!(s.triangles.len(), 2 * 4 * wobble::build::rod::TUBE_SIDES);
}

#[test]
fn jacobian_blocks_of_a_plain_generalized_spring_match_finite_differences() {
    // Without bend and twist laws the blocks are the whole Jacobian: ∂f/∂x by central
    // differences (h = 1e-6, relative 1e-6) at rest — the damping's dependence on
    // position is left out, as for plain springs (Baraff–Witkin) — and ∂f/∂v
    // (f is linear in v) at the moving state.
    let p = GeneralizedParams::plain(80.0, 0.7);
    for seed in 1..=5 {
        let (particles, moving, mut term) = cluster(seed, p, 0.1, 0.0, 1.0);
        let mut state = moving.clone();
        state.v = wobble::model::Vec3s::zeros(state.len());
        let n = state.len();
        let mut jac = support::DenseJacobian::new(n);
        term.add_jacobian(&ForceContext { particles: &particles, state: &state, t: 0.0 }, &mut jac);
        let h = 1e-6;
        for j in 0..n {
            for c in 0..3 {
                let (mut sp, mut sm) = (state.clone(), state.clone());
                *support::comp_mut(&mut sp.x, j, c) += h;
                *support::comp_mut(&mut sm.x, j, c) -= h;
                let (fp, fm) = (loads_of(&mut term, &particles, &sp), loads_of(&mut term, &particles, &sm));
                let (mut vp, mut vm) = (moving.clone(), moving.clone());
                *support::comp_mut(&mut vp.v, j, c) += h;
                *support::comp_mut(&mut vm.v, j, c) -= h;
                let (gp, gm) = (loads_of(&mut term, &particles, &vp), loads_of(&mut term, &particles, &vm));
                for i in 0..n {
                    for r in 0..3 {
                        let fd = (fp.f.get(i)[r] - fm.f.get(i)[r]) / (2.0 * h);
                        let block = jac.dfdx[(3 * i + r) * 3 * n + 3 * j + c];
                        assert_close!(block, fd, 1e-6 * (1.0 + fd.abs()), "seed {seed}: ∂f{i}.{r}/∂x{j}.{c}");
                        let fd = (gp.f.get(i)[r] - gm.f.get(i)[r]) / (2.0 * h);
                        let block = jac.dfdv[(3 * i + r) * 3 * n + 3 * j + c];
                        assert_close!(block, fd, 1e-8, "seed {seed}: ∂f{i}.{r}/∂v{j}.{c}");
                    }
                }
            }
        }
    }
}

#[test]
fn rotating_driver_turns_oriented_particles_and_twists_the_rod() {
    // A straight rod along x, first particle pinned, last driven by a rotation about
    // the rod's own axis at 1 rad/s for 0.5 s, no gravity. The driven particle's
    // orientation follows the driver exactly (q = R(0.5 rad) q₀, ω = the rate), and
    // the springs' twist angles, which telescope along a straight rod, sum to the
    // end-to-end rotation of 0.5 rad.
    use wobble::constraint::{Driver, Motion};
    let rod = Rod { count: 6, springs: GeneralizedParams::new(1e3, 1.0, 0.5, 0.5), ..Rod::default() };
    let mut b = WorldBuilder::new();
    let first = rod.build(&mut b, "rod").unwrap();
    let last = first + rod.count - 1;
    b.pin(first);
    b.pin(last);
    let axis = (rod.end - rod.start).normalize();
    let q0 = b.state.q[last];
    let motion = Motion::Rotate { center: rod.start, axis, rate: 1.0, start: 0.0, stop: 0.5 };
    let driver = Driver::new("twister", vec![last], &b.state, motion);
    b.add_constraint(driver);
    let mut w =
        b.build(SimParams { dt: 1e-4, integrator: IntegratorKind::SymplecticEuler, ..SimParams::default() }).unwrap();
    w.run(4000).unwrap();
    let expected = DQuat::from_axis_angle(axis, 0.4) * q0;
    assert!(w.state.q[last].dot(expected).abs() > 1.0 - 1e-12, "driven q {:?}, expected {expected:?}", w.state.q[last]);
    assert!((w.state.w.get(last) - axis).length() < 1e-12, "ω follows the driver while it turns");
    w.run(2000).unwrap();
    assert!(w.state.w.get(last).length() < 1e-12, "ω is zero once the driver stops");
    let term = w.force_of::<GeneralizedSprings>().unwrap();
    let twist: f64 = (0..term.len()).map(|s| term.angles(s, &w.state)[2]).sum();
    assert!((twist.abs() - 0.5).abs() < 1e-6, "total twist {twist} rad, expected ±0.5");
}

#[test]
fn live_bend_parameter_keeps_a_symmetric_law_symmetric() {
    // Moving the `bend` slider on a symmetric bar changes both signs; on a one-sided
    // bar it changes the positive side only (the negative has its own key).
    let rod = Rod { count: 3, springs: GeneralizedParams::new(1e3, 0.0, 2.0, 1.0), ..Rod::default() };
    let mut b = WorldBuilder::new();
    rod.build(&mut b, "rod").unwrap();
    let mut w = b.build(SimParams::default()).unwrap();
    let value = |w: &World, suffix: &str| {
        w.parameters().into_iter().find(|p| p.key.ends_with(suffix)).unwrap_or_else(|| panic!("{suffix}")).value
    };
    let key = |w: &World, suffix: &str| w.parameters().into_iter().find(|p| p.key.ends_with(suffix)).unwrap().key;
    let (bend, negative) = (key(&w, ".bend"), key(&w, ".bend_negative"));
    w.set_parameter(&bend, 5.0).unwrap();
    assert_eq!((value(&w, ".bend"), value(&w, ".bend_negative")), (5.0, 5.0));
    w.set_parameter(&negative, 1.0).unwrap();
    w.set_parameter(&bend, 8.0).unwrap();
    assert_eq!((value(&w, ".bend"), value(&w, ".bend_negative")), (8.0, 1.0));
}

#[test]
fn definite_jacobian_drops_a_compressed_springs_negative_stiffness() {
    // Implicit Euler's fallback asks for a definite Jacobian: for a compressed
    // generalized spring the transverse stiffness g/r < 0 must then be left out
    // (u·(∂f_a/∂x_a)u ≤ 0 for u across the spring), as the plain springs do.
    use glam::DMat3;
    use wobble::force::JacobianSink;
    struct Block {
        definite: bool,
        aa: DMat3,
    }
    impl JacobianSink for Block {
        fn add_dfdx(&mut self, i: usize, j: usize, block: DMat3) {
            if i == 0 && j == 0 {
                self.aa += block;
            }
        }
        fn add_dfdv(&mut self, _i: usize, _j: usize, _block: DMat3) {}
        fn definite(&self) -> bool {
            self.definite
        }
    }
    let (particles, mut state, term) = pair(GeneralizedParams::new(1e3, 0.0, 0.0, 0.0));
    let (a, b) = (state.x.get(0), state.x.get(1));
    state.x.set(1, a + (b - a) * 0.5); // compressed to half its rest length
    let across = (b - a).normalize().any_orthonormal_vector();
    for (definite, sign) in [(false, 1.0), (true, -1.0)] {
        let mut sink = Block { definite, aa: DMat3::ZERO };
        term.add_jacobian(&ForceContext { particles: &particles, state: &state, t: 0.0 }, &mut sink);
        let q = across.dot(sink.aa * across);
        assert!(sign * q > 0.0 || (definite && q == 0.0), "definite = {definite}: transverse stiffness form {q}");
    }
}

/// Two oriented particles on top of each other: the spring has no direction, so
/// it gives no force and no torque (instead of NaN), however turned and spinning
/// its ends are.
#[test]
fn coincident_ends_give_no_load() {
    let (particles, mut state, mut term) = pair(rich_params(true));
    state.x.set(1, state.x.get(0));
    state.q[0] = DQuat::from_rotation_z(0.3);
    state.q[1] = DQuat::from_rotation_x(0.5);
    state.w.set(0, DVec3::new(0.1, -0.2, 0.3));
    state.v.set(1, DVec3::new(0.0, 1.0, 0.0));
    let l = loads_of(&mut term, &particles, &state);
    for i in 0..2 {
        assert_eq!((l.f.get(i), l.tau.get(i)), (DVec3::ZERO, DVec3::ZERO), "particle {i}");
    }
}
