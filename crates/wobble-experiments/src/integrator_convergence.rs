//! `integrator-convergence`: error against time step on an undamped oscillator, for
//! every integrator, with the measured order of convergence.
//!
//! A particle of mass m = 1 kg hangs on a linear spring (k = 4π² N/m, rest length
//! 1 m) from a pinned anchor, displaced by A = 0.1 m and released: x(t) = 1 m +
//! A cos(ωt) with ω = 2π rad/s, period 1 s. The global error over one period,
//! e(h) = max_n √(Δx_n² + (Δv_n/ω)²), should fall as h^p, p being the method's
//! order: 1, 1, 2, 2, 4, 2, 1, 1 for explicit Euler, symplectic Euler, Heun, midpoint,
//! RK4, Verlet, implicit Euler and the semi-implicit scheme (which, with a spring and
//! no grid, steps like symplectic Euler; δ = 0 here: Jakobsen's drag is a per-step damping that does not
//! vanish as h → 0). Errors at a single instant would mislead: a whole period ends
//! at a turning point, where a phase error φ moves x only by Aφ²/2, and symplectic
//! Euler's O(h) error is a bounded distortion of its invariant ellipse that
//! vanishes at whole periods. The maximum over the interval sees both.

use std::f64::consts::TAU;
use std::path::Path;

use glam::DVec3;
use wobble::WorldBuilder;
use wobble::force::{SpringKind, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::world::SimParams;

use super::{Experiment, Outcome, log_log_slope, write_csv};
use wobble_viz::plot::{Chart, Legend, Series, Style};

/// Registry entry.
pub const EXPERIMENT: Experiment = Experiment {
    name: "integrator-convergence",
    title: "order of convergence of every integrator",
    claim: "on an undamped oscillator the largest phase-space error over one period falls as h^p with p = 1, 1, 2, 2, 4, 2, 1, 1 for euler, symplectic-euler, heun, midpoint, rk4, verlet, implicit-euler, semi-implicit",
    run,
};

const AMPLITUDE: f64 = 0.1;
const REST: f64 = 1.0;
const PERIOD: f64 = 1.0;
/// Steps per period, coarse to fine.
const STEPS: [u64; 6] = [64, 128, 256, 512, 1024, 2048];
/// Slopes must lie within this of the method's order.
const ORDER_TOLERANCE: f64 = 0.25;

/// Largest phase-space error over one period with `steps` steps of `kind`, m.
fn max_error(kind: IntegratorKind, steps: u64) -> Result<f64, String> {
    let mut b = WorldBuilder::new();
    let anchor = b.add_particle(DVec3::ZERO, DVec3::ZERO, 1.0, 0.0);
    let bob = b.add_particle(DVec3::new(REST + AMPLITUDE, 0.0, 0.0), DVec3::ZERO, 1.0, 0.0);
    b.pin(anchor);
    let g = b.springs.group("oscillator");
    b.springs.push(anchor, bob, REST, SpringParams::linear(TAU * TAU, 0.0), SpringKind::Structural, g);
    let params = SimParams { dt: PERIOD / steps as f64, integrator: kind, verlet_drag: 0.0, ..SimParams::default() };
    let mut world = b.build(params).map_err(|e| e.to_string())?;
    let omega = TAU / PERIOD;
    let mut worst: f64 = 0.0;
    for _ in 0..steps {
        world.step().map_err(|e| e.to_string())?;
        let t = world.time();
        let (x, v) = (world.state.x.get(bob).x, world.state.v.get(bob).x);
        let (x_exact, v_exact) = (REST + AMPLITUDE * (omega * t).cos(), -AMPLITUDE * omega * (omega * t).sin());
        worst = worst.max((x - x_exact).hypot((v - v_exact) / omega));
    }
    Ok(worst)
}

fn run(dir: &Path) -> Result<Outcome, String> {
    let mut rows: Vec<Vec<f64>> = STEPS.iter().map(|&n| vec![PERIOD / n as f64]).collect();
    let mut chart = Chart::new(
        "Integrator convergence on an undamped oscillator",
        "time step h (s)",
        "largest phase-space error over one period (m)",
    )
    .log_log()
    .legend(Legend::LowerRight);
    let mut table = String::from(
        "| integrator | expected order | measured slope | largest error at h = T/2048 (m) | verdict |\n|---|---|---|---|---|\n",
    );
    let mut all = true;
    for kind in IntegratorKind::ALL {
        let mut pts = Vec::new();
        for &n in &STEPS {
            let err = max_error(kind, n)?;
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
        chart = chart.with(Series::new(format!("{} (slope {slope:.2})", kind.name()), pts, Style::LinePoints));
    }
    // h in s; each integrator's column is its largest error, m.
    let mut header = vec!["h_s".to_owned()];
    header.extend(IntegratorKind::ALL.iter().map(|k| format!("{}_m", k.name())));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    write_csv(&dir.join("convergence.csv"), &header, &rows)?;
    chart.save(&dir.join("convergence.png"))?;
    let body = format!(
        "Oscillator: m = 1 kg, k = 4π² N/m (period {PERIOD} s), amplitude {AMPLITUDE} m; error = largest √(Δx² + (Δv/ω)²) over one period; steps per period {STEPS:?}. Slopes are least-squares fits of log error against log h; a method passes when its slope is within ±{ORDER_TOLERANCE} of its order.\n\n{table}"
    );
    Ok(Outcome { finding: None, passed: all, body, files: vec!["convergence.csv".into(), "convergence.png".into()] })
}
