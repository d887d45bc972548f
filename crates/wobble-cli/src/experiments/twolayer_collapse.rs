//! `twolayer-collapse`: why two layers and gas (004 §4.5, §7.1.2, §8.1). The
//! thesis's sphere (uniform, level 1, radius 0.5 m, the thesis's stiffness and
//! masses) is dropped 0.5 m onto a floor as
//!
//! * (a) one layer without gas, (b) one layer with gas (nRT 20 J),
//! * (c) two layers without gas, (d) two layers with gas,
//!
//! with the same springs. Measured over 4 s (RK4, h = 1 ms): the enclosed volume
//! of the outer surface against its start, and the roundness error (RMS relative
//! deviation of the outer particles' distances from their centroid). A body that
//! ever loses more than half its volume has *collapsed*; one that keeps at least
//! 80 % throughout *holds its shape*. The claims: (a) collapses ("if there is no
//! internal air pressure, the object will collapse unless the springs are hard
//! enough", §4.5); the gas keeps one layer from collapsing ("the internal pressure
//! avoids the surface collapsing", §3.4); two layers hold their shape even
//! without gas ("the shape will not collapse because the two layers are connected
//! by different types of springs", §8.1).
//!
//! Beside the verdict, a sweep of the gas constant for one layer shows how much gas
//! one layer needs to hold its shape with these springs.

use std::path::Path;

use wobble::build::twolayer::TwoLayerParams;
use wobble::integrate::IntegratorKind;

use super::thesis::{Object, drop_world, shape_error};
use super::{Experiment, Outcome, write_csv};
use crate::plot::{Chart, Legend, Series, Style};

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

/// Per sample: (time, volume ratio, shape error); and (min ratio, final ratio, max
/// shape error, final shape error).
struct Run {
    trace: Vec<(f64, f64, f64)>,
    min_ratio: f64,
    final_ratio: f64,
    max_shape: f64,
    final_shape: f64,
}

fn drop(two_layers: bool, nrt: f64) -> Result<Run, String> {
    let params = TwoLayerParams { pressure: nrt, ..TwoLayerParams::default() };
    let (mut w, h) = drop_world(Object::Sphere, two_layers, params, IntegratorKind::Rk4, DT)?;
    let v0 = w.metrics().volume.ok_or("no volume")?;
    let mut run = Run { trace: Vec::new(), min_ratio: 1.0, final_ratio: 1.0, max_shape: 0.0, final_shape: 0.0 };
    let steps = (DURATION / DT).round() as u64;
    for k in 1..=steps {
        w.step().map_err(|e| e.to_string())?;
        let ratio = w.metrics().volume.ok_or("no volume")? / v0;
        let shape = shape_error(&w, h.outer.clone());
        run.min_ratio = run.min_ratio.min(ratio);
        run.max_shape = run.max_shape.max(shape);
        (run.final_ratio, run.final_shape) = (ratio, shape);
        if k % 10 == 0 {
            run.trace.push((w.time(), ratio, shape));
        }
    }
    Ok(run)
}

fn run(dir: &Path) -> Result<Outcome, String> {
    let cases = [
        ("(a) one layer, no gas", false, 0.0),
        ("(b) one layer, gas", false, 20.0),
        ("(c) two layers, no gas", true, 0.0),
        ("(d) two layers, gas", true, 20.0),
    ];
    let mut vol_chart =
        Chart::new("Enclosed volume after the drop", "time (s)", "volume / initial volume").legend(Legend::LowerRight);
    let mut shape_chart = Chart::new("Roundness error after the drop", "time (s)", "RMS relative radius deviation");
    let mut table = String::from(
        "| case | min volume | final volume | max roundness error | final roundness error |\n|---|---|---|---|---|\n",
    );
    let mut rows = Vec::new();
    let mut runs = Vec::new();
    for (label, two, nrt) in cases {
        let r = drop(two, nrt)?;
        table.push_str(&format!(
            "| {label} | {:.3} | {:.3} | {:.3} | {:.3} |\n",
            r.min_ratio, r.final_ratio, r.max_shape, r.final_shape
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
        &["time", "a_volume", "a_shape", "b_volume", "b_shape", "c_volume", "c_shape", "d_volume", "d_shape"],
        &rows,
    )?;
    vol_chart.save(&dir.join("volume.png"))?;
    shape_chart.save(&dir.join("shape.png"))?;
    let mut sweep = String::from("| nRT (J) | min volume | final volume |\n|---|---|---|\n");
    let mut sweep_rows = Vec::new();
    let mut needed: Option<f64> = None;
    for nrt in SWEEP {
        let r = drop(false, nrt)?;
        sweep.push_str(&format!("| {nrt} | {:.3} | {:.3} |\n", r.min_ratio, r.final_ratio));
        sweep_rows.push(vec![nrt, r.min_ratio, r.final_ratio]);
        if needed.is_none() && r.min_ratio >= HOLDS {
            needed = Some(nrt);
        }
    }
    write_csv(&dir.join("one_layer_sweep.csv"), &["nrt", "min_volume", "final_volume"], &sweep_rows)?;
    let a = runs[0].min_ratio < COLLAPSED;
    let b = runs[1].min_ratio >= COLLAPSED;
    let c = runs[2].min_ratio >= HOLDS;
    let d = runs[3].min_ratio >= HOLDS;
    let yes = |ok: bool| if ok { "holds" } else { "does not hold" };
    let body = format!(
        "The thesis's level-1 uniform sphere (18 particles per layer, radius 0.5 m, inner layer 0.4 m), KS 800 N/m, KD 15 N s/m, RKS 700 N/m, RKD 50 N s/m, 1 kg per particle, dropped with its lowest point 0.5 m above the floor (restitution 0.5, friction 0.3); RK4, h = {DT} s, {DURATION} s. Volumes are of the outer surface. Collapsed: volume below {COLLAPSED} of the start at some time; holds its shape: never below {HOLDS}.\n\n{table}\n\
{}- (a) one layer without gas collapses: {}\n- (b) gas keeps one layer from collapsing: {}\n- (c) two layers without gas hold their shape: {}\n- (d) two layers with gas hold their shape: {}\n\n\
         **How much gas does one layer need?** Same drop, one layer, nRT swept (not part of the verdict):\n\n{sweep}\n{}\n\
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
            Some(n) => format!("With these springs one layer first keeps {HOLDS} of its volume at nRT = {n} J."),
            None => format!(
                "No gas constant up to {} J keeps one layer above {HOLDS} of its volume.",
                SWEEP[SWEEP.len() - 1]
            ),
        }
    );
    Ok(Outcome {
        finding: None,
        passed: a && b && c && d,
        body,
        files: vec!["collapse.csv".into(), "one_layer_sweep.csv".into(), "volume.png".into(), "shape.png".into()],
    })
}
