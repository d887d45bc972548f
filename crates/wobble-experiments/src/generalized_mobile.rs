//! `generalized-mobile` (001 §3, Fig. 3): the default mobile (a 0.8 m bar with a
//! weight on one end and a 0.4 m bar with two weights on the other, hung from
//! threads at their balance points) under gravity.
//!
//! * **At rest** for 2 s: the bars must stay level (tilt below 0.02 rad) and
//!   straight (no bar particle further than 1 % of the bar's length from the line
//!   through its ends).
//! * **After a push** (one lower weight given 0.5 m/s sideways at t = 2 s), for 4 s:
//!   the mobile must swing (a weight moves more than 5 cm from its rest place and a
//!   bar turns more than 5° about the vertical) while keeping its shape (bars
//!   straight within 2 %, threads stretched less than 2 %).

use std::path::Path;

use glam::DVec3;
use wobble::build::WorldBuilder;
use wobble::build::mobile::{Mobile, MobileHandle};
use wobble::force::{ForceTerm, GeneralizedSprings, Gravity};
use wobble::integrate::IntegratorKind;
use wobble::world::{SimParams, World};

use super::{Experiment, Outcome, write_csv};
use wobble_viz::plot::{Chart, Legend, Series, Style};
use wobble_viz::render::{self, View};

/// Registry entry.
pub const EXPERIMENT: Experiment = Experiment {
    name: "generalized-mobile",
    title: "a mobile of bars, threads and weights, at rest and after a push",
    claim: "at rest the mobile's bars stay level (< 0.02 rad) and straight (< 1 %); pushed, it swings (a weight moves > 5 cm, a bar turns > 5°) and keeps its shape (bars straight < 2 %, threads stretched < 2 %) (001 §3, Fig. 3)",
    run,
};

const REST: f64 = 2.0;
const SWING: f64 = 4.0;
const PUSH: f64 = 0.5;

fn tilt(w: &World, bar: &[usize]) -> f64 {
    let d = w.state.x.get(bar[bar.len() - 1]) - w.state.x.get(bar[0]);
    (d.y / d.length()).asin().abs()
}

/// Largest distance of a bar particle from the line through the bar's ends, over
/// the bar's length.
fn bow(w: &World, bar: &[usize]) -> f64 {
    let (a, b) = (w.state.x.get(bar[0]), w.state.x.get(bar[bar.len() - 1]));
    let u = (b - a).normalize();
    bar.iter()
        .map(|&p| {
            let r = w.state.x.get(p) - a;
            (r - u * r.dot(u)).length()
        })
        .fold(0.0, f64::max)
        / a.distance(b)
}

/// Heading of a bar about the vertical, rad.
fn heading(w: &World, bar: &[usize]) -> f64 {
    let d = w.state.x.get(bar[bar.len() - 1]) - w.state.x.get(bar[0]);
    d.z.atan2(d.x)
}

