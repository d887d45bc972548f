//! `twolayer-inertia`: the thesis's inertia effect (004 §8.1, "Inertia", Fig. 3):
//! the two layers of a body move relative to each other, so a two-layer body shows
//! internal motion a one-layer body cannot.
//!
//! (i) *Opposite pushes.* The thesis's sphere floats without gravity; its inner
//! layer starts at +1 m/s along x and its outer layer at −M_in/M_out m/s, so the
//! body's momentum is zero. The layers separate and the radius and shear springs
//! pull them back. Model (derived here, not fitted): if both layers stayed rigid,
//! a relative shift δ along x stretches each connecting spring by δ n_x (n its rest
//! direction), so the relative coordinate obeys μ δ'' + C δ' + K δ = 0 with
//! μ = M_in M_out/(M_in + M_out), K = Σ k n_x², C = Σ c n_x² over the radius and
//! shear springs, δ(0) = 0, δ'(0) = v_in − v_out. Checked: the body's centre of
//! mass stays at rest (momentum conservation, to 10⁻⁹ m); the measured peak
//! separation matches the rigid-layer model within 25 % (the layers do deform, so
//! the model is an approximation; the tolerance is set before measuring).
//!
//! (ii) *Liquid at the bottom.* The thesis's half-filled balloon: the inner
//! particles below the centre weigh 5 kg instead of 1 kg. Dropped 0.5 m onto the
//! floor beside the same body with a uniform inner layer. Checked: at rest the
//! heavy inner layer has sunk further into the skin (its centre of mass relative
//! to the outer layer's, against the same at release), and after landing it swings
//! further relative to the skin than the uniform one does.

use std::path::Path;

use glam::DVec3;
use wobble::WorldBuilder;
use wobble::build::sphere::SphereMesh;
use wobble::build::twolayer::{PressureSphere, TwoLayerParams};
use wobble::force::{SpringKind, SpringNetwork};
use wobble::integrate::IntegratorKind;
use wobble::world::SimParams;

use super::thesis::{Object, com, drop_world};
use super::{Experiment, Outcome, write_csv};
use wobble_viz::plot::{Chart, Legend, Series, Style};

/// Registry entry.
pub const EXPERIMENT: Experiment = Experiment {
    name: "twolayer-inertia",
    title: "relative motion of the two layers: opposite pushes and a bottom-heavy inner layer",
    claim: "the two layers of a body move relative to each other (004 §8.1): pushed apart they separate and are pulled back with the body's centre of mass at rest, the peak separation following the rigid-layer spring model within 25 %; a bottom-heavy inner layer sinks further into the skin and swings further relative to it after landing than a uniform one",
    run,
};

const DT: f64 = 1e-3;
/// Initial speed of the inner layer in (i), m/s.
const PUSH: f64 = 1.0;
/// Mass of an inner particle below the centre in (ii), kg.
const HEAVY: f64 = 5.0;
/// Relative tolerance of the model's peak separation.
const MODEL_TOLERANCE: f64 = 0.25;

/// δ(t) of μ δ'' + C δ' + K δ = 0 with δ(0) = 0, δ'(0) = v0.
fn model(mu: f64, c: f64, k: f64, v0: f64, t: f64) -> f64 {
    let disc = c * c - 4.0 * mu * k;
    if disc > 0.0 {
        let s = disc.sqrt();
        let (r1, r2) = ((-c + s) / (2.0 * mu), (-c - s) / (2.0 * mu));
        v0 / (r1 - r2) * ((r1 * t).exp() - (r2 * t).exp())
    } else if disc < 0.0 {
        let w = (-disc).sqrt() / (2.0 * mu);
        v0 / w * (-c * t / (2.0 * mu)).exp() * (w * t).sin()
    } else {
        v0 * t * (-c * t / (2.0 * mu)).exp()
    }
}

