//! Rigid bodies (000's heavy ball and cube) as particles with a shape.
//!
//! Invariants checked: a torque-free tumbling box keeps its angular momentum
//! L = R I Rᵀ ω and kinetic energy (to the integrator's order: first order for
//! symplectic Euler, tight for RK4); spin about a principal axis is steady; free fall
//! is the parabola; shape inertia matches a point-mass sum; contact between
//! particles and a body exchanges equal and opposite impulses; a ball resting on a
//! pinned cloth is carried by the cloth's springs; a box dropped flat on the floor
//! lands and stays; attachment springs have f = −∂E/∂x, τ = −∂E/∂θ, a Jacobian that
//! matches central differences, and conserve angular momentum.

#[macro_use]
mod support;

use glam::{DQuat, DVec3};
use support::{DenseJacobian, Rng, comp_mut, flat};
use wobble::build::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::build::rigid::{RigidBody, RigidHandle};
use wobble::constraint::collider::Surface;
use wobble::constraint::{Collider, Constraint, ConstraintContext, RigidContact, Shape};
use wobble::force::attachment::{Attachment, Link};
use wobble::force::spring::CubicLaw;
use wobble::force::{AirDrag, ForceContext, ForceTerm, Gravity, Loads, SpringLaw, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::model::{Particles, Rigid, RigidShape, State, closed_surface_volume};
use wobble::world::{SimParams, World};

const BOX: RigidShape = RigidShape::Box { half: DVec3::new(0.1, 0.2, 0.3) };

fn params(kind: IntegratorKind, dt: f64) -> SimParams {
    SimParams { dt, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 }
}

/// A free body alone in space.
fn lone_body(body: &RigidBody, kind: IntegratorKind, dt: f64) -> (World, RigidHandle) {
    let mut b = WorldBuilder::new();
    let h = body.build(&mut b, "body").expect("rigid body");
    (b.build(params(kind, dt)).expect("world"), h)
}

fn angular_momentum(w: &World, i: usize) -> DVec3 {
    w.particles.world_inertia(i, w.state.q[i]) * w.state.w.get(i)
}

fn spin_energy(w: &World, i: usize) -> f64 {
    let omega = w.state.w.get(i);
    0.5 * omega.dot(w.particles.world_inertia(i, w.state.q[i]) * omega)
}

fn tumbling() -> RigidBody {
    RigidBody {
        shape: BOX,
        mass: 2.0,
        orientation: DQuat::from_axis_angle(DVec3::new(1.0, 1.0, 0.0).normalize(), 0.4),
        angular_velocity: DVec3::new(1.0, 2.0, 3.0),
        ..RigidBody::default()
    }
}

/// Largest drift of |L| and E (relative) over `seconds` at step `dt`.
fn tumble_drift(kind: IntegratorKind, dt: f64, seconds: f64) -> (f64, f64) {
    let (mut w, h) = lone_body(&tumbling(), kind, dt);
    let (l0, e0) = (angular_momentum(&w, h.particle), spin_energy(&w, h.particle));
    let (mut dl, mut de) = (0.0f64, 0.0f64);
    for _ in 0..(seconds / dt).round() as u64 {
        w.step().expect("step");
        dl = dl.max((angular_momentum(&w, h.particle) - l0).length() / l0.length());
        de = de.max((spin_energy(&w, h.particle) - e0).abs() / e0);
    }
    (dl, de)
}

/// Euler's equations with the gyroscopic term: with RK4 at h = 1e-3 (h |ω| ≈ 4e-3)
/// a tumbling box about no principal axis keeps L and E to 1e-8 over 2 s; with
/// symplectic Euler the drift is first order: halving h halves it (ratio in
/// [1.7, 2.3]).
#[test]
fn torque_free_box_conserves_angular_momentum_and_energy() {
    let (dl, de) = tumble_drift(IntegratorKind::Rk4, 1e-3, 2.0);
    assert!(dl < 1e-8 && de < 1e-8, "RK4 drift: |ΔL|/|L| = {dl:.3e}, |ΔE|/E = {de:.3e}");
    let coarse = tumble_drift(IntegratorKind::SymplecticEuler, 2e-3, 1.0);
    let fine = tumble_drift(IntegratorKind::SymplecticEuler, 1e-3, 1.0);
    assert!(coarse.0 > 1e-6, "symplectic Euler shows no drift at all ({:.3e}): is the gyroscopic term used?", coarse.0);
    for (what, c, f) in [("angular momentum", coarse.0, fine.0), ("energy", coarse.1, fine.1)] {
        let ratio = c / f;
        assert!(
            (1.7..=2.3).contains(&ratio),
            "{what}: drift {c:.3e} at 2e-3, {f:.3e} at 1e-3, ratio {ratio:.3} (first order: 2)"
        );
    }
}

/// Without the gyroscopic term ω × Iω the same box would keep ω constant; check
/// that ω really changes (precesses) while L stays.
#[test]
fn tumbling_box_precesses() {
    let (mut w, h) = lone_body(&tumbling(), IntegratorKind::Rk4, 1e-3);
    let omega0 = w.state.w.get(h.particle);
    w.run(500).expect("run");
    let change = (w.state.w.get(h.particle) - omega0).length();
    assert!(change > 0.1 * omega0.length(), "ω changed by only {change:.3e} rad/s");
}

/// Spin about a principal axis is a steady rotation: ω stays constant to round-off
/// and q(T) = exp(ω T) q(0) to 1e-10 (RK4 at h = 1e-3, 1 s, 3 rad/s).
#[test]
fn spin_about_a_principal_axis_is_steady() {
    let q0 = DQuat::from_axis_angle(DVec3::new(0.3, -1.0, 0.5).normalize(), 1.1);
    for axis in [DVec3::X, DVec3::Y, DVec3::Z] {
        let omega = q0 * (3.0 * axis);
        let body =
            RigidBody { shape: BOX, mass: 2.0, orientation: q0, angular_velocity: omega, ..RigidBody::default() };
        let (mut w, h) = lone_body(&body, IntegratorKind::Rk4, 1e-3);
        w.run(1000).expect("run");
        assert_vec_close!(w.state.w.get(h.particle), omega, 1e-12, "axis {axis}: ω drifted");
        let expected = DQuat::from_scaled_axis(omega * w.time()) * q0;
        let q = w.state.q[h.particle];
        let err = (q - expected).length().min((q + expected).length());
        assert!(err < 1e-10, "axis {axis}: orientation off by {err:.3e}");
    }
}

/// Free fall of a spinning body: x(t) = x0 + v0 t + ½ g t² exactly for RK4 (the
/// motion is a quadratic), to round-off over 1 s.
#[test]
fn rigid_body_free_fall_is_parabolic() {
    let body = RigidBody {
        shape: BOX,
        mass: 3.0,
        position: DVec3::new(0.0, 2.0, 0.0),
        velocity: DVec3::new(1.0, 3.0, -0.5),
        angular_velocity: DVec3::new(4.0, 0.5, -1.0),
        ..RigidBody::default()
    };
    let mut b = WorldBuilder::new();
    let h = body.build(&mut b, "body").expect("body");
    b.add_force(Gravity::default());
    let mut w = b.build(params(IntegratorKind::Rk4, 1e-3)).expect("world");
    w.run(1000).expect("run");
    let t = w.time();
    let g = Gravity::default().g;
    let expected = body.position + body.velocity * t + 0.5 * g * t * t;
    assert_vec_close!(w.state.x.get(h.particle), expected, 1e-12, "position after {t} s");
    assert_vec_close!(w.state.v.get(h.particle), body.velocity + g * t, 1e-12, "velocity after {t} s");
}

/// The box's principal moments against the sum of m r⊥² over a 40³ grid of equal
/// point masses filling it (midpoint rule, error O(1/40²) ≈ 1e-3 relative); a
/// ball's 2/5 m r² against the same sum over the grid points inside it (a few %).
#[test]
fn shape_inertia_matches_point_mass_sums() {
    let n = 40;
    let half = DVec3::new(0.1, 0.2, 0.3);
    let mass = 2.0;
    let mut sum = DVec3::ZERO;
    let mut ball = (DVec3::ZERO, 0usize);
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                let u = |c: usize| (c as f64 + 0.5) / n as f64 * 2.0 - 1.0;
                let p = half * DVec3::new(u(i), u(j), u(k));
                sum += DVec3::new(p.y * p.y + p.z * p.z, p.x * p.x + p.z * p.z, p.x * p.x + p.y * p.y);
                let s = DVec3::new(u(i), u(j), u(k)) * 0.1;
                if s.length() <= 0.1 {
                    ball.0 += DVec3::new(s.y * s.y + s.z * s.z, s.x * s.x + s.z * s.z, s.x * s.x + s.y * s.y);
                    ball.1 += 1;
                }
            }
        }
    }
    let numeric = sum * (mass / (n * n * n) as f64);
    let exact = RigidShape::Box { half }.inertia(mass);
    for c in 0..3 {
        assert_rel!(exact[c], numeric[c], 2e-3, "box moment {c}");
    }
    let numeric_ball = ball.0 * (mass / ball.1 as f64);
    let exact_ball = RigidShape::Sphere { radius: 0.1 }.inertia(mass);
    for c in 0..3 {
        assert_rel!(exact_ball[c], numeric_ball[c], 0.03, "ball moment {c}");
    }
}

