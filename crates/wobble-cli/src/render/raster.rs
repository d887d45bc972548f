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
    pub fn triangle(&mut self, p: [DVec3; 3], c: [Rgb; 3]) {
        let s = SUPERSAMPLE as f64;
        let q = p.map(|v| DVec3::new(v.x * s, v.y * s, v.z));
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
    pub fn line(&mut self, a: DVec3, b: DVec3, width: f64, c: Rgb) {
        let s = SUPERSAMPLE as f64;
        let (a, b) = (DVec3::new(a.x * s, a.y * s, a.z), DVec3::new(b.x * s, b.y * s, b.z));
        let d = (b - a).truncate();
        let len = d.length();
        let r = 0.5 * width * s;
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
