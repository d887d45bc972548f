//! A z-buffered software rasteriser: triangles with per-vertex colours (Gouraud),
//! depth-tested thick lines and discs, on a supersampled canvas.

use glam::DVec3;

/// Supersampling factor per axis (2 → 4 samples per output pixel).
pub const SUPERSAMPLE: usize = 2;

/// A colour, components in [0, 1].
pub type Rgb = [f32; 3];

/// A canvas of colour and depth at `SUPERSAMPLE` times the output size.
pub struct Canvas {
    /// Supersampled width, pixels.
    pub width: usize,
    /// Supersampled height, pixels.
    pub height: usize,
    color: Vec<Rgb>,
    depth: Vec<f32>,
}

impl Canvas {
    /// A canvas for an output image of `width` × `height`, filled with a vertical
    /// gradient from `top` to `bottom`.
    #[must_use]
    pub fn new(width: usize, height: usize, top: Rgb, bottom: Rgb) -> Canvas {
        let (w, h) = (width * SUPERSAMPLE, height * SUPERSAMPLE);
        let mut color = Vec::with_capacity(w * h);
        for y in 0..h {
            let t = y as f32 / (h - 1).max(1) as f32;
            let c = [0, 1, 2].map(|k| top[k] + (bottom[k] - top[k]) * t);
            color.extend(std::iter::repeat_n(c, w));
        }
        Canvas { width: w, height: h, color, depth: vec![f32::INFINITY; w * h] }
    }

    /// Writes a sample if it is nearer than what is there.
    #[inline]
    fn plot(&mut self, x: usize, y: usize, z: f32, c: Rgb) {
        let i = y * self.width + x;
        if z < self.depth[i] {
            self.depth[i] = z;
            self.color[i] = c;
        }
    }

    /// Fills a triangle given in output-pixel coordinates (x, y) with depth z, and a
    /// colour per vertex, interpolated.
    ///
    /// The triangle is first clipped to the canvas (with a one-pixel guard band), so
    /// a vertex projected millions of pixels away costs no more than one on screen
    /// and keeps the barycentric arithmetic well conditioned; non-finite vertices
    /// are skipped.
    pub fn triangle(&mut self, p: [DVec3; 3], c: [Rgb; 3]) {
        let s = SUPERSAMPLE as f64;
        let q = p.map(|v| DVec3::new(v.x * s, v.y * s, v.z));
        if !q.iter().all(|v| v.is_finite()) {
            return;
        }
        let poly = clip_polygon(
            &[(q[0], c[0]), (q[1], c[1]), (q[2], c[2])],
            [-1.0, self.width as f64 + 1.0, -1.0, self.height as f64 + 1.0],
        );
        for k in 1..poly.len().saturating_sub(1) {
            let (a, b, d) = (poly[0], poly[k], poly[k + 1]);
            self.fill([a.0, b.0, d.0], [a.1, b.1, d.1]);
        }
    }

    /// Fills a triangle in canvas (supersampled) coordinates that lies within the
    /// guard band.
    fn fill(&mut self, q: [DVec3; 3], c: [Rgb; 3]) {
        let area = (q[1].x - q[0].x) * (q[2].y - q[0].y) - (q[2].x - q[0].x) * (q[1].y - q[0].y);
        if area.abs() < 1e-12 {
            return;
        }
        let (x0, x1) = (
            q.iter().map(|v| v.x).fold(f64::INFINITY, f64::min),
            q.iter().map(|v| v.x).fold(f64::NEG_INFINITY, f64::max),
        );
        let (y0, y1) = (
            q.iter().map(|v| v.y).fold(f64::INFINITY, f64::min),
            q.iter().map(|v| v.y).fold(f64::NEG_INFINITY, f64::max),
        );
        let xa = x0.floor().max(0.0) as usize;
        let xb = (x1.ceil() as i64).min(self.width as i64 - 1);
        let ya = y0.floor().max(0.0) as usize;
        let yb = (y1.ceil() as i64).min(self.height as i64 - 1);
        if xb < 0 || yb < 0 {
            return;
        }
        for y in ya..=yb as usize {
            let py = y as f64 + 0.5;
            for x in xa..=xb as usize {
                let px = x as f64 + 0.5;
                let w0 = ((q[1].x - px) * (q[2].y - py) - (q[2].x - px) * (q[1].y - py)) / area;
                let w1 = ((q[2].x - px) * (q[0].y - py) - (q[0].x - px) * (q[2].y - py)) / area;
                let w2 = 1.0 - w0 - w1;
                if w0 < 0.0 || w1 < 0.0 || w2 < 0.0 {
                    continue;
                }
                let z = (w0 * q[0].z + w1 * q[1].z + w2 * q[2].z) as f32;
                let (a, b, d) = (w0 as f32, w1 as f32, w2 as f32);
                let col = [0, 1, 2].map(|k| a * c[0][k] + b * c[1][k] + d * c[2][k]);
                self.plot(x, y, z, col);
            }
        }
    }