fn opposite_pushes(dir: &Path) -> Result<(String, bool, Vec<String>), String> {
    let mut b = WorldBuilder::new();
    let sphere = PressureSphere { mesh: SphereMesh::Uniform { level: 1 }, ..PressureSphere::default() };
    let h = sphere.build(&mut b, "sphere").map_err(|e| e.to_string())?;
    let (m_in, m_out): (f64, f64) =
        (h.inner.clone().map(|i| b.particles.mass[i]).sum(), h.outer.clone().map(|i| b.particles.mass[i]).sum());
    let v_out = -PUSH * m_in / m_out;
    b.set_velocity(h.inner.clone(), DVec3::new(PUSH, 0.0, 0.0));
    b.set_velocity(h.outer.clone(), DVec3::new(v_out, 0.0, 0.0));
    // K and C of the rigid-layer model, from the built springs' rest directions.
    let net = SpringNetwork::new(&b.springs, b.particle_count()).map_err(|e| e.to_string())?;
    let (mut k, mut c) = (0.0, 0.0);
    for s in 0..net.len() {
        if matches!(net.kind(s), SpringKind::Radius | SpringKind::ShearLeft | SpringKind::ShearRight) {
            let (a, e) = net.ends(s);
            let n = (b.state.x.get(e) - b.state.x.get(a)).normalize();
            k += net.stiffness(s) * n.x * n.x;
            c += net.damping(s) * n.x * n.x;
        }
    }
    let mu = m_in * m_out / (m_in + m_out);
    let mut w = b
        .build(SimParams { dt: DT, integrator: IntegratorKind::Rk4, ..SimParams::default() })
        .map_err(|e| e.to_string())?;
    let total = 0..w.state.len();
    let c0 = com(&w, total.clone());
    let (mut rows, mut drift, mut peak, mut peak_t) = (Vec::new(), 0.0f64, 0.0f64, 0.0);
    let (mut meas, mut pred, mut traces_in, mut traces_out) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut model_peak: f64 = 0.0;
    for step in 1..=1500 {
        w.step().map_err(|e| e.to_string())?;
        let (xi, xo, xc) = (com(&w, h.inner.clone()).x, com(&w, h.outer.clone()).x, com(&w, total.clone()));
        drift = drift.max(xc.distance(c0));
        let rel = xi - xo;
        if rel > peak {
            (peak, peak_t) = (rel, w.time());
        }
        let m = model(mu, c, k, PUSH - v_out, w.time());
        model_peak = model_peak.max(m);
        if step % 5 == 0 {
            rows.push(vec![w.time(), xi, xo, xc.x, rel, m]);
            meas.push((w.time(), rel));
            pred.push((w.time(), m));
            traces_in.push((w.time(), xi));
            traces_out.push((w.time(), xo));
        }
    }
    write_csv(
        &dir.join("pushes.csv"),
        &["time_s", "inner_x_m", "outer_x_m", "body_x_m", "separation_m", "model_m"],
        &rows,
    )?;
    Chart::new("Opposite pushes: centres of mass along x", "time (s)", "x (m)")
        .with(Series::new("inner layer", traces_in, Style::Line))
        .with(Series::new("outer layer", traces_out, Style::Line))
        .save(&dir.join("pushes.png"))?;
    Chart::new("Opposite pushes: layer separation", "time (s)", "x_inner − x_outer (m)")
        .with(Series::new("measured", meas, Style::Line))
        .with(Series::new("rigid-layer model", pred, Style::Dashed))
        .save(&dir.join("separation.png"))?;
    let still = drift <= 1e-9;
    let agree = ((peak - model_peak) / model_peak).abs() <= MODEL_TOLERANCE;
    let zeta = c / (2.0 * (mu * k).sqrt());
    let text = format!(
        "**(i) Opposite pushes.** Level-1 two-layer sphere, no gravity, no floor; inner layer {m_in} kg at +{PUSH} m/s, outer layer {m_out} kg at {v_out} m/s; RK4, h = {DT} s, 1.5 s. Rigid-layer model: μ = {mu:.2} kg, K = {k:.0} N/m, C = {c:.0} N s/m (damping ratio {zeta:.2}: {}).\n\n\
         | | value |\n|---|---|\n| largest drift of the body's centre of mass | {drift:.2e} m |\n| peak separation, measured | {peak:.4} m at t = {peak_t:.3} s |\n| peak separation, rigid-layer model | {model_peak:.4} m |\n| relative difference | {:.1} % (tolerance {:.0} %) |\n\n\
         - the body's centre of mass stays at rest: {}\n- the peak separation follows the model: {}\n",
        if zeta > 1.0 {
            "overdamped, the layers creep back without oscillating"
        } else {
            "underdamped, the layers oscillate"
        },
        100.0 * (peak - model_peak) / model_peak,
        100.0 * MODEL_TOLERANCE,
        if still { "holds" } else { "does not hold" },
        if agree { "holds" } else { "does not hold" },
    );
    Ok((text, still && agree, vec!["pushes.csv".into(), "pushes.png".into(), "separation.png".into()]))
}

/// Samples of (time, offset, outer height).
type Trace = Vec<(f64, f64, f64)>;