/// The drawn surfaces are closed and wound outward: the box's volume is exactly
/// 8abc, the 12 × 8 sphere's a little under 4/3 π r³ (inscribed polyhedron).
#[test]
fn rigid_surfaces_are_closed_and_outward() {
    for (shape, exact, rel) in [
        (BOX, 8.0 * 0.1 * 0.2 * 0.3, 1e-12),
        (RigidShape::Sphere { radius: 0.5 }, 4.0 / 3.0 * std::f64::consts::PI * 0.125, 0.1),
    ] {
        let (v, t) = shape.surface();
        let mut x = wobble::model::Vec3s::zeros(0);
        for p in v {
            x.push(p);
        }
        let vol = closed_surface_volume(&t, &x);
        assert!(vol > 0.0 && vol <= exact * (1.0 + 1e-12), "{shape:?}: volume {vol}");
        assert_rel!(vol, exact, rel, "{shape:?} volume");
    }
}

/// Signed distance of a box: outside, inside and on an edge.
#[test]
fn box_distance_and_normal() {
    let s = RigidShape::Box { half: DVec3::new(1.0, 2.0, 3.0) };
    let (d, n) = s.distance(DVec3::new(1.5, 0.0, 0.0));
    assert_close!(d, 0.5, 1e-15);
    assert_vec_close!(n, DVec3::X, 1e-15, "outside +x");
    let (d, n) = s.distance(DVec3::new(0.0, -1.5, 0.0));
    assert_close!(d, -0.5, 1e-15);
    assert_vec_close!(n, -DVec3::Y, 1e-15, "inside, nearest −y face");
    let (d, n) = s.distance(DVec3::new(2.0, 3.0, 0.0));
    assert_close!(d, 2f64.sqrt(), 1e-15);
    assert_vec_close!(n, DVec3::new(1.0, 1.0, 0.0).normalize(), 1e-15, "outside an edge");
}

