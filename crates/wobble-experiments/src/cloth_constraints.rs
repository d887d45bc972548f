//! `cloth-constraints` (003, the three cloth figures and its "Issues" set-up): a soft
//! cloth held by two top corners, one of them oscillating, under the combinations
//! 003 compares — explicit Euler with springs, Euler with Provot's stretch limit,
//! Verlet with Provot's limit, Verlet with Jakobsen's sticks — plus explicit Euler
//! with sticks, with and without the velocity correction that Verlet gets implicitly.
//!
//! Measured per step: the largest strain (r − L)/L of the cloth's structural and
//! shear links (springs or sticks), Provot's correction passes, and whether the run
//! stays finite. 003's statements turned into checks: Provot keeps every limited
//! spring within 10 % and needs a handful of passes (it reports 3–7, cap 10);
//! Jakobsen's sticks with one relaxation per step keep the links close to their
//! length ("Verlet takes care of them within a few steps"); "Euler integration
//! doesn't work with the Jakobsen model".

use std::path::Path;

use glam::DVec3;
use wobble::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::constraint::{Motion, Sticks, StretchLimit};
use wobble::force::{Gravity, SpringKind, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::world::SimParams;

use super::{Experiment, Outcome, write_csv};
use wobble_viz::plot::{Chart, Legend, Series, Style};

/// Registry entry.
pub const EXPERIMENT: Experiment = Experiment {
    name: "cloth-constraints",
    title: "003: springs, Provot's stretch limit and Jakobsen's sticks on a shaken cloth",
    claim: "Provot's limit keeps every limited link within 10 % (to 1 % of τ) with Euler and with Verlet; Verlet with Jakobsen's sticks (one relaxation per step) keeps the links within 5 %; explicit Euler with sticks fails (links beyond 50 %) unless its velocities are corrected as Verlet's are implicitly, and then it holds them within 5 % too",
    run,
};

const N: usize = 16;
const DT: f64 = 2e-4;
const DURATION: f64 = 3.0;
const TAU: f64 = 0.1;
const LINK_KINDS: [SpringKind; 2] = [SpringKind::Structural, SpringKind::Shear];

#[derive(Clone, Copy)]
enum Links {
    Springs,
    Provot,
    Sticks { correct_velocity: bool },
}

struct Setup {
    name: &'static str,
    integrator: IntegratorKind,
    links: Links,
}

const SETUPS: [Setup; 6] = [
    Setup { name: "Euler, springs", integrator: IntegratorKind::ExplicitEuler, links: Links::Springs },
    Setup { name: "Euler + Provot", integrator: IntegratorKind::ExplicitEuler, links: Links::Provot },
    Setup { name: "Verlet + Provot", integrator: IntegratorKind::Verlet, links: Links::Provot },
    Setup {
        name: "Verlet + sticks",
        integrator: IntegratorKind::Verlet,
        links: Links::Sticks { correct_velocity: true },
    },
    Setup {
        name: "Euler + sticks (v corrected)",
        integrator: IntegratorKind::ExplicitEuler,
        links: Links::Sticks { correct_velocity: true },
    },
    Setup {
        name: "Euler + sticks (naive)",
        integrator: IntegratorKind::ExplicitEuler,
        links: Links::Sticks { correct_velocity: false },
    },
];

struct Trace {
    /// (t, largest link strain) per sample.
    strain: Vec<(f64, f64)>,
    /// Provot passes per step.
    passes: Vec<u32>,
    /// Step at which the run stopped, if it blew up.
    blew_up: Option<u64>,
}

fn simulate(setup: &Setup) -> Result<Trace, String> {
    let mut b = WorldBuilder::new();
    let soft = |k: f64| SpringParams::linear(k, 0.002 * k);
    let cloth = Cloth {
        nx: N,
        ny: N,
        spacing: 0.04,
        origin: DVec3::new(-0.3, 1.5, 0.0),
        mass: 0.2,
        structural: soft(30.0),
        shear: Some(soft(15.0)),
        bend: Some(soft(3.0)),
        ..Cloth::default()
    };
    let h = cloth.build(&mut b, "cloth").map_err(|e| e.to_string())?;
    b.pin(h.particle(N - 1, 0));
    // Shaken mostly out of the cloth's plane: the corners' distance changes by under
    // 2 %, so the boundary itself never forces the links past the 10 % limit.
    let shake = Motion::Oscillate { amplitude: DVec3::new(0.0, 0.05, 0.1), frequency: 1.0, phase: 0.0 };
    b.drive("hand", vec![h.particle(0, 0)], shake).map_err(|e| e.to_string())?;
    b.add_force(Gravity::default());
    let g = b.springs.group("cloth");
    let links = b.springs.select(g, &LINK_KINDS);
    match setup.links {
        Links::Springs => {}
        Links::Provot => b.add_constraint(StretchLimit::new("provot", links.clone(), TAU, 10)),
        Links::Sticks { correct_velocity } => {
            let mut sticks = Sticks::new("sticks", b.springs.take(g, &LINK_KINDS));
            sticks.correct_velocity = correct_velocity;
            b.add_constraint(sticks);
        }
    }
    let params = SimParams { dt: DT, integrator: setup.integrator, verlet_drag: 0.01, ..SimParams::default() };
    let mut w = b.build(params).map_err(|e| e.to_string())?;
    let mut trace = Trace { strain: Vec::new(), passes: Vec::new(), blew_up: None };
    let steps = (DURATION / DT).round() as u64;
    for k in 1..=steps {
        if w.step().is_err() {
            trace.blew_up = Some(k);
            break;
        }
        if let Some(limit) = w.constraints.iter().find(|c| c.name() == "provot")
            && let Some(&(_, passes)) = limit.stats().iter().find(|s| s.0 == "passes")
        {
            trace.passes.push(passes as u32);
        }
        if k % 25 == 0 {
            let worst = links
                .iter()
                .map(|&(a, c, l)| (w.state.x.get(a).distance(w.state.x.get(c)) - l) / l)
                .fold(f64::NEG_INFINITY, f64::max);
            trace.strain.push((w.time(), worst));
        }
    }
    Ok(trace)
}

fn run(dir: &Path) -> Result<Outcome, String> {
    let mut table = String::from(
        "| set-up | largest link strain | mean of the per-sample largest | Provot passes: mean, 90th percentile, max | blew up at step |\n|---|---|---|---|---|\n",
    );
    let mut chart = Chart::new(
        "Largest link strain of the shaken cloth",
        "time (s)",
        "largest (r − L)/L of structural and shear links",
    )
    .legend(Legend::UpperRight);
    let mut rows: Vec<Vec<f64>> = Vec::new();
    let mut results = Vec::new();
    for setup in &SETUPS {
        let trace = simulate(setup)?;
        let max = trace.strain.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
        let mean = trace.strain.iter().map(|p| p.1).sum::<f64>() / trace.strain.len().max(1) as f64;
        let passes = if trace.passes.is_empty() {
            "—".to_owned()
        } else {
            let mut p = trace.passes.clone();
            p.sort_unstable();
            let mean = p.iter().map(|&x| f64::from(x)).sum::<f64>() / p.len() as f64;
            format!("{mean:.2}, {}, {}", p[p.len() * 9 / 10], p[p.len() - 1])
        };
        table.push_str(&format!(
            "| {} | {max:.4} | {mean:.4} | {passes} | {} |\n",
            setup.name,
            trace.blew_up.map_or("—".to_owned(), |s| s.to_string())
        ));
        for (i, &(t, e)) in trace.strain.iter().enumerate() {
            if rows.len() <= i {
                rows.push(vec![t]);
            }
            rows[i].push(e);
        }
        chart = chart.with(Series::new(setup.name, trace.strain.clone(), Style::Line));
        results.push((max, mean, trace));
    }
    let width = 1 + SETUPS.len();
    let rows: Vec<Vec<f64>> = rows
        .into_iter()
        .map(|mut r| {
            r.resize(width, f64::NAN);
            r
        })
        .collect();
    // Column names without the commas and spaces of the set-ups' names ("Euler,
    // springs" -> "euler_springs"), so the header has as many fields as the rows.
    let names: Vec<String> = SETUPS
        .iter()
        .map(|s| {
            s.name
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join("_")
        })
        .collect();
    let mut header = vec!["time_s"];
    header.extend(names.iter().map(String::as_str));
    write_csv(&dir.join("strain.csv"), &header, &rows)?;
    chart.save(&dir.join("strain.png"))?;
    let max_of = |k: usize| results[k].0;
    let finite = |k: usize| results[k].2.blew_up.is_none();
    let checks = [
        (
            finite(1) && finite(2) && max_of(1) <= TAU * 1.01 && max_of(2) <= TAU * 1.01,
            format!("Provot within 10 %: largest strain {:.4} (Euler), {:.4} (Verlet)", max_of(1), max_of(2)),
        ),
        (finite(3) && max_of(3) <= 0.05, format!("Verlet + sticks within 5 %: largest strain {:.4}", max_of(3))),
        (!finite(5) || max_of(5) > 0.5, format!("naive Euler + sticks fails: largest strain {:.4}", max_of(5))),
        (
            finite(4) && max_of(4) <= 0.05,
            format!("Euler + sticks with corrected velocities within 5 %: largest strain {:.4}", max_of(4)),
        ),
    ];
    let mut verdicts = String::new();
    let mut passed = true;
    for (ok, text) in &checks {
        passed &= ok;
        verdicts.push_str(&format!("- {}: {text}\n", if *ok { "holds" } else { "does not hold" }));
    }
    let mean_passes = |k: usize| {
        let p = &results[k].2.passes;
        p.iter().map(|&x| f64::from(x)).sum::<f64>() / p.len().max(1) as f64
    };
    verdicts.push_str(&format!(
        "\nProvot's passes: 003 reports 3–7 per step on its small cloth; this larger, softer cloth needs {:.1} (Euler) and {:.1} (Verlet) on average, mostly the cap of 10, which leaves the worst link {:.2} % of τ over the limit. Why naive Euler fails: a stick moves positions but leaves Euler's velocities pointing on, so the next step carries every particle straight back out; Verlet's velocity is the position difference, so it absorbs the move. Correcting Euler's velocity by Δx/h gives it the same behaviour.\n",
        mean_passes(1),
        mean_passes(2),
        100.0 * (max_of(1).max(max_of(2)) - TAU) / TAU
    ));
    let body = format!(
        "Cloth {N} × {N}, 4 cm spacing, 0.2 kg, soft springs (structural 30, shear 15, bend 3 N/m, damping 0.2 % of k per N/m); the top-right corner pinned, the top-left corner shaken by 0.05 m along y and 0.1 m along z (out of the cloth's plane) at 1 Hz; gravity; h = {DT} s for every set-up, {DURATION} s. Provot: τ = {TAU}, at most 10 passes. Sticks replace the structural and shear springs; bend springs stay. Strain is measured every 25 steps, after the constraints.\n\n{table}\n{verdicts}"
    );
    Ok(Outcome { finding: None, passed, body, files: vec!["strain.csv".into(), "strain.png".into()] })
}
