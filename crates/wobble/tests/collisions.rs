//! Colliders (`constraint/collider.rs`, physics notes §9): restitution, Coulomb
//! friction as an impulse, impenetrability of spheres, moving planes; and drivers
//! (`constraint/driver.rs`): driven particles exactly on their prescribed path.

#[macro_use]
mod support;

use std::f64::consts::TAU;

use glam::DVec3;
use support::Rng;
use wobble::build::WorldBuilder;
use wobble::build::chain::Chain;
use wobble::constraint::{Collider, Motion, Shape, Surface};
use wobble::force::{Gravity, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::world::{SimParams, World};

const G: f64 = 9.81;

fn floor(restitution: f64, friction: f64) -> Collider {
    Collider::new("floor", Shape::Plane { point: DVec3::ZERO, normal: DVec3::Y }, Surface { restitution, friction })
}

/// One particle of radius 0 at `x` with velocity `v`, the given colliders, optional
/// gravity.
fn particle_world(kind: IntegratorKind, dt: f64, x: DVec3, v: DVec3, gravity: bool, colliders: Vec<Collider>) -> World {
    let mut b = WorldBuilder::new();
    b.add_particle(x, v, 1.0, 0.0);
    if gravity {
        b.add_force(Gravity { g: DVec3::new(0.0, -G, 0.0) });
    }
    for c in colliders {
        b.add_constraint(c);
    }
    b.build(SimParams { dt, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 }).unwrap()
}

#[test]
fn bounce_apex_is_restitution_squared_times_drop_height() {
    // Dropped from rest at height H onto a frictionless floor, a particle hits at
    // speed √(2gH), leaves at ε√(2gH) and rises to ε² H. At h = 1e-4 s the impact is
    // detected up to one step late (speed error ≤ g h ≈ 2e-4 relative) and the
    // projection lifts the particle by at most one step of travel (√(2gH) h ≈ 0.4 mm,
    // ≤ 0.5 % of the smallest apex 0.09 m): tolerance 2 % relative.
    let height = 1.0;
    for kind in [IntegratorKind::SymplecticEuler, IntegratorKind::Rk4, IntegratorKind::Verlet] {
        for eps in [0.3, 0.6, 0.9, 1.0] {
            let mut w =
                particle_world(kind, 1e-4, DVec3::new(0.0, height, 0.0), DVec3::ZERO, true, vec![floor(eps, 0.0)]);
            let mut bounced = false;
            let mut apex: f64 = 0.0;
            for _ in 0..20_000 {
                w.step().unwrap();
                let (y, vy) = (w.state.x.get(0).y, w.state.v.get(0).y);
                if !bounced && vy > 0.0 {
                    bounced = true;
                }
                if bounced {
                    apex = apex.max(y);
                    if vy < 0.0 {
                        break;
                    }
                }
            }
            assert!(bounced, "{kind}, ε = {eps}: the particle never bounced");
            println!("{kind:>16}, ε = {eps}: apex {apex:.5} m, ε²H = {:.5} m", eps * eps * height);
            assert_rel!(apex, eps * eps * height, 0.02, "{kind}: first rebound apex for ε = {eps}");
            assert_eq!(w.state.x.get(0).x, 0.0, "{kind}: a frictionless vertical bounce stays vertical");
        }
    }
}

#[test]
fn perfectly_inelastic_floor_stops_the_particle() {
    // ε = 0: the normal velocity is removed on contact; the particle stays on the
    // floor (within one step's free fall, g h² = 1e-7 m, of it — it is put back on
    // the surface after every step).
    let mut w = particle_world(
        IntegratorKind::SymplecticEuler,
        1e-4,
        DVec3::new(0.0, 0.5, 0.0),
        DVec3::ZERO,
        true,
        vec![floor(0.0, 0.0)],
    );
    w.run(5000).unwrap(); // 0.5 s: lands after ≈ 0.32 s
    for _ in 0..1000 {
        w.step().unwrap();
        let (y, vy) = (w.state.x.get(0).y, w.state.v.get(0).y);
        assert_close!(y, 0.0, 1e-12, "height while resting on an ε = 0 floor");
        assert_close!(vy, 0.0, 1e-12, "vertical velocity while resting on an ε = 0 floor");
    }
}

#[test]
fn friction_impulse_removes_mu_times_normal_velocity_change() {
    // Coulomb friction as an impulse: a contact that changes the normal velocity by
    // Δv_n = (1 + ε)|v_n| reduces the tangential speed by μ Δv_n, but not below zero.
    // No gravity, so every integrator moves the particle by exactly h v into the
    // floor before the projection. Exact up to rounding: tolerance 1e-12 m/s.
    let h = 1e-3;
    let (vt, vn) = (2.0, 1.5);
    for kind in IntegratorKind::ALL {
        for (eps, mu) in [(0.5, 0.3), (0.0, 0.6), (1.0, 0.1), (0.5, 2.0)] {
            let start = DVec3::new(0.0, 0.4 * vn * h, 0.0);
            let v0 = DVec3::new(vt * 0.6, -vn, vt * 0.8); // |tangential| = vt
            let mut w = particle_world(kind, h, start, v0, false, vec![floor(eps, mu)]);
            w.step().unwrap();
            let v = w.state.v.get(0);
            let kept = (vt - mu * (1.0 + eps) * vn).max(0.0);
            let expected = DVec3::new(0.6 * kept, eps * vn, 0.8 * kept);
            assert_vec_close!(v, expected, 1e-12, "{kind}, ε = {eps}, μ = {mu}: velocity after one contact");
            assert_close!(w.state.x.get(0).y, 0.0, 1e-15, "{kind}: projected onto the floor");
        }
    }
}

#[test]
fn sliding_on_floor_decelerates_at_mu_g_and_stops_at_coulomb_distance() {
    // A particle sliding on a floor with ε = 0 and friction μ under gravity: every
    // step it sinks by g h², is put back, and loses tangential speed μ g h — a
    // constant deceleration μ g, as Coulomb's law says. It must stop after
    // t = v₀/(μ g) (within one step) having slid d = v₀²/(2 μ g) (within one step's
    // travel v₀ h).
    let (v0, mu, h) = (2.0, 0.5, 1e-4);
    for kind in [IntegratorKind::SymplecticEuler, IntegratorKind::Verlet, IntegratorKind::Rk4] {
        let mut w = particle_world(kind, h, DVec3::ZERO, DVec3::new(v0, 0.0, 0.0), true, vec![floor(0.0, mu)]);
        let mut stop_time = None;
        for _ in 0..10_000 {
            w.step().unwrap();
            if w.state.v.get(0).x == 0.0 {
                stop_time = Some(w.time());
                break;
            }
            let vx = w.state.v.get(0).x;
            let expected = v0 - mu * G * w.time();
            assert_close!(vx, expected, 1e-9, "{kind}: sliding speed v₀ − μ g t at t = {:.4}", w.time());
        }
        let t = stop_time.unwrap_or_else(|| panic!("{kind}: the particle never stopped"));
        let d = w.state.x.get(0).x;
        println!(
            "{kind:>16}: stopped at t = {t:.5} s (v₀/μg = {:.5}), slid {d:.5} m (v₀²/2μg = {:.5})",
            v0 / (mu * G),
            v0 * v0 / (2.0 * mu * G)
        );
        assert_close!(t, v0 / (mu * G), h, "{kind}: stopping time v₀/(μ g)");
        assert_close!(d, v0 * v0 / (2.0 * mu * G), v0 * h, "{kind}: stopping distance v₀²/(2 μ g)");
        w.run(100).unwrap();
        assert_eq!(w.state.x.get(0).x, d, "{kind}: static friction holds a stopped particle");
    }
}

#[test]
fn particles_never_end_a_step_inside_a_sphere_collider() {
    // Impenetrability: after every step every particle of radius r is at distance
    // ≥ R + r from the centre of a static sphere of radius R (up to rounding of the
    // projection, 1e-12 m). 300 particles rain onto the sphere from random places
    // with random velocities.
    let (center, radius) = (DVec3::new(0.1, -0.2, 0.05), 0.5);
    for kind in [IntegratorKind::SymplecticEuler, IntegratorKind::Rk4, IntegratorKind::Verlet] {
        let mut b = WorldBuilder::new();
        let mut rng = Rng::new(99);
        for _ in 0..300 {
            let x = center + DVec3::new(rng.range(-0.4, 0.4), rng.range(0.6, 1.2), rng.range(-0.4, 0.4));
            b.add_particle(x, rng.vec3(1.0) - DVec3::Y, 0.01, rng.range(0.0, 0.02));
        }
        b.add_force(Gravity::default());
        b.add_constraint(Collider::new(
            "ball",
            Shape::Sphere { center, radius },
            Surface { restitution: 0.4, friction: 0.2 },
        ));
        let mut w =
            b.build(SimParams { dt: 1e-3, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 }).unwrap();
        let mut touched = vec![false; 300];
        for step in 1..=1000 {
            w.step().unwrap();
            for (i, touched) in touched.iter_mut().enumerate() {
                let d = w.state.x.get(i).distance(center);
                let min = radius + w.particles.radius[i];
                assert!(
                    d >= min - 1e-12,
                    "{kind}: particle {i} is {:.3e} m inside the sphere after step {step}",
                    min - d
                );
                *touched |= d <= min + 1e-9;
            }
        }
        let hits = touched.iter().filter(|&&t| t).count();
        assert!(
            hits >= 100,
            "{kind}: only {hits} of 300 particles reached the sphere; the test would not exercise contacts"
        );
    }
}

#[test]
fn particle_pushed_out_of_a_collider_is_not_launched() {
    // A particle that starts 1 cm inside the floor, at rest, with no forces acting:
    // the projection puts it on the surface. Nothing does work on it, so it must stay
    // there at rest — under every integrator. (Position Verlet keeps a position
    // history; if the history is not reset when a constraint moves the particle
    // without changing its velocity, the next step reads the 1 cm jump as a velocity
    // of 1 cm / h = 10 m/s.) Tolerance: exact rest (1e-12).
    for kind in IntegratorKind::ALL {
        let mut w = particle_world(kind, 1e-3, DVec3::new(0.0, -0.01, 0.0), DVec3::ZERO, false, vec![floor(0.5, 0.3)]);
        for step in 1..=10 {
            w.step().unwrap();
            let (y, vy) = (w.state.x.get(0).y, w.state.v.get(0).y);
            assert_close!(y, 0.0, 1e-12, "{kind}: height after step {step}");
            assert_close!(vy, 0.0, 1e-12, "{kind}: velocity after step {step}");
        }
    }
}

#[test]
fn moving_plane_carries_a_resting_particle_and_launches_it_when_it_stops() {
    // A floor that rises at u = 1 m/s between t = 0.01 s and 0.21 s (Motion::Linear),
    // ε = 0, no friction, gravity. Before the start the particle rests at y = 0; while
    // the plane moves the particle rides on it: y = u (t − t₀) and v_y = u after every
    // step (tolerance 1e-12). When the plane stops the particle keeps v = u and flies
    // to u²/(2g) above it (tolerance 2 %: detection and the last step's gravity).
    let (u, t0, t1, h) = (1.0, 0.01, 0.21, 1e-4);
    let mut lift = floor(0.0, 0.0);
    lift.motion = Motion::Linear { velocity: DVec3::new(0.0, u, 0.0), start: t0, stop: t1 };
    let mut w = particle_world(IntegratorKind::SymplecticEuler, h, DVec3::ZERO, DVec3::ZERO, true, vec![lift]);
    let mut apex: f64 = 0.0;
    for _ in 0..6000 {
        w.step().unwrap();
        let t = w.time();
        let (y, vy) = (w.state.x.get(0).y, w.state.v.get(0).y);
        if t < t0 {
            assert_close!(y, 0.0, 1e-12, "resting before the plane moves (t = {t:.4})");
        } else if t < t1 {
            assert_close!(y, u * (t - t0), 1e-12, "riding the plane at t = {t:.4}");
            assert_close!(vy, u, 1e-12, "moving with the plane at t = {t:.4}");
        } else {
            assert!(y >= u * (t1 - t0) - 1e-12, "fell through the stopped plane at t = {t:.4}: y = {y}");
            apex = apex.max(y);
        }
    }
    let top = u * (t1 - t0);
    println!("launched: apex {:.5} m above the plane, u²/2g = {:.5} m", apex - top, u * u / (2.0 * G));
    assert_rel!(apex - top, u * u / (2.0 * G), 0.02, "height reached after the plane stops");
}

#[test]
fn driven_particle_is_exactly_on_its_path_after_every_step() {
    // WorldBuilder::drive with Motion::Oscillate: after every step the driven particle
    // is at x₀ + A (sin(2π f t + φ) − sin φ) with velocity 2π f A cos(2π f t + φ),
    // whatever the integrator did (here it hangs a chain under gravity). Formula
    // evaluated here; tolerance 1e-14 m (rounding of the same expression).
    let (amp, f, phase) = (DVec3::new(0.05, 0.02, -0.03), 2.0, 0.7);
    for kind in IntegratorKind::ALL {
        let mut b = WorldBuilder::new();
        let first = Chain {
            count: 10,
            start: DVec3::new(0.0, 1.0, 0.0),
            end: DVec3::new(0.5, 1.0, 0.0),
            structural: SpringParams::linear(500.0, 1.0),
            ..Chain::default()
        }
        .build(&mut b, "chain")
        .unwrap();
        let x0 = b.state.x.get(first);
        b.drive("shaker", vec![first], Motion::Oscillate { amplitude: amp, frequency: f, phase }).unwrap();
        b.add_force(Gravity::default());
        let mut w =
            b.build(SimParams { dt: 1e-4, integrator: kind, verlet_drag: 0.01, constraint_iterations: 1 }).unwrap();
        for step in 1..=2000 {
            w.step().unwrap();
            let t = w.time();
            let arg = TAU * f * t + phase;
            let x = x0 + amp * (arg.sin() - phase.sin());
            let v = amp * (TAU * f * arg.cos());
            assert_vec_close!(w.state.x.get(first), x, 1e-14, "{kind}: driven position at step {step}");
            assert_vec_close!(w.state.v.get(first), v, 1e-13, "{kind}: driven velocity at step {step}");
        }
        // The chain follows: its second particle has moved off its rest position.
        assert!(
            w.state.x.get(first + 1).distance(DVec3::new(0.5 / 9.0, 1.0, 0.0)) > 1e-3,
            "{kind}: the chain should move"
        );
    }
}
