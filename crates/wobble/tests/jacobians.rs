//! Every force term's Jacobian against finite differences of the engine's own
//! force evaluation, assembled as a whole matrix on a randomly deformed body.
//!
//! Each body is made by the library's builders (as a scene would make it), its
//! particles displaced at random, and each of its force terms asked for its
//! blocks (`ForceTerm::add_jacobian` into a dense 3n × 3n matrix) and for its
//! forces (`ForceTerm::add_forces`) at positions and velocities moved by ±h in one
//! coordinate at a time: every column of ∂f/∂x and ∂f/∂v by central differences.
//! The tolerance is 1e-6 of the largest entry of the matrix: central differences
//! in position have a truncation error of order h² (h is 1e-6 of the body's
//! spacing) and rounding of order ε |f| / h, both far below it; the forces are
//! linear in the velocities, whose differences are exact but for rounding.
//!
//! Where a term's blocks are documented to leave a part out, the set-up makes
//! that part vanish or the reference leaves it out the same way:
//! - springs leave out the damping's dependence on position (Baraff–Witkin), so
//!   ∂f/∂x is taken at zero velocity, where it is zero; ∂f/∂v at a moving state
//!   (every force here is linear in the velocities);
//! - the hinges of `Bending` add the Gauss–Newton part −k ∇θ ∇θᵀ, exact where
//!   θ = θ̄, so they are built with the deformed shape as their rest shape;
//! - generalized springs add the blocks of their stretch and linear damping only
//!   (the bend couples and torques are taken explicitly), so the reference is the
//!   force of the same body built with plain springs.

mod support;

use glam::{DQuat, DVec3};
use support::{DenseJacobian, Rng, comp_mut};
use wobble::build::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::build::grid::{ElasticGrid, GridModel};
use wobble::build::jelly::JellyCube;
use wobble::build::ring::Ring;
use wobble::build::sphere::SphereMesh;
use wobble::build::twolayer::PressureSphere;
use wobble::force::bending::Bending;
use wobble::force::pointer::Grab;
use wobble::force::pressure::PressureJacobian;
use wobble::force::{
    AirDrag, CubicLaw, DragSpring, DragSpringParams, ForceContext, ForceTerm, GeneralizedParams, Gravity, JacobianSink,
    Loads, Membrane, Pressure, SpringLaw, SpringNetwork, SpringParams,
};
use wobble::model::{Particles, State};

/// Step of the differences in velocity, m/s. Every force here is linear in the
/// velocities, so its differences are exact at any step and a large one keeps
/// rounding (of order ε |f| / step, the elastic forces of a deformed body being
/// far larger than the damping) small; 1e-8 m/s, as for positions, left errors of
/// 6e-6 of the largest entry on the cubic springs.
const H_V: f64 = 1e-4;

/// Forces of `term` at `state`, flat (3i + r).
fn forces(term: &mut dyn ForceTerm, particles: &Particles, state: &State) -> Vec<f64> {
    let mut out = Loads::zeros(state.len());
    term.add_forces(&ForceContext { particles, state, t: 0.0 }, &mut out);
    (0..state.len()).flat_map(|i| out.f.get(i).to_array()).collect()
}

