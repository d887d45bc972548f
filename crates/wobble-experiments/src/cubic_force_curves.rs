//! `cubic-force-curves`: the force laws of paper 000 (Fig. 1 and 2; physics notes
//! §1–3) as curves, with L = 1, K = 1, a1 = 1.1, a2 = 0.9, K2 = 2K and K1 ∈ {2K,
//! 4K, 6K}.
//!
//! Checked on the written data: every law has g(L) = 0 and g'(L) = K; each cubic
//! has g'(a1 L) = K1 and g'(a2 L) = K2 (1e-9 relative: the curves are evaluated,
//! not solved, so this is rounding only); StVK's slope is negative below L/√3 (it
//! softens under compression, the reason its solids collapse) while every cubic's
//! slope stays positive over the whole range [0, 2] (it keeps resisting); and beyond
//! a1 L the cubic is stiffer than the linear spring, more so for larger K1.

use std::fmt::Write as _;
use std::path::Path;

use wobble::force::{CubicLaw, SpringLaw};

use super::{Experiment, Outcome, write_csv};
use wobble_viz::plot::{Chart, Legend, Series, Style};

/// Registry entry.
pub const EXPERIMENT: Experiment = Experiment {
    name: "cubic-force-curves",
    title: "force and stiffness of the linear, StVK and full cubic springs (000 Fig. 1–2)",
    claim: "the constraint-based cubic meets g(L) = 0, g'(L) = K, g'(a1 L) = K1, g'(a2 L) = K2; unlike two-term StVK, whose stiffness turns negative below L/√3, it keeps a positive stiffness under strong compression, and it stiffens beyond a1 L more than a linear spring, increasingly with K1",
    run,
};

const A1: f64 = 1.1;
const A2: f64 = 0.9;
const K2: f64 = 2.0;
const K1S: [f64; 3] = [2.0, 4.0, 6.0];

fn laws() -> Result<Vec<(String, SpringLaw)>, String> {
    let mut out = vec![("spring".to_owned(), SpringLaw::Linear), ("stvk".to_owned(), SpringLaw::StVK)];
    for k1 in K1S {
        let law = CubicLaw::new(1.0, A1, k1, A2, K2, 1.0).map_err(|e| e.to_string())?;
        out.push((format!("cubic_k1_{}k", k1 as u32), SpringLaw::Cubic(law)));
    }
    Ok(out)
}

fn run(dir: &Path) -> Result<Outcome, String> {
    let laws = laws()?;
    // L = 1 m and K = 1 N/m: r in m, g in N, g' in N/m.
    let header = |unit: &str| -> Vec<String> {
        std::iter::once("r_m".to_owned()).chain(laws.iter().map(|(n, _)| format!("{n}_{unit}"))).collect()
    };
    let (force_header, stiffness_header) = (header("N"), header("N_per_m"));
    let force_r: Vec<f64> = (0..=200).map(|i| f64::from(i) * 0.01).collect();
    let stiff_r: Vec<f64> = (0..=80).map(|i| 0.8 + f64::from(i) * 0.005).collect();
    let table = |rs: &[f64], pick: fn((f64, f64)) -> f64| -> Vec<Vec<f64>> {
        rs.iter()
            .map(|&r| std::iter::once(r).chain(laws.iter().map(|(_, l)| pick(l.magnitude(r, 1.0, 1.0)))).collect())
            .collect()
    };
    let force = table(&force_r, |m| m.0);
    let stiffness = table(&stiff_r, |m| m.1);
    fn refs(h: &[String]) -> Vec<&str> {
        h.iter().map(String::as_str).collect()
    }
    write_csv(&dir.join("force.csv"), &refs(&force_header), &force)?;
    write_csv(&dir.join("stiffness.csv"), &refs(&stiffness_header), &stiffness)?;
    let chart = |title: &str, y: &str, rows: &[Vec<f64>]| {
        let mut c = Chart::new(title, "r (L = 1)", y).legend(Legend::UpperLeft);
        for (k, (name, _)) in laws.iter().enumerate() {
            let style = if k < 2 { Style::Dashed } else { Style::Line };
            c = c.with(Series::new(name.clone(), rows.iter().map(|r| (r[0], r[k + 1])).collect(), style));
        }
        c
    };
    chart("Signed force magnitude g(r)", "g (K = 1)", &force).save(&dir.join("force.png"))?;
    chart("Stiffness g'(r)", "g' (K = 1)", &stiffness).save(&dir.join("stiffness.png"))?;

    let mut body = String::new();
    let mut ok = true;
    let mut check = |cond: bool, text: String| {
        let _ = writeln!(body, "- {} {text}", if cond { "✓" } else { "✗" });
        ok &= cond;
    };
    for (name, law) in &laws {
        let (g, dg) = law.magnitude(1.0, 1.0, 1.0);
        check(g.abs() < 1e-9 && (dg - 1.0).abs() < 1e-9, format!("`{name}`: g(L) = {g:.2e}, g'(L) = {dg:.12}"));
    }
    for (name, law) in &laws[2..] {
        let SpringLaw::Cubic(c) = law else { continue };
        let (d1, d2) = (law.magnitude(A1, 1.0, 1.0).1, law.magnitude(A2, 1.0, 1.0).1);
        check(
            (d1 - c.k1_ratio).abs() < 1e-9 * c.k1_ratio && (d2 - K2).abs() < 1e-9 * K2,
            format!("`{name}`: g'(a1 L) = {d1:.12} (K1 = {}), g'(a2 L) = {d2:.12} (K2 = {K2})", c.k1_ratio),
        );
        let min_slope = force_r.iter().map(|&r| law.magnitude(r, 1.0, 1.0).1).fold(f64::INFINITY, f64::min);
        check(min_slope > 0.0, format!("`{name}`: smallest stiffness over [0, 2] is {min_slope:.4} (> 0)"));
        let (gc, gl) = (law.magnitude(1.2, 1.0, 1.0).0, 0.2);
        check(gc > gl, format!("`{name}`: g(1.2 L) = {gc:.4} > linear {gl:.4}"));
    }
    let stvk_neg =
        force_r.iter().filter(|&&r| SpringLaw::StVK.magnitude(r, 1.0, 1.0).1 < 0.0).fold(0.0f64, |m, &r| m.max(r));
    check(
        (stvk_neg - 1.0 / 3f64.sqrt()).abs() < 0.011,
        format!("StVK: stiffness negative for r up to {stvk_neg:.2} on the grid (L/√3 = {:.4})", 1.0 / 3f64.sqrt()),
    );
    let g12: Vec<f64> = laws[2..].iter().map(|(_, l)| l.magnitude(1.2, 1.0, 1.0).0).collect();
    check(g12.windows(2).all(|w| w[1] > w[0]), format!("g(1.2 L) grows with K1: {g12:.4?}"));
    let mut text = String::from(
        "L = 1 m, K = 1 N/m, a1 = 1.1, a2 = 0.9, K2 = 2K; `force.csv` holds g(r) in N for r in [0, 2] m (step 0.01), `stiffness.csv` g'(r) in N/m for r in [0.8, 1.2] m (step 0.005).\n\n",
    );
    text.push_str(&body);
    Ok(Outcome {
        finding: None,
        passed: ok,
        body: text,
        files: vec!["force.csv".into(), "stiffness.csv".into(), "force.png".into(), "stiffness.png".into()],
    })
}