fn run(dir: &Path) -> Result<Outcome, String> {
    let mobile = Mobile::default();
    let mut b = WorldBuilder::new();
    let h: MobileHandle = mobile.build(&mut b, "mobile").map_err(|e| e.to_string())?;
    b.add_force(Gravity::default());
    let mut w = b
        .build(SimParams { integrator: IntegratorKind::SymplecticEuler, ..SimParams::default() })
        .map_err(|e| e.to_string())?;
    let dt = 0.5 * w.stability().dt_for(IntegratorKind::SymplecticEuler).ok_or("no stable step")?;
    w.set_dt(dt).map_err(|e| e.to_string())?;
    let every = ((0.01 / dt).round() as u64).max(1);
    let mut rows = Vec::new();
    let (mut rest_tilt, mut rest_bow) = (0.0f64, 0.0f64);
    let sample = |w: &World, rows: &mut Vec<Vec<f64>>| {
        let mut r = vec![w.time()];
        r.extend(h.bars.iter().map(|bar| tilt(w, bar)));
        r.extend(h.bars.iter().map(|bar| heading(w, bar).to_degrees()));
        r.extend(h.weights.iter().map(|&p| w.state.x.get(p).x));
        r.extend(h.weights.iter().map(|&p| w.state.x.get(p).z));
        rows.push(r);
    };
    sample(&w, &mut rows);
    for k in 1..=(REST / dt).round() as u64 {
        w.step().map_err(|e| e.to_string())?;
        for bar in &h.bars {
            rest_tilt = rest_tilt.max(tilt(&w, bar));
            rest_bow = rest_bow.max(bow(&w, bar));
        }
        if k % every == 0 {
            sample(&w, &mut rows);
        }
    }
    let picture = View { width: 480, height: 480, ..View::default() };
    render::snapshot(&w, &picture, &dir.join("at_rest.png"))?;
    let rest_x: Vec<DVec3> = h.weights.iter().map(|&p| w.state.x.get(p)).collect();
    let rest_heading: Vec<f64> = h.bars.iter().map(|bar| heading(&w, bar)).collect();
    let pushed = h.weights[h.weights.len() - 1];
    w.state.v.set(pushed, w.state.v.get(pushed) + DVec3::new(PUSH, 0.0, 0.0));
    let (mut swing, mut turn, mut swing_bow, mut stretch) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for k in 1..=(SWING / dt).round() as u64 {
        w.step().map_err(|e| e.to_string())?;
        for (i, &p) in h.weights.iter().enumerate() {
            let d = w.state.x.get(p) - rest_x[i];
            swing = swing.max(DVec3::new(d.x, 0.0, d.z).length());
        }
        for (i, bar) in h.bars.iter().enumerate() {
            let mut dh = heading(&w, bar) - rest_heading[i];
            dh = (dh + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU) - std::f64::consts::PI;
            turn = turn.max(dh.abs());
            swing_bow = swing_bow.max(bow(&w, bar));
        }
        if k % every == 0 {
            let term = w.force_of::<GeneralizedSprings>().ok_or("no springs")?;
            stretch = stretch.max(term.strain(&w.state).map_or(0.0, |s| s.max));
            sample(&w, &mut rows);
        }
    }
    render::snapshot(&w, &picture, &dir.join("after_push.png"))?;
    let mut header: Vec<String> = vec!["time_s".into()];
    header.extend((0..h.bars.len()).map(|i| format!("bar{i}_tilt_rad")));
    header.extend((0..h.bars.len()).map(|i| format!("bar{i}_heading_deg")));
    header.extend((0..h.weights.len()).map(|i| format!("weight{i}_x_m")));
    header.extend((0..h.weights.len()).map(|i| format!("weight{i}_z_m")));
    let header_ref: Vec<&str> = header.iter().map(String::as_str).collect();
    write_csv(&dir.join("mobile.csv"), &header_ref, &rows)?;
    let nb = h.bars.len();
    let mut chart =
        Chart::new("Mobile: bar headings about the vertical (push at 2 s)", "time (s)", "heading (degrees)")
            .legend(Legend::UpperLeft);
    for i in 0..nb {
        chart = chart.with(Series::new(
            format!("bar {i}"),
            rows.iter().map(|r| (r[0], r[1 + nb + i])).collect(),
            Style::Line,
        ));
    }
    chart.save(&dir.join("headings.png"))?;
    let nw = h.weights.len();
    let mut chart =
        Chart::new("Mobile: weights' x position (push at 2 s)", "time (s)", "x (m)").legend(Legend::UpperLeft);
    for i in 0..nw {
        chart = chart.with(Series::new(
            format!("weight {i}"),
            rows.iter().map(|r| (r[0], r[1 + 2 * nb + i])).collect(),
            Style::Line,
        ));
    }
    chart.save(&dir.join("weights.png"))?;
    let level = rest_tilt < 0.02 && rest_bow < 0.01;
    let swings = swing > 0.05 && turn > 5f64.to_radians();
    let keeps = swing_bow < 0.02 && stretch < 0.02;
    let yes = |b: bool| if b { "yes" } else { "no" };
    let body = format!(
        "The default mobile: anchor at 2 m, top thread 0.3 m; top bar 0.8 m, 0.04 kg, along x, a 0.1 kg weight on one end and, 0.2 m below the other, a 0.4 m, 0.02 kg bar along z with two 0.05 kg weights; threads 0.25 m of {} springs ({} N/m, no bend); bars of {} generalized springs ({} N/m, bend {} and twist {} N m/rad, angular damping {} N m s/rad); particle radius {} m. Symplectic Euler at half the stable estimate, h = {dt:.3e} s. Push: weight {} given {PUSH} m/s along x at t = {REST} s.\n\n\
         | phase | measure | value |\n|---|---|---|\n| rest | largest bar tilt | {rest_tilt:.2e} rad |\n| rest | largest bar bow / length | {rest_bow:.2e} |\n| pushed | largest weight swing | {:.3} m |\n| pushed | largest bar turn about the vertical | {:.1}° |\n| pushed | largest bar bow / length | {swing_bow:.2e} |\n| pushed | largest spring stretch | {:.2} % |\n\n\
         - at rest, level and straight: {}\n- pushed, it swings: {}\n- pushed, it keeps its shape: {}\n",
        mobile.thread_segments,
        mobile.thread.stretch,
        mobile.bar_segments,
        mobile.bar.stretch,
        mobile.bar.bend.positive,
        mobile.bar.twist.positive,
        mobile.bar.bend_damping,
        mobile.radius,
        nw - 1,
        swing,
        turn.to_degrees(),
        100.0 * stretch,
        yes(level),
        yes(swings),
        yes(keeps),
    );
    Ok(Outcome {
        finding: None,
        passed: level && swings && keeps,
        body,
        files: ["mobile.csv", "headings.png", "weights.png", "at_rest.png", "after_push.png"]
            .map(String::from)
            .to_vec(),
    })
}
