//! The metrics table: one CSV row per sample of [`wobble::metrics::Metrics`].

use wobble::metrics::Metrics;

/// Column names of the metrics CSV, in order, each with its SI unit (`_s`,
/// `_J`, `_m`, ...; strain, iterations, residual and counts have none).
///
/// The broad phase's candidate-pair count is not among them: it depends on when
/// the candidate list was last rebuilt (a cache), not on the physics, so a resumed
/// run could not reproduce it; `World::last_contact().pairs` still reports it.
pub const COLUMNS: [&str; 29] = [
    "step",
    "time_s",
    "kinetic_J",
    "potential_J",
    "total_J",
    "momentum_x_kg_m_per_s",
    "momentum_y_kg_m_per_s",
    "momentum_z_kg_m_per_s",
    "angular_x_kg_m2_per_s",
    "angular_y_kg_m2_per_s",
    "angular_z_kg_m2_per_s",
    "strain_mean",
    "strain_max",
    "bbox_min_x_m",
    "bbox_min_y_m",
    "bbox_min_z_m",
    "bbox_max_x_m",
    "bbox_max_y_m",
    "bbox_max_z_m",
    "volume_m3",
    "iterations",
    "residual",
    "newton_residual",
    "warm_start_order",
    "contact_proximity",
    "ccd_hits",
    "impact_zone_rounds",
    "frozen_particles",
    "failsafe_steps",
];

/// The metrics table of a run, kept whole in memory and written to
/// `metrics.csv` atomically at flush points (frames, checkpoints, the end), so the
/// file on disk always ends with a complete row.
#[derive(Debug, Default)]
pub struct MetricsTable {
    text: String,
}

impl MetricsTable {
    /// A table with only the header.
    #[must_use]
    pub fn new() -> Self {
        Self { text: COLUMNS.join(",") + "\n" }
    }

    /// The rows of an earlier `metrics.csv` up to step `last` (for a resumed run
    /// that wrote a row every `every` steps). Errors when the header differs, a
    /// row is cut or unreadable, or the table stops short of the last row such a
    /// run wrote by step `last` (a table older than its checkpoint).
    pub fn resume(text: &str, last: u64, every: u64) -> Result<Self, String> {
        let mut table = Self::new();
        let mut lines = text.split_inclusive('\n');
        if lines.next() != Some(table.text.as_str()) {
            return Err("its header is not this wobble's metrics header".into());
        }
        let mut kept = None;
        for (k, line) in lines.enumerate() {
            let step = line
                .strip_suffix('\n')
                .and_then(|l| l.split(',').next())
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| format!("line {} is incomplete or not a metrics row", k + 2))?;
            if step > last {
                break;
            }
            kept = Some(step);
            table.text.push_str(line);
        }
        let expected = last - last % every.max(1);
        if kept != Some(expected) {
            return Err(format!(
                "its rows end at step {} but the checkpoint at step {last} follows a row at step {expected}",
                kept.map_or_else(|| "(none)".to_owned(), |s| s.to_string())
            ));
        }
        Ok(table)
    }

    /// Appends one row.
    pub fn row(&mut self, m: &Metrics) {
        let v = |x: f64| format!("{x:e}");
        let fields = [
            m.step.to_string(),
            v(m.time),
            v(m.kinetic),
            v(m.potential),
            v(m.total),
            v(m.momentum.x),
            v(m.momentum.y),
            v(m.momentum.z),
            v(m.angular_momentum.x),
            v(m.angular_momentum.y),
            v(m.angular_momentum.z),
            v(m.strain_mean),
            v(m.strain_max),
            v(m.bbox_min.x),
            v(m.bbox_min.y),
            v(m.bbox_min.z),
            v(m.bbox_max.x),
            v(m.bbox_max.y),
            v(m.bbox_max.z),
            m.volume.map(v).unwrap_or_default(),
            m.iterations.to_string(),
            v(m.residual),
            v(m.newton_residual),
            m.warm_start_order.to_string(),
            m.contact_proximity.to_string(),
            m.ccd_hits.to_string(),
            m.impact_zone_rounds.to_string(),
            m.frozen_particles.to_string(),
            m.failsafe_steps.to_string(),
        ];
        self.text.push_str(&fields.join(","));
        self.text.push('\n');
    }

    /// The CSV text.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }
}
