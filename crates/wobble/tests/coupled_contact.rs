//! Contacts held inside an implicit solve (`constraint`'s "Constraints inside an
//! implicit solve").
//!
//! Invariants checked: the coupled springs of colliders and rigid bodies push with
//! k δ n, k = κ m_r / h², and their Jacobian blocks match central differences of
//! their forces (exactly where the distance has no curvature term left out: planes,
//! box faces, balls); a stiff lattice resting on the floor and a heavy box resting
//! on that lattice settle, under implicit Euler at 000's 5 ms, where a small
//! explicit step puts them (the static equilibrium does not depend on the
//! integrator), and the box's drop never raises the total energy (before the
//! coupling, the box sank through the lattice and the spring energy rose from 13 J
//! to over 1 kJ).

#[macro_use]
mod support;

use glam::{DQuat, DVec3};
use support::{DenseJacobian, Rng, comp_mut, flat};
use wobble::build::WorldBuilder;
use wobble::build::lattice::Lattice;
use wobble::build::rigid::RigidBody;
use wobble::constraint::collider::Surface;
use wobble::constraint::{
    COUPLED_STIFFNESS, Collider, Constraint, ConstraintContext, RigidContact, Shape, coupled_stiffness,
};
use wobble::force::{AirDrag, Gravity, Loads, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::model::{Particles, RigidShape, State};
use wobble::world::{SimParams, World};

const H: f64 = 5e-3;

fn coupled_loads(c: &mut dyn Constraint, p: &Particles, s: &State) -> Loads {
    let mut out = Loads::zeros(s.len());
    c.add_coupled_forces(&ConstraintContext { particles: p, t: 0.0, h: H }, s, &mut out);
    out
}

/// Central differences of the coupled forces against the coupled Jacobian, every
/// column of ∂f/∂x and ∂f/∂v (steps of 1e-7 m and 1e-7 m/s: well inside every
/// contact's penetration, and of the stick speed, so friction stays viscous with
/// its coefficient fixed), tolerance 1e-6 of the largest entry.
fn check_jacobian(c: &mut dyn Constraint, p: &Particles, s: &State, what: &str) {
    let n = s.len();
    let mut jac = DenseJacobian::new(n);
    c.add_coupled_jacobian(&ConstraintContext { particles: p, t: 0.0, h: H }, s, &mut jac);
    let scale = jac.dfdx.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    assert!(scale > 0.0, "{what}: no contact in the test state");
    let step = 1e-7;
    for (velocity, matrix) in [(false, &jac.dfdx), (true, &jac.dfdv)] {
        let scale = matrix.iter().fold(0.0f64, |a, b| a.max(b.abs())).max(if velocity { 0.0 } else { scale });
        assert!(scale > 0.0, "{what}: no friction damping in the test state");
        for j in 0..n {
            for col in 0..3 {
                let (mut sp, mut sm) = (s.clone(), s.clone());
                let (vp, vm) = if velocity { (&mut sp.v, &mut sm.v) } else { (&mut sp.x, &mut sm.x) };
                *comp_mut(vp, j, col) += step;
                *comp_mut(vm, j, col) -= step;
                let (fp, fm) = (flat(&coupled_loads(c, p, &sp).f), flat(&coupled_loads(c, p, &sm).f));
                for r in 0..3 * n {
                    let fd = (fp[r] - fm[r]) / (2.0 * step);
                    assert_close!(
                        matrix[r * 3 * n + 3 * j + col],
                        fd,
                        1e-6 * scale,
                        "{what}: d{} row {r} col {}",
                        if velocity { "v" } else { "x" },
                        3 * j + col
                    );
                }
            }
        }
    }
}

/// `n` particles of random masses with radius 1 cm, positions from `place`.
fn particles(n: usize, rng: &mut Rng, place: impl Fn(&mut Rng) -> DVec3) -> (Particles, State) {
    let mut b = WorldBuilder::new();
    for _ in 0..n {
        let x = place(rng);
        let mass = rng.range(0.01, 0.1);
        let _ = b.add_particle(x, DVec3::ZERO, mass, 0.01);
    }
    (b.particles, b.state)
}

/// One particle 4 mm into the floor: force k δ n with k = κ m / h², by hand.
#[test]
fn coupled_floor_spring_pushes_with_kappa_m_over_h_squared() {
    let mut b = WorldBuilder::new();
    let _ = b.add_particle(DVec3::new(0.0, 0.006, 0.0), DVec3::ZERO, 0.02, 0.01);
    let mut floor = Collider::new("floor", Shape::Plane { point: DVec3::ZERO, normal: DVec3::Y }, Surface::default());
    let loads = coupled_loads(&mut floor, &b.particles, &b.state);
    let k = COUPLED_STIFFNESS * 0.02 / (H * H);
    assert_rel!(coupled_stiffness(COUPLED_STIFFNESS, 1.0 / 0.02, H), k, 1e-15, "stiffness (N/m)");
    assert_rel!(loads.f.y[0], k * 0.004, 1e-12, "normal force (N)");
    assert_eq!((loads.f.x[0], loads.f.z[0]), (0.0, 0.0), "no tangential force");
}

#[test]
fn coupled_collider_jacobians_match_finite_differences() {
    let mut rng = Rng::new(41);
    let surface = Surface::default();
    // Particles within their radius of a plane, of a ball and of a box's faces.
    let cases = [
        (Shape::Plane { point: DVec3::ZERO, normal: DVec3::new(0.3, 1.0, -0.2).normalize() }, "plane"),
        (Shape::Sphere { center: DVec3::ZERO, radius: 0.2 }, "ball"),
        (
            Shape::Box {
                center: DVec3::ZERO,
                half: DVec3::new(0.3, 0.2, 0.25),
                rotation: DQuat::from_axis_angle(DVec3::new(1.0, 2.0, 0.5).normalize(), 0.7),
            },
            "box",
        ),
    ];
    for (shape, what) in cases {
        let mut c = Collider::new(what, shape.clone(), surface);
        let (p, s) = particles(6, &mut rng, |rng| {
            // A point on the surface, then 1–9 mm inside the particle's 1 cm radius.
            let dir = DVec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)).normalize();
            let on = match &shape {
                Shape::Plane { normal, .. } => {
                    DVec3::new(rng.range(-1.0, 1.0), 0.0, rng.range(-1.0, 1.0)).reject_from(*normal)
                }
                Shape::Sphere { radius, .. } => dir * *radius,
                Shape::Box { half, rotation, .. } => {
                    // The middle of a face, away from its edges.
                    let axis = [DVec3::X, DVec3::Y, DVec3::Z][rng.below(3)]
                        * if rng.range(-1.0, 1.0) < 0.0 { -1.0 } else { 1.0 };
                    let spread = DVec3::new(rng.range(-0.5, 0.5), rng.range(-0.5, 0.5), rng.range(-0.5, 0.5)) * *half;
                    *rotation * (axis * *half + spread.reject_from(axis))
                }
                Shape::Mesh(_) => unreachable!(),
            };
            let (_, n) = Collider::new("probe", shape.clone(), surface).distance(on + dir * 1e-9, 0.0);
            on + n * rng.range(0.001, 0.009)
        });
        check_jacobian(&mut c, &p, &s, what);
    }
}

