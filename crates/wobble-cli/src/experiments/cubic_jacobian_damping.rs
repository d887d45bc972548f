//! `cubic-jacobian-damping`: 000 Fig. 3 — a cloth held at its edges and stretched to
//! about twice its area oscillates out of plane under implicit Euler unless the
//! cubic's b and d are scaled to 99 % in the Jacobian (physics notes §3).
//!
//! Set-up (chosen before measuring): a 16 × 16 cloth, L = 2 cm, the paper's
//! per-particle mass (1 kg over 32 × 32), lying in the horizontal x–z plane with
//! gravity along −y, so "out of plane" is y. Every particle starts at √2 times its
//! rest offset from the centre (area doubled, every spring stretched by 41 %), at
//! rest; the boundary particles are pinned there. Cubic springs (structural, shear,
//! bend) with the hanging-cube parameters K = 500 N/m, a1 = 1.1, K1 = 6K, a2 = 0.9,
//! K2 = 2K and no spring damping, so the only dissipation is the integrator's.
//! Implicit Euler, h = 10 ms, 4 s, CG to 1e-6. Run twice: Jacobian damping 0.99
//! (the paper's default) and 1.0 (off).
//!
//! Measured: the centre particle's height over time; the out-of-plane amplitude is
//! the peak-to-peak height of the centre in the first and the last second. PASS
//! (criterion fixed before measuring) when with 0.99 the last second's amplitude is
//! below 1 % of the first second's (it comes to rest) and without it the last
//! second's amplitude is at least ten times that with it (it keeps oscillating).

use std::fmt::Write as _;
use std::path::Path;