/// Checks `term`'s blocks at `still` (∂f/∂x) and `moving` (∂f/∂v) against central
/// differences of the forces of `reference` (`None`: the term itself; otherwise
/// the same body without a part the term's blocks leave out), with a step of `h`
/// (m) in positions and [`H_V`] in velocities. Returns the largest entry, for the caller to make sure the term
/// had something to check.
fn check(
    label: &str,
    term: &mut dyn ForceTerm,
    reference: Option<&mut dyn ForceTerm>,
    p: &Particles,
    still: &State,
    moving: &State,
    h: f64,
) -> f64 {
    assert!(term.has_jacobian(), "{label}: says it has no Jacobian");
    let n = still.len();
    let (mut at_still, mut at_moving) = (DenseJacobian::new(n), DenseJacobian::new(n));
    term.add_jacobian(&ForceContext { particles: p, state: still, t: 0.0 }, &mut at_still);
    term.add_jacobian(&ForceContext { particles: p, state: moving, t: 0.0 }, &mut at_moving);
    let reference: &mut dyn ForceTerm = match reference {
        Some(r) => r,
        None => term,
    };
    let (mut fd_x, mut fd_v) = (vec![0.0; 9 * n * n], vec![0.0; 9 * n * n]);
    for j in 0..n {
        for c in 0..3 {
            let col = 3 * j + c;
            let (mut sp, mut sm) = (still.clone(), still.clone());
            *comp_mut(&mut sp.x, j, c) += h;
            *comp_mut(&mut sm.x, j, c) -= h;
            let (fp, fm) = (forces(reference, p, &sp), forces(reference, p, &sm));
            let (mut vp, mut vm) = (moving.clone(), moving.clone());
            *comp_mut(&mut vp.v, j, c) += H_V;
            *comp_mut(&mut vm.v, j, c) -= H_V;
            let (gp, gm) = (forces(reference, p, &vp), forces(reference, p, &vm));
            for r in 0..3 * n {
                fd_x[r * 3 * n + col] = (fp[r] - fm[r]) / (2.0 * h);
                fd_v[r * 3 * n + col] = (gp[r] - gm[r]) / (2.0 * H_V);
            }
        }
    }
    let largest = |m: &[f64]| m.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    for (what, blocks, fd) in [("∂f/∂x", &at_still.dfdx, &fd_x), ("∂f/∂v", &at_moving.dfdv, &fd_v)] {
        let scale = largest(fd).max(largest(blocks));
        let (mut worst, mut at) = (0.0f64, 0);
        for (k, (a, b)) in blocks.iter().zip(fd.iter()).enumerate() {
            if (a - b).abs() > worst {
                (worst, at) = ((a - b).abs(), k);
            }
        }
        assert!(
            worst <= 1e-6 * scale,
            "{label}: {what} entry ({}, {}) is {:e}, central differences {:e} (off by {worst:e}, {:.1e} of the largest entry {scale:e})",
            at / (3 * n),
            at % (3 * n),
            blocks[at],
            fd[at],
            worst / scale
        );
    }
    largest(&fd_x).max(largest(&fd_v))
}

/// A builder's state displaced at random by up to `amp` (m) per coordinate, and
/// the same with random velocities of up to `speed` (m/s).
fn deformed(b: &WorldBuilder, amp: f64, speed: f64, seed: u64) -> (State, State) {
    let mut rng = Rng::new(seed);
    let mut still = b.state.clone();
    for i in 0..still.len() {
        still.x.add(i, rng.vec3(amp));
        still.v.set(i, DVec3::ZERO);
    }
    let mut moving = still.clone();
    for i in 0..moving.len() {
        moving.v.set(i, rng.vec3(speed));
    }
    (still, moving)
}

/// Every term of the builder checked against its own forces.
fn check_every_term(label: &str, b: &mut WorldBuilder, still: &State, moving: &State, h: f64) {
    // The builder keeps its springs as a set; the world's spring term is made
    // from it when the world is built, as here.
    if !b.springs.is_empty() {
        let mut network = SpringNetwork::new(&b.springs, still.len()).expect("valid springs");
        let name = format!("{label}, the spring network");
        let largest = check(&name, &mut network, None, &b.particles, still, moving, h);
        assert!(largest > 0.0, "{name}: the deformed body gives it nothing to check");
    }
    assert!(!b.forces.is_empty() || !b.springs.is_empty(), "{label}: no force terms");
    for term in &mut b.forces {
        let name = format!("{label}, term `{}`", term.name());
        let gravity = term.name() == "gravity";
        let largest = check(&name, &mut **term, None, &b.particles, still, moving, h);
        assert!(largest > 0.0 || gravity, "{name}: the deformed body gives it nothing to check");
    }
}

/// The thesis's two-layer sphere (level 1), 20 cm across the outer layer.
fn two_layer_sphere() -> WorldBuilder {
    let mut b = WorldBuilder::new();
    PressureSphere {
        radius: 0.2,
        inner_radius: Some(0.16),
        mesh: SphereMesh::Uniform { level: 1 },
        ..PressureSphere::default()
    }
    .build(&mut b, "sphere")
    .unwrap();
    b
}

