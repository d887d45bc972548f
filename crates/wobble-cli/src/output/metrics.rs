//! The metrics table: one CSV row per sample of [`wobble::metrics::Metrics`].

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use wobble::metrics::Metrics;

/// Column names of the metrics CSV, in order.
pub const COLUMNS: [&str; 28] = [
    "step",
    "time",
    "kinetic",
    "potential",
    "total",
    "momentum_x",
    "momentum_y",
    "momentum_z",
    "angular_x",
    "angular_y",
    "angular_z",
    "strain_mean",
    "strain_max",
    "bbox_min_x",
    "bbox_min_y",
    "bbox_min_z",
    "bbox_max_x",
    "bbox_max_y",
    "bbox_max_z",
    "volume",
    "iterations",
    "residual",
    "contact_pairs",
    "contact_proximity",
    "ccd_hits",
    "impact_zone_rounds",
    "frozen_particles",
    "failsafe_steps",
];

/// Writes metrics rows to a CSV file.
pub struct MetricsWriter {
    out: BufWriter<File>,
}

impl MetricsWriter {
    /// Creates the file and writes the header.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let mut out = BufWriter::new(File::create(path)?);
        writeln!(out, "{}", COLUMNS.join(","))?;
        Ok(Self { out })
    }

    /// Appends one row.
    pub fn row(&mut self, m: &Metrics) -> std::io::Result<()> {
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
            m.contact_pairs.to_string(),
            m.contact_proximity.to_string(),
            m.ccd_hits.to_string(),
            m.impact_zone_rounds.to_string(),
            m.frozen_particles.to_string(),
            m.failsafe_steps.to_string(),
        ];
        writeln!(self.out, "{}", fields.join(","))
    }

    /// Flushes to disk.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