#[test]
fn coupled_rigid_contact_jacobians_match_finite_differences() {
    let mut rng = Rng::new(7);
    for shape in [RigidShape::Sphere { radius: 0.15 }, RigidShape::Box { half: DVec3::new(0.2, 0.15, 0.25) }] {
        let mut b = WorldBuilder::new();
        let q = DQuat::from_axis_angle(DVec3::new(0.2, 1.0, 0.4).normalize(), 0.5);
        let body = RigidBody {
            shape,
            mass: 2.0,
            position: DVec3::new(0.1, 0.2, -0.1),
            orientation: q,
            ..RigidBody::default()
        };
        let handle = body.build(&mut b, "body").expect("body");
        let centre = b.state.x.get(handle.particle);
        for _ in 0..6 {
            let local = match shape {
                RigidShape::Sphere { radius } => {
                    let dir = DVec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)).normalize();
                    dir * (radius + rng.range(0.001, 0.009))
                }
                RigidShape::Box { half } => {
                    let axis = [DVec3::X, DVec3::Y, DVec3::Z][rng.below(3)]
                        * if rng.range(-1.0, 1.0) < 0.0 { -1.0 } else { 1.0 };
                    let spread = DVec3::new(rng.range(-0.5, 0.5), rng.range(-0.5, 0.5), rng.range(-0.5, 0.5)) * half;
                    axis * half + spread.reject_from(axis) + axis * rng.range(0.001, 0.009)
                }
            };
            let mass = rng.range(0.01, 0.1);
            let _ = b.add_particle(centre + q * local, DVec3::ZERO, mass, 0.01);
        }
        let mut c = RigidContact::new("contact", b.topology.rigids.clone(), Surface::default(), Vec::new());
        check_jacobian(&mut c, &b.particles, &b.state, &format!("{shape:?}"));
        // Equal and opposite forces; the torque on the body is that of its forces at
        // the contact points, so the total angular momentum rate about the origin
        // (Σ x × f + τ) vanishes when all forces act along the normals through the
        // contact points: checked as Σ f = 0 here.
        let loads = coupled_loads(&mut c, &b.particles, &b.state);
        let total: DVec3 = (0..b.state.len()).map(|i| loads.f.get(i)).sum();
        let scale = (0..b.state.len()).map(|i| loads.f.get(i).length()).fold(0.0, f64::max);
        assert_vec_close!(total, DVec3::ZERO, 1e-12 * scale, "{shape:?}: total force");
    }
}