/// The thesis's two-layer ring of 10 particles a layer.
fn two_layer_ring() -> WorldBuilder {
    let mut b = WorldBuilder::new();
    Ring { radius: 0.2, inner_radius: Some(0.16), count: 10, ..Ring::default() }.build(&mut b, "ring").unwrap();
    b
}

/// A state of the ring deformed at random within its x-y plane.
fn ring_deformed(b: &WorldBuilder, amp: f64, speed: f64, seed: u64) -> (State, State) {
    let (mut still, mut moving) = deformed(b, amp, speed, seed);
    for s in [&mut still, &mut moving] {
        for i in 0..s.len() {
            s.x.z[i] = 0.0;
            s.v.z[i] = 0.0;
        }
    }
    (still, moving)
}

/// An elastic grid of `n` particles of `model`, with every constraint weighted.
fn elastic_grid(n: [usize; 3], model: GridModel) -> WorldBuilder {
    let mut b = WorldBuilder::new();
    ElasticGrid { n, spacing: [0.1, 0.12, 0.09], model, eta_length: 2.0, eta_angle: 1.3, ..ElasticGrid::default() }
        .build(&mut b, "grid")
        .unwrap();
    b
}

#[test]
fn spring_networks_of_every_law_on_a_deformed_cloth() {
    // Structural, shear and bend springs of each law; displacements of up to 30 %
    // of the spacing compress some springs and stretch others. The cubic's
    // Jacobian damping (000's 0.99 on b and d) changes its blocks on purpose and is
    // checked against eq. 9 in tests/cubic.rs; here it is 1 (exact blocks).
    let cubic = CubicLaw::new(500.0, 1.05, 3000.0, 0.95, 1500.0, 1.0).unwrap();
    for (name, law) in [("linear", SpringLaw::Linear), ("stvk", SpringLaw::StVK), ("cubic", SpringLaw::Cubic(cubic))] {
        let s = SpringParams::linear(500.0, 0.4).with_law(law);
        let mut b = WorldBuilder::new();
        Cloth { nx: 4, ny: 3, spacing: 0.01, structural: s, shear: Some(s), bend: Some(s), ..Cloth::default() }
            .build(&mut b, "cloth")
            .unwrap();
        let (still, moving) = deformed(&b, 0.003, 0.5, 7);
        check_every_term(&format!("{name} springs"), &mut b, &still, &moving, 1e-8);
    }
}

#[test]
fn membrane_and_hinges_on_a_deformed_cloth() {
    let mut b = WorldBuilder::new();
    Cloth {
        nx: 4,
        ny: 4,
        spacing: 0.02,
        membrane: Some(Membrane::from_young(800.0, 0.3)),
        bend: None,
        ..Cloth::default()
    }
    .build(&mut b, "cloth")
    .unwrap();
    let (still, moving) = deformed(&b, 0.006, 0.5, 11);
    // Hinges over the cloth's triangles, at rest in the deformed shape (see the
    // module docs), with damping.
    let tris = b.topology.triangles.clone();
    b.add_force(Bending::new("cloth", &tris, &still.x, 2e-3, 5e-4));
    check_every_term("membrane and hinges", &mut b, &still, &moving, 1e-8);
}

#[test]
fn elastic_grids_original_and_improved_surface_and_solid() {
    for (name, model) in [("original", GridModel::Original), ("improved", GridModel::IMPROVED)] {
        for n in [[3, 3, 1], [3, 3, 2]] {
            let mut b = elastic_grid(n, model);
            let (still, moving) = deformed(&b, 0.02, 0.5, 5);
            check_every_term(&format!("{name} grid {n:?}"), &mut b, &still, &moving, 1e-7);
        }
    }
}

#[test]
fn pressure_bodies_in_2d_and_3d() {
    // The thesis's two-layer sphere (springs of every kind, the gas of both
    // layers) and ring, squeezed at random.
    let mut b = two_layer_sphere();
    let (still, moving) = deformed(&b, 0.02, 0.5, 3);
    check_every_term("two-layer sphere", &mut b, &still, &moving, 1e-7);
    let mut b = two_layer_ring();
    let (still, moving) = ring_deformed(&b, 0.02, 0.5, 4);
    check_every_term("two-layer ring", &mut b, &still, &moving, 1e-7);
}

