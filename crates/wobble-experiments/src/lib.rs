//! Experiments: named studies that build worlds, run them, measure, plot, and state
//! whether a claim holds. `wobble experiment NAME --out DIR` writes into
//! `DIR/NAME/`: CSV data, PNG plots, and `summary.md` with the claim, the measured
//! figures and a verdict: PASS, FAIL or FINDING. A FAIL is reported as measured —
//! never a reason to tune the setup into agreement. A FINDING is a claim that a
//! faithful setup cannot reproduce, with the analysis that says why: it carries its
//! own criterion, fixed with the analysis before the run (the measurement must
//! agree with what the analysis predicts, else the verdict stays FAIL), and its
//! summary states the claim, what was measured, why they differ and the command
//! that reproduces it.
//!
//! A library crate, so that the command-line tool (a thin front: `wobble
//! experiment`), tests and the Python side run the same code: [`registry`] lists
//! the experiments, [`run`] runs one into a folder.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub mod bounce;
pub mod cloth_constraints;
pub mod contact;
pub mod cubic_force_curves;
pub mod cubic_heavy;
pub mod cubic_jacobian_damping;
pub mod cubic_stretch_sweep;
pub mod cubic_timing;
pub mod generalized_asymmetric;
pub mod generalized_jelly_cube;
pub mod generalized_mobile;
pub mod generalized_twisted_bar;
pub mod integrator_convergence;
pub mod mesh_shape;
pub mod sphere_volume;
pub mod terzopoulos_integrity;
pub mod terzopoulos_semi_implicit;
pub mod terzopoulos_shapes;
pub mod thesis;
pub mod twolayer_collapse;
pub mod twolayer_inertia;
pub mod twolayer_integrators;
pub mod twolayer_stability;
pub mod verlet_emitter;

/// The analysis behind a FINDING (see the module docs).
#[derive(Debug)]
pub struct Finding {
    /// What was measured against the claim, in a sentence.
    pub measured: String,
    /// Why the claim cannot hold for a faithful implementation.
    pub why: String,
    /// The FINDING's own criterion: whether the measurement agrees with what the
    /// analysis predicts (stated in `why`). When it does not, the verdict is FAIL.
    pub confirmed: bool,
}

/// An experiment's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The claim held.
    Pass,
    /// The claim did not hold, and no analysis explains why.
    Fail,
    /// The claim did not hold, as an analysis of a faithful setup predicts.
    Finding,
}

impl Verdict {
    /// The verdict as printed: PASS, FAIL or FINDING.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Finding => "FINDING",
        }
    }
}

/// What an experiment produced.
#[derive(Debug)]
pub struct Outcome {
    /// Whether the claim held.
    pub passed: bool,
    /// When the claim cannot hold for a faithful setup: the analysis and whether
    /// the measurement confirms it.
    pub finding: Option<Finding>,
    /// Markdown body of the summary: measured figures and tables.
    pub body: String,
    /// Files written (relative to the experiment's directory).
    pub files: Vec<String>,
}

impl Outcome {
    /// PASS when the claim held; FINDING when it did not and the analysis of a
    /// faithful setup predicted so (and the measurement confirms the prediction);
    /// FAIL otherwise.
    #[must_use]
    pub fn verdict(&self) -> Verdict {
        match (&self.passed, &self.finding) {
            (true, _) => Verdict::Pass,
            (false, Some(f)) if f.confirmed => Verdict::Finding,
            _ => Verdict::Fail,
        }
    }
}

/// A named study.
pub struct Experiment {
    /// Name on the command line.
    pub name: &'static str,
    /// One-line title.
    pub title: &'static str,
    /// The claim tested.
    pub claim: &'static str,
    /// Runs it, writing into the given directory.
    pub run: fn(&Path) -> Result<Outcome, String>,
}

/// Every experiment, in the order `all` runs them.
#[must_use]
pub fn registry() -> Vec<Experiment> {
    vec![
        integrator_convergence::EXPERIMENT,
        bounce::EXPERIMENT,
        verlet_emitter::EXPERIMENT,
        cloth_constraints::EXPERIMENT,
        terzopoulos_integrity::BOX_DROP,
        terzopoulos_integrity::RUBBER_BALLS,
        terzopoulos_shapes::CORNER_LIFT,
        terzopoulos_shapes::BUCKLING,
        terzopoulos_shapes::INFLATION,
        terzopoulos_shapes::TWIST,
        terzopoulos_semi_implicit::EXPERIMENT,
        twolayer_stability::EXPERIMENT,
        twolayer_collapse::EXPERIMENT,
        twolayer_inertia::EXPERIMENT,
        twolayer_integrators::EXPERIMENT,
        sphere_volume::EXPERIMENT,
        mesh_shape::EXPERIMENT,
        cubic_force_curves::EXPERIMENT,
        cubic_stretch_sweep::EXPERIMENT,
        cubic_jacobian_damping::EXPERIMENT,
        generalized_twisted_bar::EXPERIMENT,
        generalized_jelly_cube::EXPERIMENT,
        generalized_mobile::EXPERIMENT,
        generalized_asymmetric::EXPERIMENT,
        cubic_timing::EXPERIMENT,
        cubic_heavy::HEAVY_BALL,
        cubic_heavy::HANGING_CUBE,
        cubic_heavy::SOLID_CUBE,
        contact::SELF_FOLD,
        contact::STACK,
        contact::BALLS,
        contact::COST,
    ]
}

