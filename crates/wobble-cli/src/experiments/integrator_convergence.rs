//! `integrator-convergence`: error against time step on an undamped oscillator, for
//! every integrator, with the measured order of convergence.
//!
//! A particle of mass m = 1 kg hangs on a linear spring (k = 4π² N/m, rest length
//! 1 m) from a pinned anchor, displaced by A = 0.1 m and released: x(t) = 1 m +
//! A cos(2π t), period 1 s. After T = 1 s the position error e(h) = |x_h(T) − x(T)|
//! should fall as h^p, p being the method's order: 1, 1, 2, 2, 4, 2 for explicit
//! Euler, symplectic Euler, Heun, midpoint, RK4 and Verlet (δ = 0 here: Jakobsen's
//! drag is a per-step damping that does not vanish as h → 0).

use std::f64::consts::TAU;
use std::path::Path;

use glam::DVec3;
use wobble::WorldBuilder;
use wobble::force::{SpringKind, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::world::SimParams;

use super::{Experiment, Outcome, log_log_slope, write_csv};
use crate::plot::{Chart, Series, Style};

/// Registry entry.
pub const EXPERIMENT: Experiment = Experiment {
    name: "integrator-convergence",
    title: "order of convergence of every integrator",
    claim: "on an undamped oscillator the position error after one period falls as h^p with p = 1, 1, 2, 2, 4, 2 for euler, symplectic-euler, heun, midpoint, rk4, verlet",
    run,
};

const AMPLITUDE: f64 = 0.1;
const REST: f64 = 1.0;
const PERIOD: f64 = 1.0;
/// Steps per period, coarse to fine.
const STEPS: [u64; 6] = [64, 128, 256, 512, 1024, 2048];
/// Slopes must lie within this of the method's order.
const ORDER_TOLERANCE: f64 = 0.25;

/// Position of the oscillator after one period with `steps` steps of `kind`.
fn final_position(kind: IntegratorKind, steps: u64) -> Result<f64, String> {
    let mut b = WorldBuilder::new();
    let anchor = b.add_particle(DVec3::ZERO, DVec3::ZERO, 1.0, 0.0);
    let bob = b.add_particle(
        DVec3::new(REST + AMPLITUDE, 0.0, 0.0),
        DVec3::ZERO,
        1.0,
        0.0,
    );
    b.pin(anchor);
    let g = b.springs.group("oscillator");
    b.springs.push(
        anchor,
        bob,
        REST,
        SpringParams::linear(TAU * TAU, 0.0),
        SpringKind::Structural,
        g,
    );
    let params = SimParams {
        dt: PERIOD / steps as f64,
        integrator: kind,
        verlet_drag: 0.0,
        ..SimParams::default()
    };
    let mut world = b.build(params).map_err(|e| e.to_string())?;
    world.run(steps).map_err(|e| e.to_string())?;
    Ok(world.state.x.get(bob).x)
}

fn run(dir: &Path) -> Result<Outcome, String> {
    let exact = REST + AMPLITUDE * (TAU * PERIOD).cos();
    let mut rows: Vec<Vec<f64>> = STEPS.iter().map(|&n| vec![PERIOD / n as f64]).collect();
    let mut chart = Chart::new(
        "Integrator convergence: undamped oscillator, error after one period",
        "time step h (s)",
        "position error |x_h(T) − x(T)| (m)",
    )
    .log_log();
    let mut table = String::from(
        "| integrator | expected order | measured slope | error at h = T/2048 (m) | verdict |\n|---|---|---|---|---|\n",
    );
    let mut all = true;
    for kind in IntegratorKind::ALL {
        let mut pts = Vec::new();
        for &n in &STEPS {
            let err = (final_position(kind, n)? - exact).abs();
            let h = PERIOD / n as f64;
            rows[pts.len()].push(err);
            pts.push((h, err));
        }
        let slope = log_log_slope(&pts);
        let ok = (slope - f64::from(kind.order())).abs() <= ORDER_TOLERANCE;
        all &= ok;
        table.push_str(&format!(
            "| {} | {} | {slope:.3} | {:.3e} | {} |\n",
            kind.name(),
            kind.order(),
            pts.last().map_or(f64::NAN, |p| p.1),
            if ok { "ok" } else { "off" }
        ));
        chart = chart.with(Series::new(
            format!("{} (slope {slope:.2})", kind.name()),
            pts,
            Style::LinePoints,
        ));
    }
    let mut header = vec!["h"];
    header.extend(IntegratorKind::ALL.iter().map(|k| k.name()));
    write_csv(&dir.join("convergence.csv"), &header, &rows)?;
    chart.save(&dir.join("convergence.png"))?;
    let body = format!(
        "Oscillator: m = 1 kg, k = 4π² N/m (period {PERIOD} s), amplitude {AMPLITUDE} m, error measured after one period; steps per period {STEPS:?}. Slopes are least-squares fits of log error against log h; a method passes when its slope is within ±{ORDER_TOLERANCE} of its order.\n\n{table}"
    );
    Ok(Outcome {
        passed: all,
        body,
        files: vec!["convergence.csv".into(), "convergence.png".into()],
    })
}