/// 000's deformable cube: 9³ particles, 0.729 kg, 2 cm spacing, linear springs of
/// 1000 N/m along the axes and across faces and body diagonals, on the floor; with
/// a 5 kg box of the same footprint released 5 mm above when `weight`.
fn lattice_scene(kind: IntegratorKind, dt: f64, weight: bool) -> (World, Vec<usize>, Option<usize>) {
    let mut b = WorldBuilder::new();
    let n = 9;
    let (spacing, radius) = (0.02, 0.002);
    let springs = SpringParams::linear(1000.0, 0.1);
    let lattice = Lattice {
        n: [n; 3],
        spacing,
        origin: DVec3::new(0.0, radius, 0.0),
        mass: 0.729,
        structural: springs,
        shear: Some(springs),
        bend: None,
        radius,
    };
    let h = lattice.build(&mut b, "jelly").expect("lattice");
    let top: Vec<usize> = (0..n * n).map(|c| h.particle(c % n, n - 1, c / n)).collect();
    let side = spacing * (n - 1) as f64;
    let body = weight.then(|| {
        let half = side / 2.0;
        let weight = RigidBody {
            shape: RigidShape::Box { half: DVec3::splat(half) },
            mass: 5.0,
            position: DVec3::new(half, radius + side + radius + half + 0.005, half),
            ..RigidBody::default()
        };
        weight.build(&mut b, "weight").expect("weight").particle
    });
    let floor = Collider::new(
        "floor",
        Shape::Plane { point: DVec3::ZERO, normal: DVec3::Y },
        Surface { restitution: 0.0, friction: 0.5 },
    );
    let mut particle_floor = floor.clone();
    particle_floor.only = Some((0..b.particle_count()).map(|i| b.topology.rigid_of(i).is_none()).collect());
    b.add_constraint(particle_floor);
    if weight {
        b.add_constraint(RigidContact::new(
            "contact",
            b.topology.rigids.clone(),
            Surface { restitution: 0.0, friction: 0.3 },
            vec![floor],
        ));
    }
    b.add_force(Gravity::default());
    b.add_force(AirDrag { rate: 4.0 });
    let params = SimParams { dt, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 };
    (b.build(params).expect("world"), top, body)
}

fn mean_height(w: &World, top: &[usize]) -> f64 {
    top.iter().map(|&i| w.state.x.y[i]).sum::<f64>() / top.len() as f64
}