/// Runs `exp` into `out/<name>/` and writes `summary.md`; returns the outcome.
pub fn run(exp: &Experiment, out: &Path) -> Result<Outcome, String> {
    let dir: PathBuf = out.join(exp.name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let outcome = (exp.run)(&dir)?;
    let mut md = String::new();
    let _ = writeln!(md, "# {} — {}\n", exp.name, exp.title);
    let _ = writeln!(md, "**Claim tested:** {}\n", exp.claim);
    let _ = writeln!(md, "**Result: {}**\n", outcome.verdict().label());
    if let Some(f) = &outcome.finding {
        let _ = writeln!(md, "## Finding\n");
        let _ = writeln!(md, "- **The paper's claim:** {}", exp.claim);
        let _ = writeln!(md, "- **Measured:** {}", f.measured);
        let _ = writeln!(md, "- **Why they differ:** {}", f.why);
        let _ = writeln!(
            md,
            "- **The analysis's own check:** {}",
            if f.confirmed {
                "the measurement agrees with what the analysis predicts"
            } else {
                "the measurement does NOT agree with what the analysis predicts, so the verdict stays FAIL"
            }
        );
        let _ = writeln!(md, "- **Reproduce:** `wobble experiment {} --out DIR`\n", exp.name);
    }
    md.push_str(&outcome.body);
    if !outcome.files.is_empty() {
        let _ = writeln!(md, "\n## Files\n");
        for f in &outcome.files {
            if f.ends_with(".png") {
                let _ = writeln!(md, "![{f}]({f})\n");
            } else {
                let _ = writeln!(md, "- [{f}]({f})");
            }
        }
    }
    md.push_str(&format!("\nReproduce with `wobble experiment {} --out DIR`.\n", exp.name));
    std::fs::write(dir.join("summary.md"), md).map_err(|e| format!("cannot write summary.md: {e}"))?;
    Ok(outcome)
}

/// Writes a CSV file with a header row.
pub fn write_csv(path: &Path, header: &[&str], rows: &[Vec<f64>]) -> Result<(), String> {
    let mut s = header.join(",");
    s.push('\n');
    for r in rows {
        let line: Vec<String> = r.iter().map(|v| format!("{v:e}")).collect();
        s.push_str(&line.join(","));
        s.push('\n');
    }
    std::fs::write(path, s).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Least-squares slope of log(y) against log(x).
#[must_use]
pub fn log_log_slope(points: &[(f64, f64)]) -> f64 {
    let pts: Vec<(f64, f64)> =
        points.iter().filter(|(x, y)| *x > 0.0 && *y > 0.0).map(|(x, y)| (x.ln(), y.ln())).collect();
    let n = pts.len() as f64;
    let (sx, sy) = pts.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) = pts.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + (x - mx) * (y - my), b + (x - mx) * (x - mx)));
    num / den
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(passed: bool, confirmed: Option<bool>) -> Outcome {
        let finding = confirmed.map(|confirmed| Finding { measured: "m".into(), why: "w".into(), confirmed });
        Outcome { passed, finding, body: String::new(), files: Vec::new() }
    }

    #[test]
    fn a_finding_needs_a_failed_claim_and_a_confirmed_analysis() {
        assert_eq!(outcome(true, None).verdict(), Verdict::Pass);
        assert_eq!(outcome(true, Some(true)).verdict(), Verdict::Pass);
        assert_eq!(outcome(false, None).verdict(), Verdict::Fail);
        assert_eq!(outcome(false, Some(false)).verdict(), Verdict::Fail);
        assert_eq!(outcome(false, Some(true)).verdict(), Verdict::Finding);
    }

    #[test]
    fn a_finding_summary_states_claim_measurement_reason_and_command() {
        fn run(_: &Path) -> Result<Outcome, String> {
            Ok(Outcome {
                passed: false,
                finding: Some(Finding {
                    measured: "ratio 1.3".into(),
                    why: "stability intervals".into(),
                    confirmed: true,
                }),
                body: "body".into(),
                files: Vec::new(),
            })
        }
        let exp = Experiment { name: "probe", title: "t", claim: "the claim", run };
        let out = std::env::temp_dir().join(format!("wobble-finding-{}", std::process::id()));
        let o = super::run(&exp, &out).expect("run");
        let md = std::fs::read_to_string(out.join("probe").join("summary.md")).expect("summary");
        let _ = std::fs::remove_dir_all(&out);
        assert_eq!(o.verdict(), Verdict::Finding);
        for needle in [
            "**Result: FINDING**",
            "the claim",
            "ratio 1.3",
            "stability intervals",
            "`wobble experiment probe --out DIR`",
        ] {
            assert!(md.contains(needle), "summary lacks {needle}:\n{md}");
        }
    }
}