#[test]
fn gravity_air_drag_and_the_drag_spring() {
    let mut b = WorldBuilder::new();
    Cloth { nx: 3, ny: 2, ..Cloth::default() }.build(&mut b, "cloth").unwrap();
    // Only the loads below: the cloth's springs are checked above.
    b.forces.clear();
    b.add_force(Gravity::default());
    b.add_force(AirDrag { rate: 0.8 });
    let grab = Grab { particle: 4, cursor: DVec3::new(0.1, 0.2, -0.1), cursor_velocity: DVec3::new(0.0, 1.0, 0.0) };
    b.add_force(DragSpring { params: DragSpringParams { stiffness: 40.0, damping: 3.0 }, grab: Some(grab) });
    let (still, moving) = deformed(&b, 0.003, 0.5, 9);
    check_every_term("loads", &mut b, &still, &moving, 1e-8);
}

#[test]
fn generalized_springs_give_the_blocks_of_their_stretch_and_linear_damping() {
    // A jelly cube of oriented particles with bend and twist laws and angular
    // damping, its particles displaced and turned at random: its blocks are those
    // of the same cube built with plain springs (module docs), checked against the
    // plain cube's forces. That the full springs do bend and twist here is checked
    // too, so the reference is not the same force by accident.
    let full = GeneralizedParams::new(300.0, 0.3, 0.05, 0.03).with_angular_damping(0.01, 0.01);
    let plain = GeneralizedParams::plain(300.0, 0.3);
    let build = |springs| {
        let mut b = WorldBuilder::new();
        JellyCube { n: [2, 2, 3], spacing: 0.05, springs, ..JellyCube::default() }.build(&mut b, "jelly").unwrap();
        b
    };
    let (mut b_full, mut b_plain) = (build(full), build(plain));
    let (mut still, mut moving) = deformed(&b_full, 0.01, 0.5, 13);
    let mut rng = Rng::new(14);
    for i in 0..still.len() {
        let q = DQuat::from_scaled_axis(rng.vec3(0.4));
        still.q[i] = q;
        moving.q[i] = q;
        moving.w.set(i, rng.vec3(2.0));
    }
    let particles = b_full.particles.clone();
    assert_eq!(b_full.forces.len(), b_plain.forces.len());
    for (term, plain) in b_full.forces.iter_mut().zip(b_plain.forces.iter_mut()) {
        let label = format!("jelly cube, term `{}`", term.name());
        check(&label, &mut **term, Some(&mut **plain), &particles, &still, &moving, 1e-8);
        let (f_full, f_plain) = (forces(&mut **term, &particles, &still), forces(&mut **plain, &particles, &still));
        let apart = f_full.iter().zip(&f_plain).fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
        if term.name() != "gravity" {
            assert!(apart > 1e-3, "{label}: bend and twist add no force here ({apart:e} N)");
        }
    }
}

/// A dense sink that asks for the definite approximation (implicit Euler's
/// fallback when the exact matrix is indefinite).
struct Definite(DenseJacobian);

impl JacobianSink for Definite {
    fn add_dfdx(&mut self, i: usize, j: usize, block: glam::DMat3) {
        self.0.add_dfdx(i, j, block);
    }
    fn add_dfdv(&mut self, i: usize, j: usize, block: glam::DMat3) {
        self.0.add_dfdv(i, j, block);
    }
    fn definite(&self) -> bool {
        true
    }
}