/// The deepest point of a segment in a shape: for a box of half-extents
/// (1, 2, 3), a segment touching its edge x = 1, y = 2 mid-span (distance 0 at
/// t = ½), one cutting across that edge (inside, the distance is
/// max(0.2 − 0.6 t, 0.6 t − 0.4), least −0.1 at t = ½) and one ending inside
/// (−0.5 at its end); and a box's golden-section search and a ball's closed form
/// are never above the least signed distance over 20,001 evenly spaced points of
/// random segments (through, beside and inside).
#[test]
fn deepest_point_on_a_segment() {
    let box_shape = RigidShape::Box { half: DVec3::new(1.0, 2.0, 3.0) };
    let (t, d) = box_shape.deepest_on_segment(DVec3::new(1.3, 1.7, 0.0), DVec3::new(0.7, 2.3, 0.0));
    assert_close!(t, 0.5, 1e-9);
    assert_close!(d, 0.0, 1e-9);
    let (t, d) = box_shape.deepest_on_segment(DVec3::new(1.2, 1.6, 0.0), DVec3::new(0.6, 2.2, 0.0));
    assert_close!(t, 0.5, 1e-9);
    assert_close!(d, -0.1, 1e-9);
    let (t, d) = box_shape.deepest_on_segment(DVec3::new(1.5, 1.0, 0.5), DVec3::new(0.5, 1.0, 0.5));
    assert_close!(t, 1.0, 1e-9);
    assert_close!(d, -0.5, 1e-12);
    let mut rng = Rng::new(11);
    for shape in [box_shape, RigidShape::Sphere { radius: 1.5 }] {
        for _ in 0..200 {
            let mut point = || DVec3::new(rng.uniform(), rng.uniform(), rng.uniform()) * 8.0 - 4.0;
            let (a, b) = (point(), point());
            let (t, d) = shape.deepest_on_segment(a, b);
            let sampled = (0..=20_000)
                .map(|k| shape.distance(a + (b - a) * (f64::from(k) / 20_000.0)).0)
                .fold(f64::INFINITY, f64::min);
            assert_close!(shape.distance(a + t * (b - a)).0, d, 1e-15);
            assert!(d <= sampled + 1e-12, "{shape:?}: {d} above the sampled least {sampled}");
            assert!(d >= sampled - 1e-3 * (b - a).length(), "{shape:?}: {d} far below the sampled {sampled}");
        }
    }
}

fn project(c: &mut dyn Constraint, p: &Particles, s: &mut State) {
    c.project(&ConstraintContext { particles: p, t: 0.0, h: 1e-3 }, s);
}

fn momentum(p: &Particles, s: &State) -> DVec3 {
    (0..s.len()).map(|i| p.mass[i] * s.v.get(i)).sum()
}

/// One contact projection over 200 particles scattered through a moving, spinning
/// box and ball (with friction and restitution) leaves Σ m v unchanged to
/// round-off (1e-13 of the total |m v|).
#[test]
fn contact_exchanges_equal_and_opposite_impulses() {
    for shape in [BOX, RigidShape::Sphere { radius: 0.25 }] {
        let mut rng = Rng::new(5);
        let mut b = WorldBuilder::new();
        let body = RigidBody {
            shape,
            mass: 4.0,
            velocity: DVec3::new(0.3, -1.0, 0.2),
            angular_velocity: DVec3::new(2.0, -1.0, 3.0),
            orientation: DQuat::from_axis_angle(DVec3::Z, 0.3),
            ..RigidBody::default()
        };
        body.build(&mut b, "body").expect("body");
        for _ in 0..200 {
            b.add_particle(rng.vec3(0.35), rng.vec3(2.0), rng.range(0.01, 0.5), 0.01);
        }
        let surface = Surface { restitution: 0.4, friction: 0.5 };
        let mut c = RigidContact::new("contact", b.topology.rigids.clone(), surface, Vec::new());
        let before = momentum(&b.particles, &b.state);
        let scale: f64 = (0..b.state.len()).map(|i| b.particles.mass[i] * b.state.v.get(i).length()).sum();
        project(&mut c, &b.particles, &mut b.state);
        assert!(c.contacts > 20, "{shape:?}: only {} contacts", c.contacts);
        assert_vec_close!(momentum(&b.particles, &b.state), before, 1e-13 * scale, "{shape:?}: total momentum");
    }
}

/// A 1 kg ball 1 cm above a 16 × 16 cloth pinned along its border; returns the
/// world and the ball's particle.
fn ball_on_cloth(kind: IntegratorKind, dt: f64) -> (World, usize) {
    let mut b = WorldBuilder::new();
    let n = 16;
    let cloth = Cloth {
        nx: n,
        ny: n,
        spacing: 0.02,
        u: DVec3::X,
        v: DVec3::Z,
        mass: 0.25,
        structural: SpringParams::linear(1000.0, 0.5),
        shear: Some(SpringParams::linear(500.0, 0.25)),
        bend: None,
        radius: 0.002,
        ..Cloth::default()
    };
    let ch = cloth.build(&mut b, "cloth").expect("cloth");
    for k in 0..n {
        for p in [ch.particle(k, 0), ch.particle(k, n - 1), ch.particle(0, k), ch.particle(n - 1, k)] {
            b.pin(p);
        }
    }
    let centre = DVec3::new(0.15, 0.0, 0.15);
    let ball = RigidBody {
        shape: RigidShape::Sphere { radius: 0.06 },
        mass: 1.0,
        position: centre + DVec3::new(0.0, 0.07, 0.0),
        ..RigidBody::default()
    };
    let bh = ball.build(&mut b, "ball").expect("ball");
    let contact = RigidContact::new(
        "contact",
        b.topology.rigids.clone(),
        Surface { restitution: 0.0, friction: 0.3 },
        Vec::new(),
    );
    b.add_constraint(contact);
    b.add_force(Gravity::default());
    // The ball bounces on the cloth like on a trampoline; air drag settles it.
    b.add_force(AirDrag { rate: 4.0 });
    let w = b.build(params(kind, dt)).expect("world");
    (w, bh.particle)
}

/// Σ over the pinned particles of their spring loads (total load minus their own
/// weight), y component.
fn pin_reaction(w: &mut World) -> f64 {
    let loads: Loads = w.current_loads();
    let g = Gravity::default().g.y;
    (0..w.state.len()).filter(|&i| w.particles.pinned[i]).map(|i| loads.f.y[i] - w.particles.mass[i] * g).sum()
}

