//! `bounce`: a ball of particles dropped on a floor, for several restitutions.
//!
//! A body falling from rest with its lowest point a height d above the floor hits
//! at speed √(2 g d); the floor reflects the normal velocity scaled by ε, so a point
//! mass climbs back ε² d. The ball here is a stiff sphere of particles (uniform
//! level-2 sphere with a hub, 67 particles); its particles reach the floor nearly
//! together, so its centre of mass should also rebound close to ε² d, minus what
//! the impact leaves in vibration.

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
use crate::plot::{Chart, Series, Style};

/// Registry entry.
pub const EXPERIMENT: Experiment = Experiment {
    name: "bounce",
    title: "rebound height against restitution",
    claim: "a body dropped from height d rebounds to ε² d: within 2 % for a point mass, within 10 % for a stiff ball of particles",
    run,
};

const RESTITUTIONS: [f64; 4] = [0.2, 0.4, 0.6, 0.8];
const DROP: f64 = 1.0;
const BALL_RADIUS: f64 = 0.1;
const DT: f64 = 2e-5;
const DURATION: f64 = 1.5;

/// Centre-of-mass height over time, and the rebound ratio (apex after the first
/// contact above the contact height) / (drop height).
fn drop(restitution: f64, ball: bool) -> Result<(Vec<(f64, f64)>, f64), String> {
    let mut b = WorldBuilder::new();
    let contact_height = if ball { BALL_RADIUS } else { 0.0 };
    let center = DVec3::new(0.0, DROP + contact_height, 0.0);
    if ball {
        let ball = Ball {
            center,
            radius: BALL_RADIUS,
            mesh: SphereMesh::Uniform { level: 2 },
            mass: 1.0,
            structural: SpringParams::linear(2.0e4, 2.0),
            spokes: SpringParams::linear(2.0e4, 2.0),
            particle_radius: 0.0,
        };
        ball.build(&mut b, "ball").map_err(|e| e.to_string())?;
    } else {
        b.add_particle(center, DVec3::ZERO, 1.0, 0.0);
    }
    b.add_force(Gravity::default());
    b.add_constraint(Collider::new(
        "floor",
        Shape::Plane {
            point: DVec3::ZERO,
            normal: DVec3::Y,
        },
        Surface {
            restitution,
            friction: 0.0,
        },
    ));
    let mut w = b
        .build(SimParams {
            dt: DT,
            integrator: IntegratorKind::SymplecticEuler,
            ..SimParams::default()
        })
        .map_err(|e| e.to_string())?;
    let com = |w: &wobble::World| {
        let m = w.particles.total_mass();
        (0..w.state.len())
            .map(|i| w.particles.mass[i] * w.state.x.get(i).y)
            .sum::<f64>()
            / m
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
        "| ε | ε² | point mass rebound / d | ball rebound / d | ball / ε² |\n|---|---|---|---|---|\n",
    );
    let mut passed = true;
    let mut traces = Chart::new(
        "Ball centre of mass after release",
        "time (s)",
        "centre-of-mass height (m)",
    );
    let (mut point_pts, mut ball_pts, mut ideal) = (Vec::new(), Vec::new(), Vec::new());
    for &e in &RESTITUTIONS {
        let (_, point) = drop(e, false)?;
        let (trace, ball) = drop(e, true)?;
        let e2 = e * e;
        passed &= ((point - e2) / e2).abs() <= 0.02 && ((ball - e2) / e2).abs() <= 0.10;
        table.push_str(&format!(
            "| {e} | {e2:.3} | {point:.4} | {ball:.4} | {:.3} |\n",
            ball / e2
        ));
        rows.push(vec![e, e2, point, ball]);
        point_pts.push((e, point));
        ball_pts.push((e, ball));
        traces = traces.with(Series::new(format!("ε = {e}"), trace, Style::Line));
    }
    for k in 0..=20 {
        let e = f64::from(k) / 20.0;
        ideal.push((e, e * e));
    }
    write_csv(
        &dir.join("bounce.csv"),
        &["restitution", "ideal", "point_rebound", "ball_rebound"],
        &rows,
    )?;
    Chart::new(
        "Rebound height against restitution",
        "restitution ε",
        "rebound height / drop height",
    )
    .with(Series::new("ε² (ideal)", ideal, Style::Dashed))
    .with(Series::new("point mass", point_pts, Style::Points))
    .with(Series::new(
        "ball of 67 particles",
        ball_pts,
        Style::LinePoints,
    ))
    .save(&dir.join("rebound.png"))?;
    traces.save(&dir.join("trajectories.png"))?;
    let body = format!(
        "Drop height d = {DROP} m (lowest point above the floor), g = 9.81 m/s², symplectic Euler with h = {DT} s, no friction. Ball: radius {BALL_RADIUS} m, 1 kg, edge and spoke springs k = 2·10⁴ N/m, c = 2 N s/m. Rebound = highest centre-of-mass height after the first contact, above the contact height.\n\n{table}"
    );
    Ok(Outcome {
        passed,
        body,
        files: vec![
            "bounce.csv".into(),
            "rebound.png".into(),
            "trajectories.png".into(),
        ],
    })
}
