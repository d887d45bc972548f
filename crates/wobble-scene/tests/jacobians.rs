//! Every force term's Jacobian against finite differences of the engine's own force
//! evaluation: for each scene in `scenes/`, the world is built, its state deformed at
//! random (positions by a fraction of the body's spacing, velocities by a fraction
//! of a metre per second), and for every force term that supplies Jacobian blocks,
//! the blocks it adds (∂f/∂x and ∂f/∂v, through the same sink interface the
//! implicit integrators use) are compared with central differences of the term's
//! own `add_forces` — columns for a sample of particles, every row.
//!
//! This checks the matrices the solver actually sees, for every law and body kind
//! the scenes use (spring laws, triangle membranes, grids, pressure, generalized
//! springs, attachments, gravity, air drag), not a force the test writes itself.
//!
//! Three parts of the engine's Jacobians are approximations by design, and are
//! set aside here so that everything else is checked exactly:
//! - the dependence of a spring's damping force on its direction (∂f/∂x of
//!   c ((v_b − v_a)·d̂) d̂): left out, as in Baraff and Witkin; velocities are zero
//!   for the check, so that term vanishes;
//! - the cubic law's Jacobian damping (b and d scaled by `jacobian_damping`, 0.99 by
//!   default, 000 §4.1): set to 1 here, so the cubic's Jacobian must be exact;
//! - generalized springs' bend and twist couples, taken explicitly by the implicit
//!   integrators (`GeneralizedSprings::add_jacobian`): their stiffnesses and
//!   dampings are set to zero here, leaving the stretch and damping blocks, which
//!   must be exact;
//! - gas in surfaces of more than `DENSE_JACOBIAN_MAX_VERTICES` particles
//!   (`PressureJacobian::Local`) leaves out the dense rank-one part of ∂f/∂x: set
//!   to `Exact` here, so that both parts are checked;
//! - dihedral bending (`force::bending`) adds the Gauss–Newton part of ∂f/∂x,
//!   exact where every hinge is at its rest angle: it is checked at the built
//!   state (velocities zero), where that holds, and its ∂f/∂v exactly.

use std::collections::HashMap;
use std::path::PathBuf;

use glam::{DMat3, DVec3};
use wobble::force::{ForceContext, ForceTerm, JacobianSink, Loads};
use wobble::model::{Particles, State};
use wobble_scene::Scene;

fn scenes_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenes")
}

/// Jacobian blocks as the term adds them, summed per (row, column) particle.
#[derive(Default)]
struct Blocks {
    dfdx: HashMap<(usize, usize), DMat3>,
    dfdv: HashMap<(usize, usize), DMat3>,
}

impl JacobianSink for Blocks {
    fn add_dfdx(&mut self, i: usize, j: usize, block: DMat3) {
        *self.dfdx.entry((i, j)).or_insert(DMat3::ZERO) += block;
    }
    fn add_dfdv(&mut self, i: usize, j: usize, block: DMat3) {
        *self.dfdv.entry((i, j)).or_insert(DMat3::ZERO) += block;
    }
}

/// A small deterministic generator in [-1, 1).
fn next(seed: &mut u64) -> f64 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

fn forces(term: &mut dyn ForceTerm, particles: &Particles, state: &State, t: f64) -> Loads {
    let mut out = Loads::zeros(state.len());
    term.add_forces(&ForceContext { particles, state, t }, &mut out);
    out
}

/// Largest deviation of the assembled column blocks of particle `j` from central
/// differences, relative to the largest entry of the assembled matrix, for
/// positions (`by_velocity` false) or velocities.
fn column_error(
    term: &mut dyn ForceTerm,
    ctx: &ForceContext<'_>,
    blocks: &HashMap<(usize, usize), DMat3>,
    j: usize,
    step: f64,
    by_velocity: bool,
) -> (f64, f64) {
    let (particles, state, t) = (ctx.particles, ctx.state, ctx.t);
    let n = state.len();
    let scale = blocks.values().map(|b| b.abs().to_cols_array().into_iter().fold(0.0, f64::max)).fold(0.0, f64::max);
    let mut worst: f64 = 0.0;
    for axis in 0..3 {
        let nudged = |sign: f64| {
            let mut s = state.clone();
            let mut d = DVec3::ZERO;
            d[axis] = sign * step;
            if by_velocity {
                s.v.add(j, d)
            } else {
                s.x.add(j, d)
            }
            s
        };
        let (plus, minus) = (nudged(1.0), nudged(-1.0));
        let (fp, fm) = (forces(term, particles, &plus, t), forces(term, particles, &minus, t));
        for i in 0..n {
            let numeric = (fp.f.get(i) - fm.f.get(i)) / (2.0 * step);
            let assembled = blocks.get(&(i, j)).map_or(DVec3::ZERO, |b| b.col(axis));
            worst = worst.max((numeric - assembled).abs().max_element());
        }
    }
    (worst, scale)
}

