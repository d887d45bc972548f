//! Terzopoulos's elastic grids and the integrity improvements (002, physics notes §7)
//! checked against their mathematics: forces are −∇E and the Jacobian is ∂f/∂x (by
//! central differences), K(r) r reproduces the force, the rest shape in any rigid
//! placement feels no force, internal forces balance (momentum, angular momentum),
//! a stretched cell is pulled back and a compressed one pushed out, and the
//! constraint counts match the stencils.

#[macro_use]
mod support;

use glam::{DQuat, DVec3};
use support::{DenseJacobian, Rng, comp_mut, flat};
use wobble::WorldBuilder;
use wobble::build::grid::{ElasticGrid, GridModel, GridShape};
use wobble::force::grid::{GridElasticity, LengthKind};
use wobble::force::{ForceContext, ForceTerm, Loads, ScalarStiffnessSink};
use wobble::model::{Particles, State};
use wobble::world::SimParams;

/// Every model variant worth checking separately.
fn models() -> Vec<(&'static str, GridModel)> {
    vec![
        ("original", GridModel::Original),
        ("improved", GridModel::IMPROVED),
        ("improved, squared", GridModel::Improved { sdm: true, pillar: true, pillar_metrix: true, squared: true }),
    ]
}

/// A grid, its elasticity term taken out of the builder, and a state perturbed by
/// a seeded random displacement of `amp` × spacing.
fn grid(n: [usize; 3], model: GridModel, amp: f64, seed: u64) -> (GridElasticity, Particles, State) {
    let mut b = WorldBuilder::new();
    let spacing = [0.1, 0.12, 0.09];
    let g = ElasticGrid {
        n,
        spacing,
        model,
        eta_length: 2.0,
        eta_angle: 1.3,
        eta_sdm: 0.7,
        eta_pillar: 0.9,
        ..ElasticGrid::default()
    };
    g.build(&mut b, "g").unwrap();
    let term: Box<dyn std::any::Any> = b.forces.pop().expect("grid term");
    let term = *term.downcast::<GridElasticity>().expect("a GridElasticity");
    let mut state = b.state.clone();
    let mut rng = Rng::new(seed);
    for i in 0..state.len() {
        state.x.add(i, rng.vec3(amp * 0.1));
    }
    (term, b.particles, state)
}

fn forces(term: &mut GridElasticity, p: &Particles, s: &State) -> Vec<f64> {
    let mut out = Loads::zeros(s.len());
    term.add_forces(&ForceContext { particles: p, state: s, t: 0.0 }, &mut out);
    flat(&out.f)
}

fn energy(term: &GridElasticity, p: &Particles, s: &State) -> f64 {
    term.potential_energy(&ForceContext { particles: p, state: s, t: 0.0 })
}

/// f = −∂E/∂x by central differences, every component of every particle, for
/// surfaces and solids of every model. Step 1e-6 m on positions of order 0.1 m;
/// tolerance 1e-6 of the largest force (truncation O(h²) and rounding O(ε E/h)).
#[test]
fn grid_forces_are_the_negative_energy_gradient() {
    for (label, model) in models() {
        for n in [[3, 3, 1], [3, 4, 3]] {
            let (mut term, p, s) = grid(n, model, 0.3, 7);
            let f = forces(&mut term, &p, &s);
            let scale = f.iter().fold(0.0f64, |a, b| a.max(b.abs()));
            assert!(scale > 0.0, "{label} {n:?}: a deformed grid feels no force");
            let h = 1e-6;
            for i in 0..s.len() {
                for c in 0..3 {
                    let (mut sp, mut sm) = (s.clone(), s.clone());
                    *comp_mut(&mut sp.x, i, c) += h;
                    *comp_mut(&mut sm.x, i, c) -= h;
                    let fd = -(energy(&term, &p, &sp) - energy(&term, &p, &sm)) / (2.0 * h);
                    assert_close!(f[3 * i + c], fd, 1e-6 * scale, "{label} {n:?}: particle {i} component {c}");
                }
            }
        }
    }
}

/// ∂f/∂x from `add_jacobian` against central differences of the force.
#[test]
fn grid_jacobian_matches_finite_differences() {
    for (label, model) in models() {
        let (mut term, p, s) = grid([3, 3, 2], model, 0.3, 11);
        let n = s.len();
        let mut jac = DenseJacobian::new(n);
        term.add_jacobian(&ForceContext { particles: &p, state: &s, t: 0.0 }, &mut jac);
        let scale = jac.dfdx.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        let h = 1e-6;
        for j in 0..n {
            for c in 0..3 {
                let (mut sp, mut sm) = (s.clone(), s.clone());
                *comp_mut(&mut sp.x, j, c) += h;
                *comp_mut(&mut sm.x, j, c) -= h;
                let (fp, fm) = (forces(&mut term, &p, &sp), forces(&mut term, &p, &sm));
                for r in 0..3 * n {
                    let fd = (fp[r] - fm[r]) / (2.0 * h);
                    assert_close!(
                        jac.dfdx[r * 3 * n + 3 * j + c],
                        fd,
                        1e-6 * scale,
                        "{label}: row {r}, column {}",
                        3 * j + c
                    );
                }
            }
        }
    }
}