/// (trace of (t, y_in − y_out − its value at release, y_out), resting offset, largest
/// swing after landing about the resting offset).
fn liquid_drop(heavy: bool) -> Result<(Trace, f64, f64), String> {
    let params = TwoLayerParams { inner_bottom_mass: heavy.then_some(HEAVY), ..TwoLayerParams::default() };
    let (mut w, h) = drop_world(Object::Sphere, true, params, IntegratorKind::Rk4, DT)?;
    // Offsets are measured from the offset at release: a heavy bottom already puts
    // the inner layer's centre of mass low; what matters is how far it sinks.
    let d0 = com(&w, h.inner.clone()).y - com(&w, h.outer.clone()).y;
    let mut trace = Vec::new();
    let mut landed: Option<usize> = None;
    for step in 1..=3000 {
        w.step().map_err(|e| e.to_string())?;
        let (yi, yo) = (com(&w, h.inner.clone()).y, com(&w, h.outer.clone()).y);
        if landed.is_none() && w.metrics().bbox_min.y <= 1e-12 {
            landed = Some(trace.len());
        }
        let _ = step;
        trace.push((w.time(), yi - yo - d0, yo));
    }
    let rest = trace.last().map_or(0.0, |p| p.1);
    let from = landed.ok_or("the body never reached the floor")?;
    let swing = trace[from..].iter().map(|p| (p.1 - rest).abs()).fold(0.0, f64::max);
    Ok((trace, rest, swing))
}

fn run(dir: &Path) -> Result<Outcome, String> {
    let (text_i, ok_i, mut files) = opposite_pushes(dir)?;
    let (heavy, rest_h, swing_h) = liquid_drop(true)?;
    let (uniform, rest_u, swing_u) = liquid_drop(false)?;
    let rows: Vec<Vec<f64>> =
        heavy.iter().zip(&uniform).step_by(5).map(|(a, b)| vec![a.0, a.1, a.2, b.1, b.2]).collect();
    write_csv(
        &dir.join("liquid.csv"),
        &["time_s", "heavy_offset_m", "heavy_outer_y_m", "uniform_offset_m", "uniform_outer_y_m"],
        &rows,
    )?;
    Chart::new(
        "Landing: inner layer's centre of mass relative to the skin's",
        "time (s)",
        "sinking of the inner layer (m)",
    )
    .legend(Legend::LowerRight)
    .with(Series::new(
        format!("inner bottom {HEAVY} kg"),
        heavy.iter().step_by(5).map(|p| (p.0, p.1)).collect(),
        Style::Line,
    ))
    .with(Series::new("uniform inner 1 kg", uniform.iter().step_by(5).map(|p| (p.0, p.1)).collect(), Style::Line))
    .save(&dir.join("liquid.png"))?;
    Chart::new("Landing: outer layer's centre of mass", "time (s)", "y_outer (m)")
        .with(Series::new(
            format!("inner bottom {HEAVY} kg"),
            heavy.iter().step_by(5).map(|p| (p.0, p.2)).collect(),
            Style::Line,
        ))
        .with(Series::new("uniform inner 1 kg", uniform.iter().step_by(5).map(|p| (p.0, p.2)).collect(), Style::Line))
        .save(&dir.join("liquid_height.png"))?;
    files.extend(["liquid.csv".into(), "liquid.png".into(), "liquid_height.png".into()]);
    let lower = rest_h < rest_u;
    let swings = swing_h > swing_u;
    let yes = |b: bool| if b { "holds" } else { "does not hold" };
    let body = format!(
        "{text_i}\n**(ii) Liquid at the bottom.** Level-1 two-layer sphere with gas, dropped 0.5 m onto a floor (RK4, h = {DT} s, 3 s); inner particles below the centre {HEAVY} kg against a uniform 1 kg inner layer. Offset = y of the inner layer's centre of mass minus the outer layer's, less its value at release (how far the inner layer has sunk in the skin).\n\n\
         | inner layer | resting offset (m) | largest swing about it after landing (m) |\n|---|---|---|\n| bottom {HEAVY} kg | {rest_h:.4} | {swing_h:.4} |\n| uniform 1 kg | {rest_u:.4} | {swing_u:.4} |\n\n\
         - the heavy inner layer sinks further into the skin: {}\n- it swings further relative to the skin after landing: {}\n",
        yes(lower),
        yes(swings)
    );
    Ok(Outcome { finding: None, passed: ok_i && lower && swings, body, files })
}