/// A 1 kg ball dropped onto a 16 × 16 cloth pinned along its border comes to rest;
/// over the last 0.5 s the contact impulse on the ball averages its weight (2%), and
/// the springs pull the pins down by the weight of the ball and the free cloth
/// together (2%): the cloth carries the ball. Air drag (4/s) damps the bouncing.
#[test]
fn ball_resting_on_pinned_cloth_is_carried_by_its_springs() {
    let (mut w, ball) = ball_on_cloth(IntegratorKind::SymplecticEuler, 1e-4);
    let g = -Gravity::default().g.y;
    w.run(30_000).expect("settle");
    let window = 5_000;
    let j0 = w.constraint_of::<RigidContact>().expect("contact").particle_impulse[0];
    let mut reaction = 0.0;
    for _ in 0..window {
        w.step().expect("step");
        reaction += pin_reaction(&mut w);
    }
    let j1 = w.constraint_of::<RigidContact>().expect("contact").particle_impulse[0];
    let duration = window as f64 * 1e-4;
    let contact_force = (j1 - j0) / duration;
    assert!(w.state.v.get(ball).length() < 1e-3, "ball still moves at {}", w.state.v.get(ball));
    assert_rel!(contact_force.y, 1.0 * g, 0.02, "mean contact force on the ball (N)");
    let free_cloth: f64 =
        (0..w.state.len()).filter(|&i| !w.particles.pinned[i] && i != ball).map(|i| w.particles.mass[i]).sum();
    assert_rel!(-reaction / window as f64, (1.0 + free_cloth) * g, 0.02, "mean pull of the springs on the pins (N)");
}

fn floor() -> Collider {
    Collider::new(
        "floor",
        Shape::Plane { point: DVec3::ZERO, normal: DVec3::Y },
        Surface { restitution: 0.3, friction: 0.5 },
    )
}

/// A box dropped flat from 0.3 m lands, bounces a little and rests on its face:
/// centre at its half-height (1e-4 m), level (1e-4 rad), at rest.
#[test]
fn box_lands_flat_on_the_floor_and_stays() {
    let half = DVec3::new(0.1, 0.05, 0.15);
    let mut b = WorldBuilder::new();
    let body = RigidBody {
        shape: RigidShape::Box { half },
        mass: 5.0,
        position: DVec3::new(0.0, 0.3, 0.0),
        ..RigidBody::default()
    };
    let h = body.build(&mut b, "box").expect("box");
    b.add_constraint(RigidContact::new("contact", b.topology.rigids.clone(), Surface::default(), vec![floor()]));
    b.add_force(Gravity::default());
    let mut w = b.build(params(IntegratorKind::SymplecticEuler, 1e-3)).expect("world");
    w.run(2000).expect("run");
    let i = h.particle;
    assert_close!(w.state.x.get(i).y, half.y, 1e-4, "resting height");
    let tilt = w.state.q[i].angle_between(DQuat::IDENTITY);
    assert!(tilt < 1e-4, "tilted by {tilt:.3e} rad");
    assert!(
        w.state.v.get(i).length() < 1e-2 && w.state.w.get(i).length() < 1e-2,
        "still moving: v {} ω {}",
        w.state.v.get(i),
        w.state.w.get(i)
    );
    w.run(1000).expect("run on");
    assert_close!(w.state.x.get(i).y, half.y, 1e-4, "still resting after another second");
}

/// A box dropped tilted and spinning settles on one of its faces: the lowest
/// corner touches the floor and one body axis points up (cos > 0.999).
#[test]
fn tilted_box_settles_on_a_face() {
    let half = DVec3::new(0.1, 0.05, 0.15);
    let mut b = WorldBuilder::new();
    let body = RigidBody {
        shape: RigidShape::Box { half },
        mass: 5.0,
        position: DVec3::new(0.0, 0.5, 0.0),
        orientation: DQuat::from_axis_angle(DVec3::new(1.0, 0.2, 0.4).normalize(), 0.7),
        angular_velocity: DVec3::new(1.0, 0.0, 2.0),
        ..RigidBody::default()
    };
    let h = body.build(&mut b, "box").expect("box");
    b.add_constraint(RigidContact::new("contact", b.topology.rigids.clone(), Surface::default(), vec![floor()]));
    b.add_force(Gravity::default());
    let mut w = b.build(params(IntegratorKind::SymplecticEuler, 1e-3)).expect("world");
    w.run(4000).expect("run");
    let q = w.state.q[h.particle];
    let up = [DVec3::X, DVec3::Y, DVec3::Z].map(|a| (q * a).y.abs()).into_iter().fold(0.0, f64::max);
    assert!(up > 0.999, "no face is down: best axis cos = {up}");
    let mut corners = [DVec3::ZERO; 8];
    let (count, _) = RigidShape::Box { half }.support_points(&mut corners);
    let lowest = corners[..count].iter().map(|c| (w.state.x.get(h.particle) + q * *c).y).fold(f64::INFINITY, f64::min);
    assert_close!(lowest, 0.0, 1e-4, "lowest corner height");
}

/// Every spring law, the cubic one (000's cloth parameters) without Jacobian damping
/// so that its Jacobian is the exact derivative.
fn laws() -> [SpringLaw; 3] {
    let cubic = CubicLaw::new(400.0, 1.04, 2400.0, 0.96, 800.0, 1.0).expect("cubic law");
    [SpringLaw::Linear, SpringLaw::StVK, SpringLaw::Cubic(cubic)]
}