#[test]
fn every_force_terms_jacobian_matches_differences_of_its_own_forces() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(scenes_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    let mut checked: HashMap<String, usize> = HashMap::new();
    let mut failures = Vec::new();
    let mut seed = 11u64;
    for path in &paths {
        // The cubic law with its exact Jacobian (see the module docs).
        let text = std::fs::read_to_string(path).unwrap();
        let text = text
            .replace(", jacobian_damping = 0.99", "")
            .replace("law = \"cubic\"", "law = \"cubic\", jacobian_damping = 1.0");
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let scene = Scene::parse(wobble_scene::Source::new(&name, text), scenes_dir()).unwrap();
        let mut world = scene.build().expect("scene builds").world;
        for term in world.forces.iter_mut() {
            // Gas: the exact Jacobian (see the module docs).
            if let Some(p) = (term.as_mut() as &mut dyn std::any::Any).downcast_mut::<wobble::force::Pressure>() {
                for s in &mut p.surfaces {
                    s.jacobian = wobble::force::pressure::PressureJacobian::Exact;
                }
            }
            // Generalized springs: bend and twist couples off (see the module docs).
            let explicit_parts = ["bend", "bend_negative", "twist", "bend_damping", "twist_damping"];
            for p in term.parameters() {
                if explicit_parts.iter().any(|f| p.key.ends_with(&format!(".{f}"))) && term.name() != "springs" {
                    term.set_parameter(&p.key, 0.0).expect("known key");
                }
            }
        }
        let n = world.state.len();
        if n == 0 {
            continue;
        }
        // A deformed state at rest (driven particles included: see the module docs
        // on damping): positions off by up to 10 % of the smallest spacing-like
        // length (the smallest nonzero distance to a neighbour in index order).
        let spacing = (1..n)
            .map(|i| world.state.x.get(i).distance(world.state.x.get(i - 1)))
            .filter(|d| *d > 0.0)
            .fold(f64::INFINITY, f64::min);
        let spacing = if spacing.is_finite() { spacing } else { 0.01 };
        let mut state = world.state.clone();
        let mut built = world.state.clone();
        for i in 0..n {
            built.v.set(i, DVec3::ZERO);
            state.x.add(i, DVec3::new(next(&mut seed), next(&mut seed), next(&mut seed)) * 0.1 * spacing);
            state.v.set(i, DVec3::ZERO);
        }
        let t = 0.1;
        // Columns: up to 12 particles spread over the index range.
        let columns: Vec<usize> = (0..12.min(n)).map(|k| k * n / 12.min(n)).collect();
        let particles = world.particles.clone();
        // The mouse-drag spring as well, grabbing a particle in mid-body towards a
        // cursor 5 cm away.
        let grabbed = n / 2;
        world.drag.grab = Some(wobble::force::pointer::Grab {
            particle: grabbed,
            cursor: state.x.get(grabbed) + DVec3::new(0.03, 0.04, 0.0),
            cursor_velocity: DVec3::ZERO,
        });
        let mut terms: Vec<&mut dyn ForceTerm> =
            world.forces.iter_mut().map(|t| t.as_mut() as &mut dyn ForceTerm).collect();
        terms.push(&mut world.drag);
        for term in terms {
            if !term.has_jacobian() {
                continue;
            }
            let mut blocks = Blocks::default();
            let at = if term.name().starts_with("bending-") { &built } else { &state };
            let ctx = ForceContext { particles: &particles, state: at, t };
            term.add_jacobian(&ctx, &mut blocks);
            let name = term.name().to_owned();
            for &j in &columns {
                for (by_velocity, map, step) in [(false, &blocks.dfdx, 1e-6 * spacing), (true, &blocks.dfdv, 1e-6)] {
                    let (err, scale) = column_error(term, &ctx, map, j, step, by_velocity);
                    // Central differences with a step of 1e-6 of the spacing: a
                    // truncation error of order step² times the third derivative and
                    // a round-off of order 1e-16 |f| / step, both far below 1e-5 of
                    // the matrix's largest entry for smooth forces.
                    if err > 1e-5 * scale.max(1e-9) {
                        failures.push(format!(
                            "{}: term `{name}`, column of particle {j}, ∂f/∂{}: deviation {err:.3e} against a largest entry of {scale:.3e}",
                            path.file_name().unwrap().to_string_lossy(),
                            if by_velocity { "v" } else { "x" }
                        ));
                    }
                }
            }
            *checked.entry(name).or_default() += 1;
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
    let mut names: Vec<_> = checked.keys().cloned().collect();
    names.sort();
    eprintln!("checked: {names:?}");
    for needed in
        ["springs", "gravity", "air_drag", "cloth.membrane", "attach-1", "pressure-sphere", "jelly", "improved", "drag"]
    {
        assert!(checked.contains_key(needed), "no scene exercised `{needed}`: {names:?}");
    }
}
