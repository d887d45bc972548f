//! Line and scatter plots drawn in Rust (plotters, bitmap backend) and saved as PNG,
//! with a font kept in the repository so no system font or C library is needed.

use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::FontStyle;

/// DejaVu Sans (Bitstream Vera licence, see `assets/DejaVuSans-LICENSE.txt`).
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is compiled in and valid, so registration cannot fail.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// A line.
    Line,
    /// Markers only.
    Points,
    /// A line with markers.
    LinePoints,
    /// A dashed reference line.
    Dashed,
}

/// One named series of (x, y) points.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Points.
    pub points: Vec<(f64, f64)>,
    /// Drawing style.
    pub style: Style,
}

impl Series {
    /// A series.
    #[must_use]
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>, style: Style) -> Self {
        Self { name: name.into(), points, style }
    }
}

/// A 2-D chart.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Title.
    pub title: String,
    /// x-axis label (with unit).
    pub x_label: String,
    /// y-axis label (with unit).
    pub y_label: String,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// Series.
    pub series: Vec<Series>,
    /// Where the legend goes.
    pub legend: Legend,
}

/// Legend placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Legend {
    /// Upper right corner.
    UpperRight,
    /// Lower right corner.
    LowerRight,
    /// Upper left corner.
    UpperLeft,
    /// Lower left corner.
    LowerLeft,
}

/// Tick label: short decimals, or powers of ten for very small or large values.
fn tick(v: &f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".to_owned()
    } else if !(1e-3..1e5).contains(&a) {
        let s = format!("{v:.1e}");
        s.replace(".0e", "e")
    } else {
        let s = format!("{v:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s.is_empty() || s == "-" { "0".to_owned() } else { s.to_owned() }
    }
}

/// Distinct colours for series.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Image size, pixels.
const SIZE: (u32, u32) = (900, 600);

impl Chart {
    /// A chart with linear axes.
    #[must_use]
    pub fn new(title: impl Into<String>, x_label: impl Into<String>, y_label: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            log_x: false,
            log_y: false,
            series: Vec::new(),
            legend: Legend::UpperRight,
        }
    }

    /// Adds a series.
    #[must_use]
    pub fn with(mut self, s: Series) -> Self {
        self.series.push(s);
        self
    }

    /// Places the legend.
    #[must_use]
    pub fn legend(mut self, at: Legend) -> Self {
        self.legend = at;
        self
    }

    /// Uses logarithmic axes.
    #[must_use]
    pub fn log_log(mut self) -> Self {
        self.log_x = true;
        self.log_y = true;
        self
    }

    fn range(&self, pick: impl Fn(&(f64, f64)) -> f64, log: bool) -> (f64, f64) {
        let vals =
            self.series.iter().flat_map(|s| s.points.iter().map(&pick)).filter(|v| v.is_finite() && (!log || *v > 0.0));
        let (lo, hi) = vals.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
        if !lo.is_finite() {
            return if log { (0.1, 1.0) } else { (0.0, 1.0) };
        }
        if log {
            let (lo, hi) = if hi > lo { (lo, hi) } else { (lo / 2.0, hi * 2.0) };
            (lo / 1.5, hi * 1.5)
        } else {
            let pad = if hi > lo { 0.05 * (hi - lo) } else { lo.abs().max(1.0) * 0.1 };
            (lo - pad, hi + pad)
        }
    }

    /// Renders the chart as a PNG file.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        register_font();
        let mut buf = vec![255u8; (SIZE.0 * SIZE.1 * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut buf, SIZE).into_drawing_area();
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            let (x0, x1) = self.range(|p| p.0, self.log_x);
            let (y0, y1) = self.range(|p| p.1, self.log_y);
            let font = ("sans-serif", 16).into_font();
            macro_rules! draw {
                ($chart:expr) => {{
                    let mut chart = $chart;
                    chart
                        .configure_mesh()
                        .x_desc(self.x_label.as_str())
                        .y_desc(self.y_label.as_str())
                        .label_style(("sans-serif", 14))
                        .axis_desc_style(("sans-serif", 16))
                        .light_line_style(RGBColor(235, 235, 235))
                        .x_labels(if self.log_x { 6 } else { 10 })
                        .y_labels(if self.log_y { 12 } else { 10 })
                        .x_label_formatter(&tick)
                        .y_label_formatter(&tick)
                        .draw()
                        .map_err(|e| e.to_string())?;
                    for (k, s) in self.series.iter().enumerate() {
                        let color = PALETTE[k % PALETTE.len()];
                        let pts: Vec<(f64, f64)> = s
                            .points
                            .iter()
                            .copied()
                            .filter(|(x, y)| {
                                x.is_finite() && y.is_finite() && (!self.log_x || *x > 0.0) && (!self.log_y || *y > 0.0)
                            })
                            .collect();
                        let legend_color = color;
                        match s.style {
                            Style::Line | Style::LinePoints => {
                                chart
                                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                                    .map_err(|e| e.to_string())?
                                    .label(s.name.as_str())
                                    .legend(move |(x, y)| {
                                        PathElement::new(vec![(x, y), (x + 20, y)], legend_color.stroke_width(2))
                                    });
                                if s.style == Style::LinePoints {
                                    chart
                                        .draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))
                                        .map_err(|e| e.to_string())?;
                                }
                            }
                            Style::Points => {
                                chart
                                    .draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))
                                    .map_err(|e| e.to_string())?
                                    .label(s.name.as_str())
                                    .legend(move |(x, y)| Circle::new((x + 10, y), 4, legend_color.filled()));
                            }
                            Style::Dashed => {
                                chart
                                    .draw_series(DashedLineSeries::new(pts.clone(), 8, 5, color.stroke_width(2)))
                                    .map_err(|e| e.to_string())?
                                    .label(s.name.as_str())
                                    .legend(move |(x, y)| {
                                        PathElement::new(vec![(x, y), (x + 20, y)], legend_color.stroke_width(1))
                                    });
                            }
                        }
                    }
                    chart
                        .configure_series_labels()
                        .background_style(WHITE.mix(0.85))
                        .border_style(BLACK)
                        .label_font(("sans-serif", 14))
                        .position(match self.legend {
                            Legend::UpperRight => SeriesLabelPosition::UpperRight,
                            Legend::LowerRight => SeriesLabelPosition::LowerRight,
                            Legend::UpperLeft => SeriesLabelPosition::UpperLeft,
                            Legend::LowerLeft => SeriesLabelPosition::LowerLeft,
                        })
                        .draw()
                        .map_err(|e| e.to_string())?;
                }};
            }
            let mut builder = ChartBuilder::on(&root);
            builder.caption(self.title.as_str(), font).margin(15).x_label_area_size(45).y_label_area_size(80);
            match (self.log_x, self.log_y) {
                (false, false) => draw!(builder.build_cartesian_2d(x0..x1, y0..y1).map_err(|e| e.to_string())?),
                (true, true) => draw!(
                    builder.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale()).map_err(|e| e.to_string())?
                ),
                (true, false) => {
                    draw!(builder.build_cartesian_2d((x0..x1).log_scale(), y0..y1).map_err(|e| e.to_string())?)
                }
                (false, true) => {
                    draw!(builder.build_cartesian_2d(x0..x1, (y0..y1).log_scale()).map_err(|e| e.to_string())?)
                }
            }
            root.present().map_err(|e| e.to_string())?;
        }
        crate::image::save_rgb_png(path, SIZE.0, SIZE.1, &buf).map_err(|e| e.to_string())
    }
}