/// Runs for `seconds`, returning the largest total energy seen.
fn settle(w: &mut World, seconds: f64) -> f64 {
    let steps = (seconds / w.params().dt).round() as u64;
    let mut most = w.metrics().total;
    for _ in 0..steps {
        w.step().expect("step");
        most = most.max(w.metrics().total);
    }
    most
}

/// The lattice alone settles under its weight with implicit Euler at 5 ms where it
/// does with symplectic Euler at 0.1 ms, less the coupled floor springs' own give
/// under the weight each bottom particle carries, δ = F h² / (κ m) (≈ 2.2e-5 m);
/// within 10 % of δ. Before the floor was coupled into the solve, implicit Euler
/// let the lattice sink by 1 cm.
#[test]
fn lattice_rests_on_the_floor_under_implicit_euler_as_under_a_small_explicit_step() {
    let (mut explicit, top, _) = lattice_scene(IntegratorKind::SymplecticEuler, 1e-4, false);
    let rest = mean_height(&explicit, &top);
    let _ = settle(&mut explicit, 1.0);
    let (mut implicit, _, _) = lattice_scene(IntegratorKind::ImplicitEuler, H, false);
    let _ = settle(&mut implicit, 1.0);
    let (he, hi) = (mean_height(&explicit, &top), mean_height(&implicit, &top));
    assert!(rest - he > 5e-5, "the explicit lattice should sag measurably: {:.3e} m", rest - he);
    let weight = 0.729 * -Gravity::default().g.y;
    let give = weight / 81.0 / coupled_stiffness(COUPLED_STIFFNESS, 1.0 / implicit.particles.mass[0], H);
    assert_close!(hi, he - give, 0.1 * give, "top-face height, implicit against explicit less the floor's give (m)");
}

/// 000's 5 kg cube dropped 5 mm onto the lattice, implicit Euler at 5 ms, 4 s: the
/// total energy never rises above its start (1e-3 J), the lattice ends as
/// compressed as under symplectic Euler at 0.1 ms after 1 s (top face within 2e-4 m;
/// the compression is about 2.3 mm), and the box comes to rest (below 1 mm/s; the
/// lattice's top edges push its edges diagonally and the viscous friction of the
/// solve lets it creep about 1.5 mm sideways first).
#[test]
fn heavy_box_rests_on_the_lattice_under_implicit_euler() {
    let (mut explicit, top, _) = lattice_scene(IntegratorKind::SymplecticEuler, 1e-4, true);
    let rest = mean_height(&explicit, &top);
    let _ = settle(&mut explicit, 1.0);
    let (mut implicit, _, body) = lattice_scene(IntegratorKind::ImplicitEuler, H, true);
    let start = implicit.metrics().total;
    let most = settle(&mut implicit, 4.0);
    assert!(most <= start + 1e-3, "total energy rose from {start:.4} J to {most:.4} J");
    let (he, hi) = (mean_height(&explicit, &top), mean_height(&implicit, &top));
    assert!(rest - he > 1e-3, "the box should compress the lattice: {:.3e} m", rest - he);
    assert_close!(hi, he, 2e-4, "top-face height under the box, implicit against explicit (m)");
    let v = implicit.state.v.get(body.expect("box"));
    assert!(v.length() < 1e-3, "the box still moves at {v} m/s");
}