/// Eigenvalues of the symmetric part of the dense m × m matrix `a`, by cyclic
/// Jacobi rotations until the off-diagonal mass is below 1e-22 of the whole.
fn symmetric_eigenvalues(a: &[f64], m: usize) -> Vec<f64> {
    let mut s: Vec<f64> = (0..m * m).map(|k| 0.5 * (a[k] + a[(k % m) * m + k / m])).collect();
    let total: f64 = s.iter().map(|v| v * v).sum();
    for _ in 0..100 {
        let off: f64 = (0..m)
            .flat_map(|i| (0..m).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| s[i * m + j].powi(2))
            .sum();
        if off <= 1e-22 * total {
            break;
        }
        for p in 0..m {
            for q in p + 1..m {
                let apq = s[p * m + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = 0.5 * (s[q * m + q] - s[p * m + p]) / apq;
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let (c, sn) = (1.0 / (t * t + 1.0).sqrt(), t / (t * t + 1.0).sqrt());
                for k in 0..m {
                    let (akp, akq) = (s[k * m + p], s[k * m + q]);
                    s[k * m + p] = c * akp - sn * akq;
                    s[k * m + q] = sn * akp + c * akq;
                }
                for k in 0..m {
                    let (apk, aqk) = (s[p * m + k], s[q * m + k]);
                    s[p * m + k] = c * apk - sn * aqk;
                    s[q * m + k] = sn * apk + c * aqk;
                }
            }
        }
    }
    (0..m).map(|i| s[i * m + i]).collect()
}

#[test]
fn symmetric_eigenvalues_of_a_known_matrix() {
    // [[2, 1], [1, 2]] has eigenvalues 1 and 3; a diagonal one its diagonal.
    let mut e = symmetric_eigenvalues(&[2.0, 1.0, 1.0, 2.0], 2);
    e.sort_by(f64::total_cmp);
    assert!((e[0] - 1.0).abs() < 1e-12 && (e[1] - 3.0).abs() < 1e-12, "{e:?}");
    let mut e = symmetric_eigenvalues(&[4.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 2.5], 3);
    e.sort_by(f64::total_cmp);
    assert_eq!(e, vec![-1.0, 2.5, 4.0]);
}

#[test]
fn definite_blocks_are_semi_definite_where_the_exact_ones_are_not() {
    // Implicit Euler asks for a definite ∂f/∂x when the exact system is not
    // positive definite. For each term that can be indefinite — the gas of a
    // squeezed two-layer sphere (exact and local Jacobians) and ring, a deformed
    // elastic grid of either model — −∂f/∂x from the definite blocks must have no
    // eigenvalue below −1e-9 of its largest, while the exact blocks of the same
    // state do have a clearly negative one (so the check is not vacuous).
    let mut cases: Vec<(String, WorldBuilder, State)> = Vec::new();
    for jacobian in [PressureJacobian::Exact, PressureJacobian::Local] {
        let mut b = two_layer_sphere();
        for term in &mut b.forces {
            if let Some(p) = (&mut **term as &mut dyn std::any::Any).downcast_mut::<Pressure>() {
                for surface in &mut p.surfaces {
                    surface.jacobian = jacobian;
                }
            }
        }
        let (still, _) = deformed(&b, 0.03, 0.0, 21);
        cases.push((format!("sphere gas, {jacobian:?}"), b, still));
    }
    let b = two_layer_ring();
    let (still, _) = ring_deformed(&b, 0.03, 0.0, 22);
    cases.push(("ring gas".into(), b, still));
    for (name, model) in [("original", GridModel::Original), ("improved", GridModel::IMPROVED)] {
        let b = elastic_grid([3, 3, 2], model);
        let (still, _) = deformed(&b, 0.03, 0.0, 23);
        cases.push((format!("{name} grid"), b, still));
    }
    for (label, b, still) in &cases {
        let n = still.len();
        for term in b.forces.iter().filter(|t| t.name() != "gravity") {
            let ctx = ForceContext { particles: &b.particles, state: still, t: 0.0 };
            let (mut exact, mut definite) = (DenseJacobian::new(n), Definite(DenseJacobian::new(n)));
            term.add_jacobian(&ctx, &mut exact);
            term.add_jacobian(&ctx, &mut definite);
            let negate = |m: &[f64]| m.iter().map(|v| -v).collect::<Vec<f64>>();
            let lowest = |m: &[f64]| symmetric_eigenvalues(m, 3 * n).into_iter().fold(f64::INFINITY, f64::min);
            let scale = exact.dfdx.iter().fold(0.0f64, |a, b| a.max(b.abs()));
            let (low_exact, low_definite) = (lowest(&negate(&exact.dfdx)), lowest(&negate(&definite.0.dfdx)));
            assert!(
                low_exact < -1e-3 * scale,
                "{label}, `{}`: the exact blocks are not indefinite here ({low_exact:e})",
                term.name()
            );
            assert!(
                low_definite >= -1e-9 * scale,
                "{label}, `{}`: −∂f/∂x from the definite blocks has eigenvalue {low_definite:e} (scale {scale:e})",
                term.name()
            );
        }
    }
}