/// Dense scalar K.
struct DenseK {
    n: usize,
    k: Vec<f64>,
}

impl ScalarStiffnessSink for DenseK {
    fn add(&mut self, i: usize, j: usize, value: f64) {
        self.k[i * self.n + j] += value;
    }
}

/// With α frozen, f = −(K ⊗ I₃) r exactly (002 eq. 14); K is symmetric and its rows
/// sum to zero (a translation costs nothing).
#[test]
fn scalar_stiffness_reproduces_the_force() {
    for (label, model) in models() {
        let (mut term, p, s) = grid([3, 4, 3], model, 0.3, 5);
        let n = s.len();
        let mut k = DenseK { n, k: vec![0.0; n * n] };
        assert!(term.add_scalar_stiffness(&ForceContext { particles: &p, state: &s, t: 0.0 }, &mut k));
        let f = forces(&mut term, &p, &s);
        let scale = f.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        for i in 0..n {
            let row_sum: f64 = (0..n).map(|j| k.k[i * n + j]).sum();
            let row_abs: f64 = (0..n).map(|j| k.k[i * n + j].abs()).sum();
            assert_close!(row_sum, 0.0, 1e-12 * row_abs, "{label}: row {i} of K does not sum to zero");
            for j in 0..n {
                assert_close!(
                    k.k[i * n + j],
                    k.k[j * n + i],
                    1e-12 * row_abs,
                    "{label}: K not symmetric at ({i}, {j})"
                );
            }
            let kr: DVec3 = (0..n).map(|j| k.k[i * n + j] * s.x.get(j)).sum();
            for c in 0..3 {
                assert_close!(f[3 * i + c], -kr[c], 1e-10 * scale, "{label}: particle {i} component {c}");
            }
        }
    }
}

/// The rest shape, rotated by an arbitrary rotation and translated, feels no force
/// and stores no energy: the metric sees only dot products of differences.
#[test]
fn rigid_placements_of_the_rest_shape_are_force_free() {
    for (label, model) in models() {
        let (mut term, p, mut s) = grid([3, 3, 3], model, 0.0, 1);
        let rot = DQuat::from_axis_angle(DVec3::new(1.0, 2.0, -0.5).normalize(), 1.1);
        for i in 0..s.len() {
            s.x.set(i, rot * s.x.get(i) + DVec3::new(3.0, -1.0, 2.0));
        }
        let f = forces(&mut term, &p, &s);
        let worst = f.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        assert!(worst < 1e-12, "{label}: force {worst} N on a rigidly moved rest grid");
        assert!(energy(&term, &p, &s).abs() < 1e-20, "{label}: energy at rest");
    }
}

/// Internal forces sum to zero and exert no net torque on any deformed grid, so
/// linear and angular momentum are conserved.
#[test]
fn internal_forces_balance() {
    for (label, model) in models() {
        let (mut term, p, s) = grid([4, 3, 3], model, 0.5, 3);
        let f = forces(&mut term, &p, &s);
        let scale = f.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        let mut total = DVec3::ZERO;
        let mut torque = DVec3::ZERO;
        for i in 0..s.len() {
            let fi = DVec3::new(f[3 * i], f[3 * i + 1], f[3 * i + 2]);
            total += fi;
            torque += s.x.get(i).cross(fi);
        }
        assert!(total.length() < 1e-12 * scale * s.len() as f64, "{label}: net force {total}");
        assert!(torque.length() < 1e-12 * scale * s.len() as f64, "{label}: net torque {torque}");
    }
}

/// A single cell scaled about its centre: stretched (×1.2) every particle is pulled
/// toward the centre, compressed (×0.8) pushed away — for both models (notes §7).
#[test]
fn stretched_cell_pulls_in_and_compressed_cell_pushes_out() {
    for (label, model) in models() {
        for (factor, sign) in [(1.2, -1.0), (0.8, 1.0)] {
            let (mut term, p, mut s) = grid([2, 2, 2], model, 0.0, 1);
            let centre: DVec3 = s.x.iter().sum::<DVec3>() / s.len() as f64;
            for i in 0..s.len() {
                s.x.set(i, centre + (s.x.get(i) - centre) * factor);
            }
            let f = forces(&mut term, &p, &s);
            for i in 0..s.len() {
                let fi = DVec3::new(f[3 * i], f[3 * i + 1], f[3 * i + 2]);
                let out = (s.x.get(i) - centre).normalize();
                assert!(
                    sign * fi.dot(out) > 0.0,
                    "{label}, scale {factor}: particle {i} force {fi} points the wrong way"
                );
            }
        }
    }
}