    /// Draws a segment `width` output pixels wide, depth-tested with a small bias
    /// toward the viewer so lines on a surface show.
    ///
    /// The segment is clipped to the canvas (widened by the line's radius) before it
    /// is stamped, so the number of stamps is bounded by the canvas size whatever
    /// the endpoints; non-finite endpoints draw nothing.
    pub fn line(&mut self, a: DVec3, b: DVec3, width: f64, c: Rgb) {
        let s = SUPERSAMPLE as f64;
        let (a, b) = (DVec3::new(a.x * s, a.y * s, a.z), DVec3::new(b.x * s, b.y * s, b.z));
        let r = 0.5 * width * s;
        if !(a.is_finite() && b.is_finite() && r.is_finite()) {
            return;
        }
        let m = r + 1.0;
        let Some((a, b)) = clip_segment(a, b, [-m, self.width as f64 + m, -m, self.height as f64 + m]) else {
            return;
        };
        let len = (b - a).truncate().length();
        let steps = (len / (0.5 * r.max(0.5))).ceil().max(1.0) as usize;
        for k in 0..=steps {
            let t = k as f64 / steps as f64;
            let p = a.lerp(b, t);
            self.disc_px(p, r, c, 1e-4);
        }
    }

    /// Draws a disc of `radius` output pixels centred on a projected point.
    pub fn disc(&mut self, p: DVec3, radius: f64, c: Rgb) {
        let s = SUPERSAMPLE as f64;
        self.disc_px(DVec3::new(p.x * s, p.y * s, p.z), radius * s, c, 0.0);
    }

    fn disc_px(&mut self, p: DVec3, r: f64, c: Rgb, bias: f64) {
        let (xa, xb) = ((p.x - r).floor().max(0.0) as i64, ((p.x + r).ceil() as i64).min(self.width as i64 - 1));
        let (ya, yb) = ((p.y - r).floor().max(0.0) as i64, ((p.y + r).ceil() as i64).min(self.height as i64 - 1));
        let z = (p.z - bias) as f32;
        for y in ya..=yb {
            for x in xa..=xb {
                let (dx, dy) = (x as f64 + 0.5 - p.x, y as f64 + 0.5 - p.y);
                if dx * dx + dy * dy <= r * r {
                    self.plot(x as usize, y as usize, z, c);
                }
            }
        }
    }

    /// Averages the supersamples into 8-bit RGB, row-major.
    #[must_use]
    pub fn resolve(&self) -> Vec<u8> {
        let (w, h) = (self.width / SUPERSAMPLE, self.height / SUPERSAMPLE);
        let mut out = Vec::with_capacity(w * h * 3);
        let n = (SUPERSAMPLE * SUPERSAMPLE) as f32;
        for y in 0..h {
            for x in 0..w {
                let mut sum = [0.0f32; 3];
                for sy in 0..SUPERSAMPLE {
                    for sx in 0..SUPERSAMPLE {
                        let c = self.color[(y * SUPERSAMPLE + sy) * self.width + x * SUPERSAMPLE + sx];
                        for k in 0..3 {
                            sum[k] += c[k];
                        }
                    }
                }
                out.extend(sum.map(|v| ((v / n).clamp(0.0, 1.0) * 255.0).round() as u8));
            }
        }
        out
    }
}

/// Clips the segment a–b to the rectangle `[x_min, x_max, y_min, y_max]` in x and
/// y (Liang–Barsky); z is interpolated along, which is right for a depth that is
/// affine in screen space. `None` when nothing of it is inside.
#[must_use]
pub fn clip_segment(a: DVec3, b: DVec3, rect: [f64; 4]) -> Option<(DVec3, DVec3)> {
    let d = b - a;
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [(-d.x, a.x - rect[0]), (d.x, rect[1] - a.x), (-d.y, a.y - rect[2]), (d.y, rect[3] - a.y)] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    (t0 <= t1).then(|| (a + d * t0, a + d * t1))
}

/// Clips a convex polygon with per-vertex colours to the rectangle
/// `[x_min, x_max, y_min, y_max]` (Sutherland–Hodgman), interpolating depth and
/// colour linearly along the cut edges.
#[must_use]
pub fn clip_polygon(poly: &[(DVec3, Rgb)], rect: [f64; 4]) -> Vec<(DVec3, Rgb)> {
    // Signed distance inside each edge: x − x_min, x_max − x, y − y_min, y_max − y.
    let inside = |k: usize, p: DVec3| match k {
        0 => p.x - rect[0],
        1 => rect[1] - p.x,
        2 => p.y - rect[2],
        _ => rect[3] - p.y,
    };
    let mut out: Vec<(DVec3, Rgb)> = poly.to_vec();
    for k in 0..4 {
        let input = std::mem::take(&mut out);
        for (i, &(p, pc)) in input.iter().enumerate() {
            let (q, qc) = input[(i + 1) % input.len()];
            let (dp, dq) = (inside(k, p), inside(k, q));
            if dp >= 0.0 {
                out.push((p, pc));
            }
            if (dp >= 0.0) != (dq >= 0.0) {
                let t = dp / (dp - dq);
                let c = [0, 1, 2].map(|j| pc[j] + (qc[j] - pc[j]) * t as f32);
                out.push((p + (q - p) * t, c));
            }
        }
        if out.is_empty() {
            break;
        }
    }
    out
}
