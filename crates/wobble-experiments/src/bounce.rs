//! `bounce`: a ball of particles dropped on a floor, for several restitutions.
//!
//! A body falling from rest with its lowest point a height d above the floor hits
//! at speed √(2 g d); the floor reflects the normal velocity scaled by ε, so a point
//! mass climbs back ε² d.
//!
//! A ball of particles (uniform level-2 sphere with a hub, 67 particles) is
//! different: the floor's restitution acts only on the particles that touch it,
//! while the rest of the ball is stopped by its springs, which store the impact and
//! give it back. Its rebound is set by its own elasticity and damping, not by ε — a
//! rubber ball bounces even off sand. The experiment measures both and checks: the
//! point mass follows ε² d; the elastic ball's rebound varies little across ε
//! although ε² varies sixteen-fold; a strongly damped ball rebounds less than the
//! elastic one at every ε.

use std::path::Path;

use glam::DVec3;
use wobble::WorldBuilder;
use wobble::build::sphere::{Ball, SphereMesh};
use wobble::constraint::collider::Surface;
use wobble::constraint::{Collider, Shape};
use wobble::force::{Gravity, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::world::SimParams;

use super::{Experiment, Outcome, write_csv};
use wobble_viz::plot::{Chart, Legend, Series, Style};

/// Registry entry.
pub const EXPERIMENT: Experiment = Experiment {
    name: "bounce",
    title: "rebound height against restitution",
    claim: "a point mass dropped from height d rebounds to ε² d (within 2 %); a ball of particles rebounds by its own elasticity (its rebound varies by less than 10 % of its mean across ε = 0.2..0.8) and internal damping lowers it at every ε",
    run,
};

const RESTITUTIONS: [f64; 4] = [0.2, 0.4, 0.6, 0.8];
const DROP: f64 = 1.0;
const BALL_RADIUS: f64 = 0.1;
const DT: f64 = 2e-5;
const DURATION: f64 = 1.5;
/// Ball spring stiffness, N/m.
const STIFFNESS: f64 = 2.0e4;
/// Damping of the elastic ball and of the damped ball, N s/m.
const DAMPINGS: [f64; 2] = [2.0, 20.0];

/// Centre-of-mass height over time, and the rebound ratio (apex after the first
/// contact above the contact height) / (drop height).
/// `ball`: `None` for a point mass, else the spring damping of the ball, N s/m.
fn drop(restitution: f64, ball: Option<f64>) -> Result<(Vec<(f64, f64)>, f64), String> {
    let mut b = WorldBuilder::new();
    let contact_height = if ball.is_some() { BALL_RADIUS } else { 0.0 };
    let center = DVec3::new(0.0, DROP + contact_height, 0.0);
    if let Some(damping) = ball {
        let ball = Ball {
            center,
            radius: BALL_RADIUS,
            mesh: SphereMesh::Uniform { level: 2 },
            mass: 1.0,
            structural: SpringParams::linear(STIFFNESS, damping),
            spokes: SpringParams::linear(STIFFNESS, damping),
            particle_radius: 0.0,
        };
        ball.build(&mut b, "ball").map_err(|e| e.to_string())?;
    } else {
        b.add_particle(center, DVec3::ZERO, 1.0, 0.0);
    }
    b.add_force(Gravity::default());
    b.add_constraint(Collider::new(
        "floor",
        Shape::Plane { point: DVec3::ZERO, normal: DVec3::Y },
        Surface { restitution, friction: 0.0 },
    ));
    let mut w = b
        .build(SimParams { dt: DT, integrator: IntegratorKind::SymplecticEuler, ..SimParams::default() })
        .map_err(|e| e.to_string())?;
    let com = |w: &wobble::World| {
        let m = w.particles.total_mass();
        (0..w.state.len()).map(|i| w.particles.mass[i] * w.state.x.get(i).y).sum::<f64>() / m
    };
    let mut trace = Vec::new();
    let (mut touched, mut rising, mut apex) = (false, false, f64::NEG_INFINITY);
    let steps = (DURATION / DT) as u64;
    for k in 0..steps {
        w.step().map_err(|e| e.to_string())?;
        let (y, vy) = (com(&w), w.metrics().momentum.y);
        if k % 100 == 0 {
            trace.push((w.time(), y));
        }
        if !touched && (0..w.state.len()).any(|i| w.state.x.get(i).y <= 1e-12) {
            touched = true;
        }
        if touched && vy > 0.0 {
            rising = true;
        }
        if rising {
            apex = apex.max(y);
            if vy < 0.0 {
                break;
            }
        }
    }
    Ok((trace, (apex - contact_height) / DROP))
}

fn run(dir: &Path) -> Result<Outcome, String> {
    let mut rows = Vec::new();
    let mut table = String::from(
        "| ε | ε² | point mass | elastic ball (c = 2 N s/m) | damped ball (c = 20 N s/m) |\n|---|---|---|---|---|\n",
    );
    let mut traces = Chart::new("Elastic ball: centre of mass after release", "time (s)", "centre-of-mass height (m)");
    let (mut point_pts, mut elastic_pts, mut damped_pts, mut ideal) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut point_ok, mut damping_lowers) = (true, true);
    for &e in &RESTITUTIONS {
        let (_, point) = drop(e, None)?;
        let (trace, elastic) = drop(e, Some(DAMPINGS[0]))?;
        let (_, damped) = drop(e, Some(DAMPINGS[1]))?;
        let e2 = e * e;
        point_ok &= ((point - e2) / e2).abs() <= 0.02;
        damping_lowers &= damped < elastic;
        table.push_str(&format!("| {e} | {e2:.3} | {point:.4} | {elastic:.4} | {damped:.4} |\n"));
        rows.push(vec![e, e2, point, elastic, damped]);
        point_pts.push((e, point));
        elastic_pts.push((e, elastic));
        damped_pts.push((e, damped));
        traces = traces.with(Series::new(format!("ε = {e}"), trace, Style::Line));
    }
    let values: Vec<f64> = elastic_pts.iter().map(|p| p.1).collect();
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let spread =
        values.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b)) - values.iter().fold(f64::INFINITY, |a, &b| a.min(b));
    let elastic_ok = spread <= 0.10 * mean;
    for k in 0..=20 {
        let e = f64::from(k) / 20.0;
        ideal.push((e, e * e));
    }
    write_csv(
        &dir.join("bounce.csv"),
        &["restitution", "ideal", "point_rebound", "elastic_ball_rebound", "damped_ball_rebound"],
        &rows,
    )?;
    Chart::new("Rebound height against restitution", "restitution ε", "rebound height / drop height")
        .legend(Legend::UpperLeft)
        .with(Series::new("ε² (ideal)", ideal, Style::Dashed))
        .with(Series::new("point mass", point_pts, Style::Points))
        .with(Series::new("elastic ball", elastic_pts, Style::LinePoints))
        .with(Series::new("damped ball", damped_pts, Style::LinePoints))
        .save(&dir.join("rebound.png"))?;
    traces.save(&dir.join("trajectories.png"))?;
    let check = |ok: bool| if ok { "holds" } else { "does not hold" };
    let body = format!(
        "Drop height d = {DROP} m (lowest point above the floor), g = 9.81 m/s², symplectic Euler with h = {DT} s, no friction. Balls: radius {BALL_RADIUS} m, 1 kg, 67 particles, edge and spoke springs k = {STIFFNESS:e} N/m. Rebound = highest centre-of-mass height after the first contact, above the contact height, divided by d.\n\n{table}\n- point mass within 2 % of ε²: {}\n- elastic ball rebound spread {spread:.4} against mean {mean:.4} (limit 10 %): {}\n- damped ball below elastic ball at every ε: {}\n",
        check(point_ok),
        check(elastic_ok),
        check(damping_lowers)
    );
    Ok(Outcome {
        finding: None,
        passed: point_ok && elastic_ok && damping_lowers,
        body,
        files: vec!["bounce.csv".into(), "rebound.png".into(), "trajectories.png".into()],
    })
}