/// Constraint counts follow the stencils on an L × M × N box:
/// metric (L−1)MN + L(M−1)N + LM(N−1); Metrix 2 per plane square;
/// SDM 4 per cell; Pillar (L−2)MN + L(M−2)N + LM(N−2); original angles
/// (L−1)(M−1)N + (L−1)M(N−1) + L(M−1)(N−1).
#[test]
fn constraint_counts_match_the_stencils() {
    let [l, m, n] = [5usize, 4, 3];
    let count = |term: &GridElasticity, k: LengthKind| term.lengths.kind.iter().filter(|x| **x == k).count();
    let (orig, _, _) = grid([l, m, n], GridModel::Original, 0.0, 1);
    let (imp, _, _) = grid([l, m, n], GridModel::IMPROVED, 0.0, 1);
    let metric = (l - 1) * m * n + l * (m - 1) * n + l * m * (n - 1);
    let squares = (l - 1) * (m - 1) * n + (l - 1) * m * (n - 1) + l * (m - 1) * (n - 1);
    assert_eq!(count(&orig, LengthKind::Metric), metric);
    assert_eq!(orig.angles.p.len(), squares);
    assert_eq!(count(&imp, LengthKind::Metric), metric);
    assert_eq!(count(&imp, LengthKind::Metrix), 2 * squares);
    assert_eq!(count(&imp, LengthKind::Sdm), 4 * (l - 1) * (m - 1) * (n - 1));
    assert_eq!(count(&imp, LengthKind::Pillar), (l - 2) * m * n + l * (m - 2) * n + l * m * (n - 2));
    assert!(imp.angles.p.is_empty(), "the improved model replaces the angles");
    assert_eq!(imp.cells.len(), (l - 1) * (m - 1) * (n - 1));
}

/// The box grid's drawn surface is closed and encloses the box's volume; an
/// ellipsoid grid keeps only the points inside the inscribed ellipsoid.
#[test]
fn grid_surfaces_and_outlines() {
    let mut b = WorldBuilder::new();
    let g = ElasticGrid { n: [4, 3, 5], spacing: [0.1, 0.2, 0.05], ..ElasticGrid::default() };
    g.build(&mut b, "box").unwrap();
    let w = b.build(SimParams::default()).unwrap();
    let body = &w.topology.bodies[0];
    let v = w.topology.enclosed_volume(body, &w.state.x).unwrap();
    assert_close!(v, 0.3 * 0.4 * 0.2, 1e-15, "box grid volume");
    let mut b = WorldBuilder::new();
    let g = ElasticGrid { n: [7, 7, 7], shape: GridShape::Ellipsoid, ..ElasticGrid::default() };
    let h = g.build(&mut b, "ball").unwrap();
    assert!(h.particle(0, 0, 0).is_none() && h.particle(3, 3, 3).is_some() && h.particle(0, 3, 3).is_some());
    let inside = (0..7).flat_map(|a| (0..7).flat_map(move |c| (0..7).map(move |d| (a, c, d)))).filter(|&(a, c, d)| {
        let q = |i: usize| i as f64 / 3.0 - 1.0;
        q(a).powi(2) + q(c).powi(2) + q(d).powi(2) <= 1.0 + 1e-9
    });
    assert_eq!(b.particle_count(), inside.count());
}

#[test]
fn cells_are_counted_against_the_bodys_majority_orientation() {
    // The rest shape: nothing inverted. Its mirror image (x → −x, every cell
    // inverted): nothing against the majority, but mirrored. The mirror image with
    // one corner particle pushed through its cell: the cells that disagree with
    // the rest of the body, and only those.
    let (term, _, rest) = grid([4, 3, 3], GridModel::IMPROVED, 0.0, 1);
    assert_eq!(term.inverted_cells(&rest.x), 0);
    assert_eq!(term.cells_against_majority(&rest.x), (0, false));
    let mut mirror = rest.clone();
    for i in 0..mirror.len() {
        let p = mirror.x.get(i);
        mirror.x.set(i, DVec3::new(-p.x, p.y, p.z));
    }
    let total = term.inverted_cells(&mirror.x);
    assert!(total > 0, "a mirror image inverts every cell");
    assert_eq!(term.cells_against_majority(&mirror.x), (0, true));
    let mut dented = rest.clone();
    // Particle 0 (a corner) pushed through its cell, past the cell's far corner.
    let corner = dented.x.get(0);
    let far = (0..dented.len())
        .map(|i| dented.x.get(i))
        .filter(|p| (*p - corner).cmpgt(DVec3::splat(1e-9)).all())
        .min_by(|a, b| a.distance(corner).total_cmp(&b.distance(corner)))
        .expect("a far corner");
    dented.x.set(0, corner + 3.0 * (far - corner));
    let (against, mirrored) = term.cells_against_majority(&dented.x);
    assert!(!mirrored);
    assert_eq!(against, term.inverted_cells(&dented.x));
    assert!(against >= 1, "pushing a corner through its cell inverts it");
}