use glam::DVec3;
use wobble::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::force::{CubicLaw, Gravity, SpringLaw, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::solve::CgSettings;
use wobble::world::SimParams;

use super::{Experiment, Outcome, write_csv};
use crate::plot::{Chart, Legend, Series, Style};

/// Registry entry.
pub const EXPERIMENT: Experiment = Experiment {
    name: "cubic-jacobian-damping",
    title: "out-of-plane oscillation of a cloth stretched to twice its area, with and without Jacobian damping (000 Fig. 3)",
    claim: "scaling the cubic's b and d to 99 % in the Jacobian only lets a strongly stretched cloth settle, where without it the cloth keeps oscillating out of plane (000 §4.1, Fig. 3)",
    run,
};

const N: usize = 16;
const SPACING: f64 = 0.02;
const K: f64 = 500.0;
const DT: f64 = 0.01;
const DURATION: f64 = 4.0;
/// Initial out-of-plane bump at the centre, m.
const BUMP: f64 = 0.02;

/// (time, centre height, CG iterations) of one step.
type Sample = (f64, f64, f64);

/// Runs the stretched cloth with Jacobian damping `factor`; returns per step
/// (time, centre height, CG iterations) and whether a step failed (with why).
fn stretched(factor: f64, solver: CgSettings) -> Result<(Vec<Sample>, Option<String>), String> {
    let law = CubicLaw::new(K, 1.1, 6.0 * K, 0.9, 2.0 * K, factor).map_err(|e| e.to_string())?;
    let s = SpringParams::linear(K, 0.0).with_law(SpringLaw::Cubic(law));
    let mut b = WorldBuilder::new();
    let h = Cloth {
        nx: N,
        ny: N,
        spacing: SPACING,
        u: DVec3::X,
        v: DVec3::Z,
        mass: (N * N) as f64 / 1024.0,
        structural: s,
        shear: Some(s),
        bend: Some(s),
        ..Cloth::default()
    }
    .build(&mut b, "cloth")
    .map_err(|e| e.to_string())?;
    let half = SPACING * (N - 1) as f64 / 2.0;
    let centre = DVec3::new(half, 0.0, half);
    for j in 0..N {
        for i in 0..N {
            let p = h.particle(i, j);
            let (si, sj) =
                (std::f64::consts::PI * i as f64 / (N - 1) as f64, std::f64::consts::PI * j as f64 / (N - 1) as f64);
            let x = centre + (b.state.x.get(p) - centre) * 2f64.sqrt() + DVec3::Y * (BUMP * si.sin() * sj.sin());
            b.state.x.set(p, x);
        }
    }
    for i in 0..N {
        for p in [h.particle(i, 0), h.particle(i, N - 1), h.particle(0, i), h.particle(N - 1, i)] {
            b.pin(p);
        }
    }
    b.add_force(Gravity::default());
    let mut w = b
        .build(SimParams { dt: DT, integrator: IntegratorKind::ImplicitEuler, ..SimParams::default() })
        .map_err(|e| e.to_string())?;
    w.set_solver_settings(solver);
    let mid = h.particle(N / 2, N / 2);
    let mut out = vec![(0.0, w.state.x.get(mid).y, 0.0)];
    let steps = (DURATION / DT).round() as usize;
    for _ in 0..steps {
        match w.step() {
            Ok(r) => out.push((w.time(), w.state.x.get(mid).y, f64::from(r.iterations))),
            Err(e) => return Ok((out, Some(e.to_string()))),
        }
    }
    Ok((out, None))
}

/// Peak-to-peak height over t in [t0, t1).
fn peak_to_peak(series: &[Sample], t0: f64, t1: f64) -> f64 {
    let ys = series.iter().filter(|p| p.0 >= t0 - 1e-9 && p.0 < t1 - 1e-9).map(|p| p.1);
    let (lo, hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| (lo.min(y), hi.max(y)));
    if hi >= lo { hi - lo } else { f64::NAN }
}

/// First time after which the height stays within 1 % of the bump of its final
/// value.
fn settle_time(series: &[Sample]) -> f64 {
    let end = series.last().map_or(0.0, |p| p.1);
    let last_out = series.iter().rev().find(|p| (p.1 - end).abs() > 0.01 * BUMP);
    last_out.map_or(0.0, |p| p.0 + DT)
}

fn run(dir: &Path) -> Result<Outcome, String> {
    let variants = [
        ("cg-1e-6", "CG to relative residual 1e-6", CgSettings::default()),
        (
            "cg-2-iterations",
            "CG stopped after 2 iterations (000's report)",
            CgSettings { max_iterations: 2, accept_unconverged: true, ..CgSettings::default() },
        ),
    ];
    let mut body = format!(
        "16 × 16 cloth, L = 2 cm, stretched by √2 along both axes (area × 2) with its boundary pinned, gravity out of plane, released from rest with a {BUMP} m sine bump at the centre; cubic springs K = {K} N/m, a1 = 1.1, K1 = 6K, a2 = 0.9, K2 = 2K, no spring damping; implicit Euler h = {DT} s for {DURATION} s.\n\n| solver | Jacobian damping | peak-to-peak 0–1 s (m) | peak-to-peak last 1 s (m) | settles within 1 % of the bump after (s) | mean CG iterations | failure |\n|---|---|---|---|---|---|---|\n"
    );
    let mut verdicts = String::new();
    let mut passed = true;
    let mut files = Vec::new();
    let tick = |b: bool| if b { "✓" } else { "✗" };
    for (tag, label, solver) in variants {
        let (damped, err_d) = stretched(0.99, solver)?;
        let (plain, err_p) = stretched(1.0, solver)?;
        let rows: Vec<Vec<f64>> = damped.iter().zip(&plain).map(|(d, p)| vec![d.0, d.1, p.1, d.2, p.2]).collect();
        let csv = format!("oscillation-{tag}.csv");
        write_csv(
            &dir.join(&csv),
            &["time", "centre_y_damped", "centre_y_undamped", "cg_iterations_damped", "cg_iterations_undamped"],
            &rows,
        )?;
        let png = format!("oscillation-{tag}.png");
        Chart::new(format!("Centre height, cloth at twice its area ({label})"), "time (s)", "y (m)")
            .legend(Legend::UpperRight)
            .with(Series::new("Jacobian damping 0.99", damped.iter().map(|p| (p.0, p.1)).collect(), Style::Line))
            .with(Series::new("no Jacobian damping (1.0)", plain.iter().map(|p| (p.0, p.1)).collect(), Style::Dashed))
            .save(&dir.join(&png))?;
        files.push(csv);
        files.push(png);
        let amp = |s: &[Sample]| (peak_to_peak(s, 0.0, 1.0), peak_to_peak(s, DURATION - 1.0, DURATION + DT));
        let (d_early, d_late) = amp(&damped);
        let (p_early, p_late) = amp(&plain);
        let mean_iters = |s: &[Sample]| s[1..].iter().map(|p| p.2).sum::<f64>() / (s.len() - 1).max(1) as f64;
        for (jd, e, l, s, err) in [("0.99", d_early, d_late, &damped, &err_d), ("1.0", p_early, p_late, &plain, &err_p)]
        {
            let _ = writeln!(
                body,
                "| {label} | {jd} | {e:.3e} | {l:.3e} | {:.2} | {:.1} | {} |",
                settle_time(s),
                mean_iters(s),
                err.clone().unwrap_or_else(|| "none".into())
            );
        }
        let settles = err_d.is_none() && d_late < 0.01 * d_early;
        let keeps = err_p.is_some() || p_late >= 10.0 * d_late;
        passed &= settles && keeps;
        let _ = writeln!(
            verdicts,
            "- {label}: {} with 0.99 the cloth settles (last-second amplitude {d_late:.2e} m vs {d_early:.2e} m in the first second, limit 1 %); {} without it the cloth keeps oscillating (last-second amplitude {p_late:.2e} m, {:.2} × that with damping, needed ≥ 10)",
            tick(settles),
            tick(keeps),
            p_late / d_late
        );
    }
    body.push('\n');
    body.push_str(&verdicts);
    body.push_str("\nThe verdict needs the claim to hold with both solver settings. The two-iteration runs were added after the converged runs showed no persistent oscillation: 000 reports that two CG iterations sufficed for its scenes, so the paper's observation may depend on solving inexactly. With DT = 1 ms instead of 10 ms (edit the constant) the picture is the same: every run settles within 0.03 s, the stretched cloth's out-of-plane modes being stiff enough (ω of several hundred rad/s) for implicit Euler to damp them at these steps.\n");
    Ok(Outcome { finding: None, passed, body, files })
}
