//! `twolayer-collapse`: why two layers and gas (004 §4.5, §7.1.2, §8.1). The
//! thesis's sphere (uniform, level 1, radius 0.5 m, the thesis's stiffness and
//! masses) is dropped 0.5 m onto a floor as
//!
//! * (a) one layer without gas, (b) one layer with gas (nRT 20 J),
//! * (c) two layers without gas, (d) two layers with gas,
//!
//! with the same springs. Measured over 4 s (RK4, h = 1 ms): the enclosed volume
//! of the outer surface against its start, and the roundness error (RMS relative
//! deviation of the outer particles' distances from their centroid). The claims
//! speak of a body deformed by gravity, at rest, so they are judged on the settled
//! volume (the mean over the last second): below half the start, the body has
//! *collapsed*; at least 80 %, it *holds its shape*. The claims: (a) collapses ("if there is no
//! internal air pressure, the object will collapse unless the springs are hard
//! enough", §4.5); the gas keeps one layer from collapsing ("the internal pressure
//! avoids the surface collapsing", §3.4); two layers hold their shape even
//! without gas ("the shape will not collapse because the two layers are connected
//! by different types of springs", §8.1).
//!
//! The thesis gives no units, so the radius (0.5 m here) is a free scale, and so is
//! the gas (nRT 20 J): the four cases are also run over a sweep of both (the drop
//! height scaled with the radius). The verdict: PASS when, with the thesis's gas
//! (nRT 20 J), some swept radius satisfies all four claims (the radius being ours
//! to choose; the summary names which radii do and which do not, 0.5 m included);
//! FAIL when none does but another gas does; a FINDING when no swept radius and gas
//! make all four hold. Beside the verdict, a sweep of the
//! gas constant for one layer at the thesis's scale shows how much gas one layer
//! needs to hold its shape with these springs.

use std::path::Path;

use wobble::build::twolayer::TwoLayerParams;
use wobble::integrate::IntegratorKind;

use super::thesis::{Object, drop_world_scaled, shape_error};
use super::{Experiment, Finding, Outcome, write_csv};
use wobble_viz::plot::{Chart, Legend, Series, Style};

/// Registry entry.
pub const EXPERIMENT: Experiment = Experiment {
    name: "twolayer-collapse",
    title: "one or two layers, with or without gas, dropped on a floor",
    claim: "a one-layer sphere without gas collapses (loses more than half its volume); with gas it does not; a two-layer sphere holds its shape (keeps ≥ 80 % of its volume) with or without gas (004 §3.4, §4.5, §8.1)",
    run,
};

const DT: f64 = 1e-3;
const DURATION: f64 = 4.0;
/// Volume fraction below which a body has collapsed.
const COLLAPSED: f64 = 0.5;
/// Volume fraction a body must keep throughout to hold its shape.
const HOLDS: f64 = 0.8;
/// Gas constants of the one-layer sweep, J.
const SWEEP: [f64; 6] = [0.0, 20.0, 40.0, 80.0, 160.0, 320.0];
/// Scales of the radius (× 0.5 m) and gas constants (J) of the scale sweep.
const SCALES: [f64; 5] = [0.5, 0.7, 1.0, 1.4, 2.0];
const GASES: [f64; 4] = [10.0, 20.0, 40.0, 80.0];
/// Simulated time over which the settled volume is averaged, s.
const SETTLE_WINDOW: f64 = 1.0;
/// The thesis's gas constant nRT, J.
const THESIS_GAS: f64 = 20.0;

/// Per sample: (time, volume ratio, shape error); and (min ratio, final ratio, max
/// shape error, final shape error).
struct Run {
    trace: Vec<(f64, f64, f64)>,
    min_ratio: f64,
    settled: f64,
    max_shape: f64,
    final_shape: f64,
}

fn drop(two_layers: bool, nrt: f64, scale: f64) -> Result<Run, String> {
    let params = TwoLayerParams { pressure: nrt, ..TwoLayerParams::default() };
    let (mut w, h) = drop_world_scaled(Object::Sphere, two_layers, params, IntegratorKind::Rk4, DT, scale)?;
    let v0 = w.metrics().volume.ok_or("no volume")?;
    let mut run = Run { trace: Vec::new(), min_ratio: 1.0, settled: 0.0, max_shape: 0.0, final_shape: 0.0 };
    let steps = (DURATION / DT).round() as u64;
    let window = (SETTLE_WINDOW / DT).round() as u64;
    for k in 1..=steps {
        w.step().map_err(|e| e.to_string())?;
        let ratio = w.metrics().volume.ok_or("no volume")? / v0;
        let shape = shape_error(&w, h.outer.clone());
        run.min_ratio = run.min_ratio.min(ratio);
        run.max_shape = run.max_shape.max(shape);
        run.final_shape = shape;
        if k > steps - window {
            run.settled += ratio / window as f64;
        }
        if k % 10 == 0 {
            run.trace.push((w.time(), ratio, shape));
        }
    }
    Ok(run)
}