/// Three particles attached to a box by links at random offsets with law `law`,
/// everything in random motion.
fn attached(seed: u64, damping: f64, law: SpringLaw) -> (Attachment, Particles, State) {
    let mut rng = Rng::new(seed);
    let mut b = WorldBuilder::new();
    let body = RigidBody {
        shape: BOX,
        mass: 2.0,
        position: rng.vec3(0.2),
        velocity: rng.vec3(1.0),
        orientation: DQuat::from_axis_angle(rng.vec3(1.0).normalize(), 0.8),
        angular_velocity: rng.vec3(2.0),
        ..RigidBody::default()
    };
    let h = body.build(&mut b, "box").expect("box");
    let mut links = Vec::new();
    for _ in 0..3 {
        let p = b.add_particle(DVec3::new(0.0, 0.6, 0.0) + rng.vec3(0.2), rng.vec3(1.0), 0.3, 0.0);
        links.push(Link { particle: p, body: h.particle, offset: rng.vec3(0.2), rest: rng.range(0.1, 0.3) });
    }
    (Attachment::new("attach", links, SpringParams { stiffness: 400.0, damping, law }), b.particles, b.state)
}

fn loads(term: &mut Attachment, p: &Particles, s: &State) -> Loads {
    let mut out = Loads::zeros(s.len());
    term.add_forces(&ForceContext { particles: p, state: s, t: 0.0 }, &mut out);
    out
}

/// f = −∂E/∂x for particles and the body's centre, and τ = −∂E/∂θ for small
/// rotations of the body (central differences, step 1e-6, tolerance 1e-6 of the
/// largest load), for every law.
#[test]
fn attachment_forces_and_torques_are_energy_gradients() {
    for law in laws() {
        attachment_gradient_case(law);
    }
}

fn attachment_gradient_case(law: SpringLaw) {
    let (mut term, p, s) = attached(3, 0.0, law);
    let l = loads(&mut term, &p, &s);
    let f = flat(&l.f);
    let scale = f.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    let energy = |s: &State| term.potential_energy(&ForceContext { particles: &p, state: s, t: 0.0 });
    let h = 1e-6;
    for i in 0..s.len() {
        for c in 0..3 {
            let (mut sp, mut sm) = (s.clone(), s.clone());
            *comp_mut(&mut sp.x, i, c) += h;
            *comp_mut(&mut sm.x, i, c) -= h;
            assert_close!(
                f[3 * i + c],
                -(energy(&sp) - energy(&sm)) / (2.0 * h),
                1e-6 * scale,
                "{}: force {i}.{c}",
                law.name()
            );
        }
    }
    let body = 0;
    for axis in [DVec3::X, DVec3::Y, DVec3::Z] {
        let (mut sp, mut sm) = (s.clone(), s.clone());
        sp.q[body] = DQuat::from_scaled_axis(axis * h) * s.q[body];
        sm.q[body] = DQuat::from_scaled_axis(-axis * h) * s.q[body];
        let fd = -(energy(&sp) - energy(&sm)) / (2.0 * h);
        assert_close!(l.tau.get(body).dot(axis), fd, 1e-6 * scale, "{}: torque about {axis}", law.name());
    }
}

/// The translational Jacobian blocks (∂f/∂x and ∂f/∂v over particles and the body
/// centre) against central differences of the force. ∂f/∂x leaves out the damping's
/// dependence on position (as every spring does), so it is checked without damping.
/// Every law.
#[test]
fn attachment_jacobian_matches_finite_differences() {
    for law in laws() {
        for damping in [0.0, 0.7] {
            attachment_jacobian_case(damping, law);
        }
    }
}

fn attachment_jacobian_case(damping: f64, law: SpringLaw) {
    let (mut term, p, s) = attached(9, damping, law);
    let n = s.len();
    let mut jac = DenseJacobian::new(n);
    term.add_jacobian(&ForceContext { particles: &p, state: &s, t: 0.0 }, &mut jac);
    let scale = jac.dfdx.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    let h = 1e-6;
    for j in 0..n {
        for c in 0..3 {
            for (velocity, matrix) in [(false, &jac.dfdx), (true, &jac.dfdv)] {
                if !velocity && damping > 0.0 {
                    continue;
                }
                let (mut sp, mut sm) = (s.clone(), s.clone());
                let (vp, vm) = if velocity { (&mut sp.v, &mut sm.v) } else { (&mut sp.x, &mut sm.x) };
                *comp_mut(vp, j, c) += h;
                *comp_mut(vm, j, c) -= h;
                let (fp, fm) = (flat(&loads(&mut term, &p, &sp).f), flat(&loads(&mut term, &p, &sm).f));
                for r in 0..3 * n {
                    let fd = (fp[r] - fm[r]) / (2.0 * h);
                    assert_close!(
                        matrix[r * 3 * n + 3 * j + c],
                        fd,
                        1e-6 * scale,
                        "d{} row {r} col {}",
                        if velocity { "v" } else { "x" },
                        3 * j + c
                    );
                }
            }
        }
    }
}

/// Particles attached to a tumbling box, no gravity, damped links: the total
/// angular momentum Σ m x × v + Σ I ω is conserved by the forces (RK4, h = 1e-4,
/// 0.5 s: 1e-9 relative), and without damping the total energy too (1e-7).
#[test]
fn attached_free_system_conserves_angular_momentum() {
    for damping in [0.0, 0.5] {
        let (term, particles, state) = attached(17, damping, SpringLaw::Linear);
        let mut b = WorldBuilder::new();
        b.particles = particles;
        b.state = state;
        b.add_force(term);
        let mut w = b.build(params(IntegratorKind::Rk4, 1e-4)).expect("world");
        let m0 = w.metrics();
        w.run(5000).expect("run");
        let m1 = w.metrics();
        let l = m0.angular_momentum.length();
        assert!(
            (m1.angular_momentum - m0.angular_momentum).length() < 1e-9 * l,
            "damping {damping}: L {} → {}",
            m0.angular_momentum,
            m1.angular_momentum
        );
        if damping == 0.0 {
            assert_rel!(m1.total, m0.total, 1e-7, "energy without damping");
        } else {
            assert!(m1.total < m0.total, "damping must dissipate");
        }
    }
}