/// Two 4³ jelly cubes (0.3 kg, 5 cm spacing, 4000 N/m springs along axes and
/// diagonals) stacked on the floor with a 2 mm gap, touching through the contact
/// stage (deformable against deformable).
fn stack(kind: IntegratorKind, dt: f64) -> (World, Vec<usize>) {
    let mut b = WorldBuilder::new();
    let springs = SpringParams::linear(4000.0, 2.0);
    let mut upper_bottom = Vec::new();
    for (k, y) in [0.01, 0.18].into_iter().enumerate() {
        let lattice = Lattice {
            n: [4; 3],
            spacing: 0.05,
            origin: DVec3::new(-0.075, y, -0.075),
            mass: 0.3,
            structural: springs,
            shear: Some(springs),
            bend: None,
            radius: 0.0,
        };
        let h = lattice.build(&mut b, &format!("cube{k}")).expect("lattice");
        if k == 1 {
            upper_bottom = (0..16).map(|c| h.particle(c % 4, 0, c / 4)).collect();
        }
    }
    b.add_constraint(Collider::new(
        "floor",
        Shape::Plane { point: DVec3::ZERO, normal: DVec3::Y },
        Surface { restitution: 0.0, friction: 0.5 },
    ));
    b.add_force(Gravity::default());
    b.add_force(AirDrag { rate: 2.0 });
    let params = SimParams { dt, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 };
    (b.build(params).expect("world"), upper_bottom)
}

/// The upper cube of a two-cube stack settles on the lower one, under implicit
/// Euler at 5 ms (contacts held as springs in the solve), where symplectic Euler at
/// 0.2 ms puts it: the upper cube's bottom face within 1e-4 m (the contact springs'
/// give under the cube's weight is about 1e-5 m; the lower cube is compressed by
/// about 2 mm), both at rest.
#[test]
fn jelly_stack_settles_under_implicit_euler_as_under_a_small_explicit_step() {
    let (mut explicit, bottom) = stack(IntegratorKind::SymplecticEuler, 2e-4);
    let start = mean_height(&explicit, &bottom);
    let _ = settle(&mut explicit, 2.0);
    let (mut implicit, _) = stack(IntegratorKind::ImplicitEuler, H);
    let _ = settle(&mut implicit, 2.0);
    let (he, hi) = (mean_height(&explicit, &bottom), mean_height(&implicit, &bottom));
    assert!(start - he > 1e-3, "the upper cube should have come down: {:.3e} m", start - he);
    assert_close!(hi, he, 1e-4, "the upper cube's bottom face, implicit against explicit (m)");
    for (w, what) in [(&explicit, "explicit"), (&implicit, "implicit")] {
        let fastest = (0..w.state.len()).map(|i| w.state.v.get(i).length()).fold(0.0, f64::max);
        assert!(fastest < 1e-3, "{what}: a particle still moves at {fastest:.3e} m/s");
    }
}

/// The deformable contact springs push the two sides of a stencil apart with
/// weights summing to +1 and −1 (no net force), and their Jacobian is
/// translation-invariant (each block column sums to zero over the stencil) and
/// symmetric.
#[test]
fn contact_springs_exchange_equal_and_opposite_forces() {
    let (mut w, _) = stack(IntegratorKind::ImplicitEuler, H);
    let _ = settle(&mut w, 0.5);
    let n = w.state.len();
    let mut loads = Loads::zeros(n);
    w.contacts.add_coupled_forces(&w.particles, &w.state, H, &mut loads);
    let total: DVec3 = (0..n).map(|i| loads.f.get(i)).sum();
    let largest = (0..n).map(|i| loads.f.get(i).length()).fold(0.0, f64::max);
    assert!(largest > 0.0, "no contact spring acts on the resting stack");
    assert_vec_close!(total, DVec3::ZERO, 1e-12 * largest, "total contact-spring force");
    let mut jac = DenseJacobian::new(n);
    w.contacts.add_coupled_jacobian(&w.particles, &w.state, H, &mut jac);
    let scale = jac.dfdx.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    for r in 0..3 * n {
        for c in 0..3 {
            let column_sum: f64 = (0..n).map(|j| jac.dfdx[r * 3 * n + 3 * j + c]).sum();
            assert!(column_sum.abs() <= 1e-9 * scale, "row {r}: blocks sum to {column_sum:e} against a translation");
        }
        for col in 0..3 * n {
            let (a, b) = (jac.dfdx[r * 3 * n + col], jac.dfdx[col * 3 * n + r]);
            assert!((a - b).abs() <= 1e-12 * scale, "∂f/∂x not symmetric at ({r}, {col}): {a:e} vs {b:e}");
        }
    }
}