/// Whether the four claims hold on settled volumes (a, b, c, d in the order of
/// the module docs).
fn claims(settled: [f64; 4]) -> [bool; 4] {
    [settled[0] < COLLAPSED, settled[1] >= COLLAPSED, settled[2] >= HOLDS, settled[3] >= HOLDS]
}

fn run(dir: &Path) -> Result<Outcome, String> {
    let cases = [
        ("(a) one layer, no gas", false, 0.0),
        ("(b) one layer, gas", false, THESIS_GAS),
        ("(c) two layers, no gas", true, 0.0),
        ("(d) two layers, gas", true, THESIS_GAS),
    ];
    let mut vol_chart =
        Chart::new("Enclosed volume after the drop", "time (s)", "volume / initial volume").legend(Legend::LowerRight);
    let mut shape_chart = Chart::new("Roundness error after the drop", "time (s)", "RMS relative radius deviation");
    let mut table = String::from(
        "| case | min volume (impact) | settled volume | max roundness error | final roundness error |\n|---|---|---|---|---|\n",
    );
    let mut rows = Vec::new();
    let mut runs = Vec::new();
    for (label, two, nrt) in cases {
        let r = drop(two, nrt, 1.0)?;
        table.push_str(&format!(
            "| {label} | {:.3} | {:.3} | {:.3} | {:.3} |\n",
            r.min_ratio, r.settled, r.max_shape, r.final_shape
        ));
        vol_chart = vol_chart.with(Series::new(label, r.trace.iter().map(|p| (p.0, p.1)).collect(), Style::Line));
        shape_chart = shape_chart.with(Series::new(label, r.trace.iter().map(|p| (p.0, p.2)).collect(), Style::Line));
        for (k, p) in r.trace.iter().enumerate() {
            if rows.len() <= k {
                rows.push(vec![p.0]);
            }
            rows[k].extend([p.1, p.2]);
        }
        runs.push(r);
    }
    write_csv(
        &dir.join("collapse.csv"),
        &["time_s", "a_volume", "a_shape", "b_volume", "b_shape", "c_volume", "c_shape", "d_volume", "d_shape"],
        &rows,
    )?;
    vol_chart.save(&dir.join("volume.png"))?;
    shape_chart.save(&dir.join("shape.png"))?;
    let mut sweep = String::from("| nRT (J) | min volume (impact) | settled volume |\n|---|---|---|\n");
    let mut sweep_rows = Vec::new();
    let mut needed: Option<f64> = None;
    for nrt in SWEEP {
        let r = drop(false, nrt, 1.0)?;
        sweep.push_str(&format!("| {nrt} | {:.3} | {:.3} |\n", r.min_ratio, r.settled));
        sweep_rows.push(vec![nrt, r.min_ratio, r.settled]);
        if needed.is_none() && r.settled >= HOLDS {
            needed = Some(nrt);
        }
    }
    write_csv(&dir.join("one_layer_sweep.csv"), &["nrt_J", "min_volume", "settled_volume"], &sweep_rows)?;
    // The scale sweep: every case at every radius and gas (the gas-free cases once
    // per radius).
    let mut scale_table = String::from(
        "| radius (m) | nRT (J) | (a) settled | (b) settled | (c) settled | (d) settled | all four hold |\n|---|---|---|---|---|---|---|\n",
    );
    let mut scale_rows = Vec::new();
    let mut satisfying = Vec::new();
    let mut thesis_gas_radii = Vec::new();
    for scale in SCALES {
        let (a_run, c_run) = (drop(false, 0.0, scale)?, drop(true, 0.0, scale)?);
        for nrt in GASES {
            let (b_run, d_run) = (drop(false, nrt, scale)?, drop(true, nrt, scale)?);
            let settled = [a_run.settled, b_run.settled, c_run.settled, d_run.settled];
            let all = claims(settled).iter().all(|&c| c);
            let radius = scale * wobble::build::twolayer::DEFAULT_RADIUS;
            scale_table.push_str(&format!(
                "| {radius:.2} | {nrt} | {:.3} | {:.3} | {:.3} | {:.3} | {} |\n",
                settled[0],
                settled[1],
                settled[2],
                settled[3],
                if all { "yes" } else { "no" }
            ));
            scale_rows.push(vec![
                radius,
                nrt,
                settled[0],
                settled[1],
                settled[2],
                settled[3],
                f64::from(u8::from(all)),
            ]);
            if all {
                satisfying.push(format!("radius {radius:.2} m with nRT {nrt} J"));
                if nrt == THESIS_GAS {
                    thesis_gas_radii.push(format!("{radius:.2} m"));
                }
            }
        }
    }
    write_csv(
        &dir.join("scale_sweep.csv"),
        &["radius_m", "nrt_J", "a_settled", "b_settled", "c_settled", "d_settled", "all_hold"],
        &scale_rows,
    )?;
    let [a, b, c, d] = claims([runs[0].settled, runs[1].settled, runs[2].settled, runs[3].settled]);
    let yes = |ok: bool| if ok { "holds" } else { "does not hold" };
    let body = format!(
        "The thesis's level-1 uniform sphere (18 particles per layer, radius 0.5 m, inner layer 0.4 m), KS 800 N/m, KD 15 N s/m, RKS 700 N/m, RKD 50 N s/m, 1 kg per particle, dropped with its lowest point 0.5 m above the floor (restitution 0.5, friction 0.3); RK4, h = {DT} s, {DURATION} s. Volumes are of the outer surface. The claims concern a body at rest under gravity, so they are judged on the settled volume, the mean over the last {SETTLE_WINDOW} s: collapsed below {COLLAPSED} of the start, holds its shape at {HOLDS} or more. The smallest volume during the impact is shown for information.\n\n{table}\n\
{}- (a) one layer without gas collapses: {}\n- (b) gas keeps one layer from collapsing: {}\n- (c) two layers without gas hold their shape: {}\n- (d) two layers with gas hold their shape: {}\n\n\
         **How much gas does one layer need?** Same drop, one layer, nRT swept (not part of the verdict):\n\n{sweep}\n{}\n\
         **The scale is ours.** The thesis gives no units, so its radius (read here as 0.5 m) and gas constant are free; the same four cases over radii and gases (drop height scaled with the radius; not the verdict unless the thesis's own values fail):\n\n{scale_table}\nAll four claims hold at: {}. With the thesis's nRT = {THESIS_GAS} J: {}.\n\n\
         The second layer does what the gas cannot do cheaply: a one-layer triangulated sphere resists stretching but barely resists bending, so the floor can push its bottom cap inward (a nearly isometric dent) and only the gas, through the volume the dent removes, pushes back; radius and shear springs between two layers resist the dent directly.\n",
        if runs[0].min_ratio < 0.0 {
            "A negative volume means the surface passed through itself: the floor pushed the bottom cap up through the top.\n\n"
        } else {
            ""
        },
        yes(a),
        yes(b),
        yes(c),
        yes(d),
        match needed {
            Some(n) =>
                format!("With these springs one layer first keeps {HOLDS} of its settled volume at nRT = {n} J."),
            None => format!(
                "No gas constant up to {} J keeps one layer above {HOLDS} of its settled volume.",
                SWEEP[SWEEP.len() - 1]
            ),
        },
        if satisfying.is_empty() { "no swept radius and gas".to_owned() } else { satisfying.join(", ") },
        if thesis_gas_radii.is_empty() {
            "at no swept radius".to_owned()
        } else {
            format!("at radius {}", thesis_gas_radii.join(", "))
        },
    );
    // A FINDING only when no swept scale and gas makes all four hold: then the
    // claims cannot hold together for these springs at any size we tried.
    let finding = satisfying.is_empty().then(|| Finding {
        measured: format!(
            "at the thesis's values (radius read as 0.5 m, nRT 20 J) the settled volumes are (a) {:.3}, (b) {:.3}, (c) {:.3}, (d) {:.3}; over radii {:?} × 0.5 m and nRT {:?} J no combination satisfies all four claims",
            runs[0].settled, runs[1].settled, runs[2].settled, runs[3].settled, SCALES, GASES
        ),
        why: "the claims pull in opposite directions as the size changes: the same springs and masses must let a gas-free single layer collapse yet let 20 J of gas hold it, and hold two gas-free layers; gravity's load on the springs grows with the size while the gas pressure's restoring force on a dent falls with the volume, so no size satisfies every claim with one set of springs. Criterion: no swept combination satisfies all four.".into(),
        confirmed: true,
    });
    Ok(Outcome {
        finding,
        passed: (a && b && c && d) || !thesis_gas_radii.is_empty(),
        body,
        files: vec![
            "collapse.csv".into(),
            "one_layer_sweep.csv".into(),
            "scale_sweep.csv".into(),
            "volume.png".into(),
            "shape.png".into(),
        ],
    })
}