/// A box hanging from a pinned point by one attachment spring at the middle of its
/// top face comes to rest, under implicit Euler at h = 10 ms (100 times the explicit
/// step of the experiments), where the spring carries its weight: stretch m g / k,
/// the box straight below the point (1e-5 m) and level (tilt below 1.4e-4 rad).
/// Its swinging is damped only through the translation (air drag; the rotation is
/// integrated explicitly and has no damper of its own), hence the 60 s.
#[test]
fn box_hangs_at_equilibrium_under_implicit_euler() {
    let half = DVec3::new(0.1, 0.05, 0.1);
    let (m, k, rest) = (2.0, 400.0, 0.1);
    let mut b = WorldBuilder::new();
    let anchor = b.add_particle(DVec3::new(0.0, 1.0, 0.0), DVec3::ZERO, 1.0, 0.0);
    b.pin(anchor);
    let body = RigidBody {
        shape: RigidShape::Box { half },
        mass: m,
        position: DVec3::new(0.03, 1.0 - rest - half.y, 0.02),
        orientation: DQuat::from_rotation_z(0.2),
        ..RigidBody::default()
    };
    let h = body.build(&mut b, "box").expect("box");
    let link = Link { particle: anchor, body: h.particle, offset: DVec3::new(0.0, half.y, 0.0), rest };
    b.add_force(Attachment::new("hang", vec![link], SpringParams::linear(k, 2.0)));
    b.add_force(Gravity::default());
    b.add_force(AirDrag { rate: 1.0 });
    let mut w = b.build(params(IntegratorKind::ImplicitEuler, 1e-2)).expect("world");
    w.run(6000).expect("run");
    let g = -Gravity::default().g.y;
    let expected = DVec3::new(0.0, 1.0 - rest - m * g / k - half.y, 0.0);
    assert_vec_close!(w.state.x.get(h.particle), expected, 1e-5, "resting centre");
    // Level: the body's y axis points up (a turn about the vertical is free).
    let up = (w.state.q[h.particle] * DVec3::Y).y;
    assert!(up > 1.0 - 1e-8, "hangs tilted: cos = {up}");
}

/// Contact, attachments and rigid rotation give bit-identical results on 1 and 3
/// threads (the ball on the cloth, symplectic and implicit Euler).
#[test]
fn rigid_worlds_are_bit_identical_for_any_thread_count() {
    for (kind, dt) in [(IntegratorKind::SymplecticEuler, 1e-4), (IntegratorKind::ImplicitEuler, 1e-3)] {
        let run = |threads: usize| {
            let (mut w, _) = ball_on_cloth(kind, dt);
            support::pool(threads).install(|| w.run(300)).expect("run");
            w.state
        };
        let (one, three) = (run(1), run(3));
        assert!(one == three, "{kind}: states differ between 1 and 3 threads");
    }
}

#[test]
fn attachment_stiffness_bound_follows_a_stiffening_law() {
    // The stable-step estimate must see a stretched cubic link's slope, not just K:
    // at each link's current length the bound on its particle's row is at least the
    // law's |g'(r)| w_p (the same rule as the spring network's).
    let cubic = laws()[2];
    let (term, particles, state) = attached(5, 0.0, cubic);
    let ctx = ForceContext { particles: &particles, state: &state, t: 0.0 };
    let (mut k_row, mut c_row) = (vec![0.0; state.len()], vec![0.0; state.len()]);
    term.add_stiffness_bound(&ctx, &mut k_row, &mut c_row);
    let mut beyond_k = false;
    for link in &term.links {
        let anchor = state.x.get(link.body) + state.q[link.body] * link.offset;
        let r = (state.x.get(link.particle) - anchor).length();
        let (_, dg) = cubic.magnitude(r, link.rest, 400.0);
        let w = particles.inv_mass[link.particle];
        assert!(k_row[link.particle] >= dg.abs() * w * (1.0 - 1e-12), "row {} below |g'| w", k_row[link.particle]);
        beyond_k |= dg.abs() > 400.0;
    }
    assert!(beyond_k, "some link should be stretched into the stiffening part of the law");
}

/// Two equal rigid balls meeting head-on with restitution 1 exchange their
/// velocities; linear and angular momentum are kept to round-off.
#[test]
fn equal_balls_exchange_velocities_and_keep_momentum() {
    use wobble::build::rigid::RigidBody;
    use wobble::constraint::RigidContact;
    use wobble::constraint::collider::Surface;
    let mut b = wobble::WorldBuilder::new();
    let shape = wobble::model::RigidShape::Sphere { radius: 0.1 };
    let body = |x: f64, v: f64| RigidBody {
        shape,
        mass: 2.0,
        position: glam::DVec3::new(x, 0.0, 0.01),
        velocity: glam::DVec3::new(v, 0.0, 0.0),
        ..RigidBody::default()
    };
    let ha = body(-0.3, 1.0).build(&mut b, "a").unwrap().particle;
    let hb = body(0.3, -1.0).build(&mut b, "b").unwrap().particle;
    let bodies = b.topology.rigids.clone();
    let n = b.state.len();
    let mut contact =
        RigidContact::new("rigid-bodies", bodies, Surface { restitution: 1.0, friction: 0.0 }, Vec::new());
    contact.only = Some(vec![false; n]);
    b.add_constraint(contact);
    let mut w = b.build(wobble::SimParams { dt: 1e-4, ..wobble::SimParams::default() }).unwrap();
    let (p0, l0) = (w.metrics().momentum, w.metrics().angular_momentum);
    w.run(5000).unwrap();
    let (va, vb) = (w.state.v.get(ha), w.state.v.get(hb));
    assert!((va.x + 1.0).abs() < 1e-9 && (vb.x - 1.0).abs() < 1e-9, "velocities after: {va} {vb}");
    assert!((w.metrics().momentum - p0).length() < 1e-12);
    assert!((w.metrics().angular_momentum - l0).length() < 1e-12);
}

/// A ball or box meeting a triangle inside its face (far from its corners, whose
/// particles alone would let it through) pushes it away, and the impulses are equal
/// and opposite: Σ m v is unchanged to round-off.
#[test]
fn bodies_meet_triangles_between_their_particles_and_keep_momentum() {
    for shape in [RigidShape::Sphere { radius: 0.05 }, RigidShape::Box { half: DVec3::splat(0.05) }] {
        let mut b = WorldBuilder::new();
        // A big triangle in the plane y = 0; the body sits over its centroid,
        // 0.04 m above it, moving down and sideways and spinning.
        let corners = [DVec3::new(-1.0, 0.0, -1.0), DVec3::new(1.0, 0.0, -1.0), DVec3::new(0.0, 0.0, 1.0)];
        let tri: Vec<u32> =
            corners.iter().map(|&c| b.add_particle(c, DVec3::new(0.1, 0.2, 0.0), 0.2, 0.005) as u32).collect();
        let centroid = (corners[0] + corners[1] + corners[2]) / 3.0;
        let body = RigidBody {
            shape,
            mass: 2.0,
            position: centroid + DVec3::new(0.0, 0.04, 0.0),
            velocity: DVec3::new(0.5, -2.0, 0.1),
            angular_velocity: DVec3::new(0.0, 3.0, 1.0),
            ..RigidBody::default()
        };
        let handle = body.build(&mut b, "body").expect("body");
        let mut c = RigidContact::new(
            "contact",
            b.topology.rigids.clone(),
            Surface { restitution: 0.3, friction: 0.4 },
            Vec::new(),
        );
        c.triangles = vec![[tri[0], tri[1], tri[2]]];
        let before = momentum(&b.particles, &b.state);
        let scale: f64 = (0..b.state.len()).map(|i| b.particles.mass[i] * b.state.v.get(i).length()).sum();
        project(&mut c, &b.particles, &mut b.state);
        assert!(c.contacts >= 1, "{shape:?}: no contact");
        assert_vec_close!(momentum(&b.particles, &b.state), before, 1e-13 * scale, "{shape:?}: total momentum");
        // The body no longer approaches the triangle's plane faster than the
        // triangle does, and it was pushed up.
        let v_body = b.state.v.get(handle.particle).y;
        let v_tri = tri.iter().map(|&i| b.state.v.get(i as usize).y).sum::<f64>() / 3.0;
        assert!(v_body >= v_tri - 1e-12, "{shape:?}: still approaching ({v_body} vs {v_tri})");
        assert!(b.state.x.get(handle.particle).y > 0.04, "{shape:?}: not pushed away");
    }
}

/// A flat n × n cloth in the x–z plane of the given spacing (m), mass (kg) and
/// particle radius (m), with structural and shear springs and no bending, pinned
/// along its whole border.
fn pinned_cloth(
    b: &mut WorldBuilder,
    n: usize,
    spacing: f64,
    mass: f64,
    radius: f64,
    structural: SpringParams,
    shear: SpringParams,
) {
    let cloth = Cloth {
        nx: n,
        ny: n,
        spacing,
        u: DVec3::X,
        v: DVec3::Z,
        mass,
        structural,
        shear: Some(shear),
        bend: None,
        radius,
        ..Cloth::default()
    };
    let ch = cloth.build(b, "cloth").expect("cloth");
    for k in 0..n {
        for p in [ch.particle(k, 0), ch.particle(k, n - 1), ch.particle(0, k), ch.particle(n - 1, k)] {
            b.pin(p);
        }
    }
}

/// A small ball dropped onto the middle of a coarse cloth cell (its particles 0.25 m
/// apart, the ball 0.08 m across) is held by the triangles and settles; with
/// particle contact alone it would fall through.
#[test]
fn small_ball_rests_on_a_coarse_cloth() {
    let mut b = WorldBuilder::new();
    pinned_cloth(&mut b, 5, 0.25, 0.5, 0.005, SpringParams::linear(2000.0, 1.0), SpringParams::linear(1000.0, 0.5));
    let ball = RigidBody {
        shape: RigidShape::Sphere { radius: 0.04 },
        mass: 0.2,
        position: DVec3::new(0.375, 0.1, 0.375),
        ..RigidBody::default()
    };
    let bh = ball.build(&mut b, "ball").expect("ball");
    let mut contact = RigidContact::new(
        "contact",
        b.topology.rigids.clone(),
        Surface { restitution: 0.0, friction: 0.3 },
        Vec::new(),
    );
    contact.triangles = b.topology.triangles.clone();
    b.add_constraint(contact);
    b.add_force(Gravity::default());
    b.add_force(AirDrag { rate: 4.0 });
    let mut w = b.build(params(IntegratorKind::SymplecticEuler, 2e-4)).expect("world");
    // Two seconds: it bounces, rolls about the pocket it presses into the slack
    // cloth, and settles.
    let mut lowest = f64::INFINITY;
    for _ in 0..200 {
        w.run(50).expect("run");
        lowest = lowest.min(w.state.x.get(bh.particle).y);
    }
    let y = w.state.x.get(bh.particle).y;
    // Free fall would end 19.5 m down; the cloth sags a few centimetres.
    assert!(lowest > -0.15, "the ball fell through the cloth: lowest y = {lowest}");
    let v = w.state.v.get(bh.particle).length();
    assert!(v < 0.05, "the ball has not settled: |v| = {v} m/s at y = {y}");
}

/// Number of (box triangle, cloth triangle) pairs that cross, by the independent
/// checker ([`wobble::contact::intersect::triangles_intersect`]).
fn box_cloth_crossings(w: &World, cloth: &[[u32; 3]]) -> usize {
    let (verts, tris) = wobble::model::rigid::rigid_surfaces(&w.topology.rigids, &w.state, 0);
    let lo = verts.iter().fold(DVec3::INFINITY, |m, v| m.min(*v));
    let hi = verts.iter().fold(DVec3::NEG_INFINITY, |m, v| m.max(*v));
    let near: Vec<[DVec3; 3]> = cloth
        .iter()
        .map(|c| w.state.x.gather(c))
        .filter(|[a, b, c]| !(a.max(*b).max(*c).cmplt(lo).any() || a.min(*b).min(*c).cmpgt(hi).any()))
        .collect();
    let mut count = 0;
    for t in &tris {
        let a = t.map(|i| verts[i as usize]);
        for &c in &near {
            if wobble::contact::intersect::triangles_intersect(a, c) {
                count += 1;
            }
        }
    }
    count
}

/// A box dropped flat or tilted onto a pinned cloth whose particles have no
/// radius (the scene default), fine (its edges cross the cloth's edges between
/// their particles) or coarse (its edges cut through the cloth's triangles
/// between its corners), lands, rocks and settles, and no box face crosses a
/// cloth triangle after any step.
#[test]
fn box_on_a_cloth_never_cuts_through_it() {
    let cases = [(21, 0.03, 0.0, "fine, flat"), (21, 0.03, 0.5, "fine, tilted"), (5, 0.15, 0.7, "coarse, tilted")];
    for (n, spacing, tilt, label) in cases {
        let mut b = WorldBuilder::new();
        pinned_cloth(
            &mut b,
            n,
            spacing,
            0.4,
            0.0,
            SpringParams::linear(2000.0, 0.5),
            SpringParams::linear(1000.0, 0.2),
        );
        let middle = 0.5 * spacing * (n - 1) as f64;
        let body = RigidBody {
            shape: RigidShape::Box { half: DVec3::new(0.1, 0.05, 0.07) },
            mass: 1.0,
            position: DVec3::new(middle + 0.01, 0.15, middle - 0.01),
            orientation: DQuat::from_axis_angle(DVec3::new(1.0, 0.0, 0.6).normalize(), tilt),
            ..RigidBody::default()
        };
        let handle = body.build(&mut b, "box").expect("box");
        let mut contact = RigidContact::new(
            "contact",
            b.topology.rigids.clone(),
            Surface { restitution: 0.0, friction: 0.3 },
            Vec::new(),
        );
        contact.triangles = b.topology.triangles.clone();
        let cloth_tris = b.topology.triangles.clone();
        b.add_constraint(contact);
        b.add_force(Gravity::default());
        b.add_force(AirDrag { rate: 4.0 });
        let mut w = b.build(params(IntegratorKind::SymplecticEuler, 2e-4)).expect("world");
        let (mut worst, mut crossed_steps) = (0, 0);
        for _ in 0..7500 {
            w.run(1).expect("run");
            let c = box_cloth_crossings(&w, &cloth_tris);
            worst = worst.max(c);
            crossed_steps += usize::from(c > 0);
        }
        assert_eq!(
            crossed_steps, 0,
            "{label}: the box crossed the cloth after {crossed_steps} steps (at most {worst} pairs)"
        );
        // Free fall would take it 27 m down in 1.5 s; it rests in the cloth.
        let (y, v) = (w.state.x.get(handle.particle).y, w.state.v.get(handle.particle).length());
        assert!(y > -0.3 && v < 0.05, "{label}: the box has not come to rest on the cloth: y = {y} m, |v| = {v} m/s");
    }
}

/// A thin bar piercing a small triangle steeply (its ends' corners lie beyond the
/// triangle's sides, its cross-section in the triangle's plane inside it, so no
/// corner, edge midpoint or triangle edge meets it) is found by its edges and
/// pushed out along the face normal, with equal and opposite impulses.
#[test]
fn box_edge_through_a_triangle_is_pushed_out() {
    let mut b = WorldBuilder::new();
    let corners = [DVec3::new(-0.05, 0.0, -0.05), DVec3::new(0.05, 0.0, -0.05), DVec3::new(0.0, 0.0, 0.05)];
    let tri: Vec<u32> =
        corners.iter().map(|&c| b.add_particle(c, DVec3::new(0.0, -0.3, 0.0), 0.1, 0.002) as u32).collect();
    // The bar's axis (−sin 60°, cos 60°, 0) crosses the plane at the origin, its
    // top end 0.1 m beyond along the axis (0.087 m off to the side, outside the
    // triangle).
    let rotation = DQuat::from_rotation_z(60f64.to_radians());
    let axis = rotation * DVec3::Y;
    let body = RigidBody {
        shape: RigidShape::Box { half: DVec3::new(0.005, 0.3, 0.005) },
        mass: 1.0,
        position: -0.2 * axis,
        orientation: rotation,
        velocity: DVec3::new(0.0, 0.2, 0.0),
        ..RigidBody::default()
    };
    let handle = body.build(&mut b, "bar").expect("bar");
    let mut c = RigidContact::new(
        "contact",
        b.topology.rigids.clone(),
        Surface { restitution: 0.0, friction: 0.2 },
        Vec::new(),
    );
    c.triangles = vec![[tri[0], tri[1], tri[2]]];
    let crossing = |s: &State| {
        let (v, t) =
            wobble::model::rigid::rigid_surfaces(&[Rigid { particle: handle.particle, shape: body.shape }], s, 0);
        let face = [0, 1, 2].map(|k| s.x.get(tri[k] as usize));
        t.iter().filter(|t| wobble::contact::intersect::triangles_intersect(t.map(|i| v[i as usize]), face)).count()
    };
    assert!(crossing(&b.state) > 0, "the set-up must start crossed");
    let before = momentum(&b.particles, &b.state);
    project(&mut c, &b.particles, &mut b.state);
    assert!(c.contacts >= 1, "no contact found");
    assert_eq!(crossing(&b.state), 0, "the bar still crosses the triangle");
    let scale: f64 = (0..b.state.len()).map(|i| b.particles.mass[i] * b.state.v.get(i).length()).sum();
    assert_vec_close!(momentum(&b.particles, &b.state), before, 1e-13 * scale.max(1.0), "total momentum");
    // The triangle went up (away from the bar's centre, below the plane) and no
    // longer approaches the bar.
    let y = tri.iter().map(|&i| b.state.x.get(i as usize).y).sum::<f64>() / 3.0;
    assert!(y > 0.0, "triangle not pushed up: y = {y}");
}
