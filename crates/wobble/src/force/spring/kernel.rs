//! The force loops: one monomorphised, vectorised loop per law over each run of
//! regularly spaced springs, and a scalar reference.

use std::sync::OnceLock;

use glam::DVec3;

use super::law::stvk_g;
use super::network::Run;
use super::{CHUNK, SpringLaw};

/// Force on end a of one spring: the scalar form of the kernel, operation for
/// operation, so that both give identical bits.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn scalar_force(
    law: SpringLaw,
    xa: DVec3,
    xb: DVec3,
    va: DVec3,
    vb: DVec3,
    rest: f64,
    k: f64,
    c: f64,
) -> DVec3 {
    let (mut dx, mut dy, mut dz) = (xb.x - xa.x, xb.y - xa.y, xb.z - xa.z);
    let l = (dx * dx + dy * dy + dz * dz).sqrt();
    // Coincident ends (l = 0) have no direction: the force is zero, not NaN. For
    // every l ≥ MIN_POSITIVE the max is l itself, so the bits are unchanged.
    let il = 1.0 / l.max(f64::MIN_POSITIVE);
    dx *= il;
    dy *= il;
    dz *= il;
    let dv = (vb.x - va.x) * dx + (vb.y - va.y) * dy + (vb.z - va.z) * dz;
    let f = law_magnitude(law, l, rest, k) + c * dv;
    DVec3::new(f * dx, f * dy, f * dz)
}

#[inline(always)]
fn law_magnitude(law: SpringLaw, l: f64, rest: f64, k: f64) -> f64 {
    law.g(l, rest, k)
}

/// Borrowed inputs of the run kernel.
pub(super) struct RunView<'a> {
    pub(super) runs: &'a [Run],
    pub(super) laws: &'a [SpringLaw],
    pub(super) x: [&'a [f64]; 3],
    pub(super) v: [&'a [f64]; 3],
    pub(super) rest: &'a [f64],
    pub(super) k: &'a [f64],
    pub(super) c: &'a [f64],
}

/// Instruction set of the run kernel, detected once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Portable code (SSE2 on x86-64).
    Portable,
    /// AVX2 + FMA available (FMA is not used: results stay bit-identical).
    Avx2,
    /// AVX-512F.
    Avx512,
}

impl Kernel {
    /// AVX2 when this CPU has it (AVX-512 measured no faster on the cloth
    /// benchmark and can lower the clock), else portable code; the
    /// `WOBBLE_KERNEL` environment variable (`portable`, `avx2`, `avx512`) picks
    /// another that this CPU supports. Every choice gives identical results.
    #[must_use]
    pub fn select() -> Kernel {
        static CHOICE: OnceLock<Kernel> = OnceLock::new();
        *CHOICE.get_or_init(|| {
            let best = Kernel::best_available();
            let default = if best == Kernel::Portable { Kernel::Portable } else { Kernel::Avx2 };
            match std::env::var("WOBBLE_KERNEL").as_deref() {
                Ok("portable") => Kernel::Portable,
                Ok("avx2") => default,
                Ok("avx512") => best,
                _ => default,
            }
        })
    }

    /// Every kernel this CPU can run (for tests of bitwise agreement).
    #[must_use]
    pub fn available() -> Vec<Kernel> {
        match Kernel::best_available() {
            Kernel::Portable => vec![Kernel::Portable],
            Kernel::Avx2 => vec![Kernel::Portable, Kernel::Avx2],
            Kernel::Avx512 => vec![Kernel::Portable, Kernel::Avx2, Kernel::Avx512],
        }
    }

    /// The widest instruction set this CPU supports.
    #[must_use]
    pub fn best_available() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Kernel::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Kernel::Avx2;
            }
        }
        Kernel::Portable
    }

    pub(super) fn run_block(self, view: &RunView<'_>, p0: usize, p1: usize, f: [&mut [f64]; 3]) {
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `select` only returns Avx512 when the CPU reports avx512f.
            Kernel::Avx512 => unsafe { run_block_avx512(view, p0, p1, f) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `select` only returns Avx2 when the CPU reports avx2.
            Kernel::Avx2 => unsafe { run_block_avx2(view, p0, p1, f) },
            _ => run_block_generic(view, p0, p1, f),
        }
    }
}

/// Borrowed inputs of the scattered-spring kernel: springs with ends `a[s]`,
/// `b[s]` anywhere in the particle arrays.
pub(super) struct ScatterView<'a> {
    pub(super) a: &'a [u32],
    pub(super) b: &'a [u32],
    pub(super) x: [&'a [f64]; 3],
    pub(super) v: [&'a [f64]; 3],
    pub(super) rest: &'a [f64],
    pub(super) k: &'a [f64],
    pub(super) c: &'a [f64],
}

impl Kernel {
    /// Forces on the first ends of springs `s..s + n` (n = `out`'s length, at
    /// most [`CHUNK`]), all of law `law`, written to `out`: the ends' coordinate
    /// and velocity differences are gathered first (scalar loads), then the rest of
    /// [`scalar_force`] runs as one loop over contiguous arrays that vectorises.
    /// Each spring's arithmetic is [`scalar_force`]'s, so the bits are the same.
    /// `d` is scratch space for the gathered differences.
    pub(super) fn scattered_chunk(
        self,
        view: &ScatterView<'_>,
        law: SpringLaw,
        s: usize,
        d: &mut Gathered,
        out: [&mut [f64]; 3],
    ) {
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `select` only returns Avx2 or Avx512 when the CPU reports avx2.
            Kernel::Avx2 | Kernel::Avx512 => unsafe { scattered_chunk_avx2(view, law, s, d, out) },
            _ => scattered_chunk_generic(view, law, s, d, out),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn scattered_chunk_avx2(view: &ScatterView<'_>, law: SpringLaw, s: usize, d: &mut Gathered, out: [&mut [f64]; 3]) {
    scattered_chunk_generic(view, law, s, d, out);
}

/// Scratch of the scattered-spring kernel: x_b − x_a and v_b − v_a of a chunk,
/// one row per component.
pub(super) type Gathered = [[f64; CHUNK]; 6];

#[inline(always)]
fn scattered_chunk_generic(view: &ScatterView<'_>, law: SpringLaw, s: usize, d: &mut Gathered, out: [&mut [f64]; 3]) {
    let n = out[0].len();
    debug_assert!(n <= CHUNK);
    let [xx, xy, xz] = view.x;
    let [vx, vy, vz] = view.v;
    for (i, (&a, &b)) in view.a[s..s + n].iter().zip(&view.b[s..s + n]).enumerate() {
        let (a, b) = (a as usize, b as usize);
        d[0][i] = xx[b] - xx[a];
        d[1][i] = xy[b] - xy[a];
        d[2][i] = xz[b] - xz[a];
        d[3][i] = vx[b] - vx[a];
        d[4][i] = vy[b] - vy[a];
        d[5][i] = vz[b] - vz[a];
    }
    let params = PerSpring(&view.rest[s..s + n], &view.k[s..s + n], &view.c[s..s + n]);
    match law {
        SpringLaw::Linear => gathered_forces(n, d, params, |l, rest, k| k * (l - rest), out),
        SpringLaw::StVK => gathered_forces(n, d, params, stvk_g, out),
        SpringLaw::Cubic(c) => gathered_forces(n, d, params, |l, rest, k| c.g(l, rest, k), out),
    }
}

/// The arithmetic of [`chunk_forces`] on gathered differences: `d` holds
/// x_b − x_a (three rows) and v_b − v_a (three rows) of n springs.
#[inline(always)]
fn gathered_forces(
    n: usize,
    d: &Gathered,
    params: impl Params,
    magnitude: impl Fn(f64, f64, f64) -> f64,
    out: [&mut [f64]; 3],
) {
    let [ox, oy, oz] = out;
    let (ox, oy, oz) = (&mut ox[..n], &mut oy[..n], &mut oz[..n]);
    let (ddx, ddy, ddz) = (&d[0][..n], &d[1][..n], &d[2][..n]);
    let (dvx, dvy, dvz) = (&d[3][..n], &d[4][..n], &d[5][..n]);
    for i in 0..n {
        let (mut dx, mut dy, mut dz) = (ddx[i], ddy[i], ddz[i]);
        let l = (dx * dx + dy * dy + dz * dz).sqrt();
        let il = 1.0 / l.max(f64::MIN_POSITIVE);
        dx *= il;
        dy *= il;
        dz *= il;
        let dv = dvx[i] * dx + dvy[i] * dy + dvz[i] * dz;
        let (rest, k, c) = params.at(i);
        let f = magnitude(l, rest, k) + c * dv;
        ox[i] = f * dx;
        oy[i] = f * dy;
        oz[i] = f * dz;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn run_block_avx512(view: &RunView<'_>, p0: usize, p1: usize, f: [&mut [f64]; 3]) {
    run_block_generic(view, p0, p1, f);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn run_block_avx2(view: &RunView<'_>, p0: usize, p1: usize, f: [&mut [f64]; 3]) {
    run_block_generic(view, p0, p1, f);
}

/// Indices i in [0, len) with base + i in [p0, p1), as a half-open range.
#[inline(always)]
fn clip(p0: usize, p1: usize, base: usize, len: usize) -> (usize, usize) {
    let lo = p0.max(base);
    let hi = p1.min(base + len);
    if lo >= hi { (0, 0) } else { (lo - base, hi - base) }
}

/// Adds every run's contributions to the particles of block [p0, p1) (`f` holds
/// exactly that block), in the canonical order described in the module docs.
#[inline(always)]
fn run_block_generic(view: &RunView<'_>, p0: usize, p1: usize, f: [&mut [f64]; 3]) {
    let [fx, fy, fz] = f;
    let mut ox = [0.0f64; CHUNK];
    let mut oy = [0.0f64; CHUNK];
    let mut oz = [0.0f64; CHUNK];
    for run in view.runs {
        let (ia0, ia1) = clip(p0, p1, run.a0, run.len);
        let (ib0, ib1) = clip(p0, p1, run.b0, run.len);
        let (has_a, has_b) = (ia0 < ia1, ib0 < ib1);
        if !has_a && !has_b {
            continue;
        }
        let lo = if !has_a {
            ib0
        } else if !has_b {
            ia0
        } else {
            ia0.min(ib0)
        };
        let hi = if !has_a {
            ib1
        } else if !has_b {
            ia1
        } else {
            ia1.max(ib1)
        };
        let law = view.laws[run.law as usize];
        let mut chunk = lo / CHUNK * CHUNK;
        while chunk < hi {
            let (c0, c1) = (chunk.max(lo), (chunk + CHUNK).min(hi));
            chunk += CHUNK;
            let (ca0, ca1) = (c0.max(ia0), c1.min(ia1));
            let (cb0, cb1) = (c0.max(ib0), c1.min(ib1));
            let (in_a, in_b) = (has_a && ca0 < ca1, has_b && cb0 < cb1);
            if !in_a && !in_b {
                continue;
            }
            let s = if !in_a {
                cb0
            } else if !in_b {
                ca0
            } else {
                ca0.min(cb0)
            };
            let e = if !in_a {
                cb1
            } else if !in_b {
                ca1
            } else {
                ca1.max(cb1)
            };
            let n = e - s;
            let (a, b, p) = (run.a0 + s, run.b0 + s, run.s0 + s);
            let out = (&mut ox[..n], &mut oy[..n], &mut oz[..n]);
            // One monomorphised loop per law, so each vectorises on its own.
            match law {
                SpringLaw::Linear => chunk_any(n, view, a, b, p, run.shared, |l, rest, k| k * (l - rest), out),
                SpringLaw::StVK => chunk_any(n, view, a, b, p, run.shared, stvk_g, out),
                SpringLaw::Cubic(c) => chunk_any(n, view, a, b, p, run.shared, |l, rest, k| c.g(l, rest, k), out),
            }
            if in_a {
                let (d0, d1) = (run.a0 + ca0 - p0, run.a0 + ca1 - p0);
                let src = ca0 - s..ca1 - s;
                accumulate(&mut fx[d0..d1], &ox[src.clone()], 1.0);
                accumulate(&mut fy[d0..d1], &oy[src.clone()], 1.0);
                accumulate(&mut fz[d0..d1], &oz[src], 1.0);
            }
            if in_b {
                let (d0, d1) = (run.b0 + cb0 - p0, run.b0 + cb1 - p0);
                let src = cb0 - s..cb1 - s;
                accumulate(&mut fx[d0..d1], &ox[src.clone()], -1.0);
                accumulate(&mut fy[d0..d1], &oy[src.clone()], -1.0);
                accumulate(&mut fz[d0..d1], &oz[src], -1.0);
            }
        }
    }
}

/// `dst += src` (sign 1) or `dst -= src` (sign −1), elementwise.
#[inline(always)]
fn accumulate(dst: &mut [f64], src: &[f64], sign: f64) {
    if sign > 0.0 {
        for (d, s) in dst.iter_mut().zip(src) {
            *d += s;
        }
    } else {
        for (d, s) in dst.iter_mut().zip(src) {
            *d -= s;
        }
    }
}

/// Per-spring (rest, k, c) for the kernel: shared by a whole run, or read per spring.
trait Params {
    fn at(&self, i: usize) -> (f64, f64, f64);
}

/// One (rest, k, c) for every spring of the chunk.
struct Uniform((f64, f64, f64));

impl Params for Uniform {
    #[inline(always)]
    fn at(&self, _i: usize) -> (f64, f64, f64) {
        self.0
    }
}

/// Per-spring rest lengths (as long as the chunk) with one k and c.
struct RestOnly<'a>(&'a [f64], f64, f64);

impl Params for RestOnly<'_> {
    #[inline(always)]
    fn at(&self, i: usize) -> (f64, f64, f64) {
        (self.0[i], self.1, self.2)
    }
}

/// Per-spring slices (rest, k, c), each as long as the chunk.
struct PerSpring<'a>(&'a [f64], &'a [f64], &'a [f64]);

impl Params for PerSpring<'_> {
    #[inline(always)]
    fn at(&self, i: usize) -> (f64, f64, f64) {
        (self.0[i], self.1[i], self.2[i])
    }
}

/// What the springs of a run share (see `Run`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Shared {
    /// Nothing: rest length, stiffness and damping read per spring.
    Nothing,
    /// Stiffness and damping; rest lengths read per spring.
    Material(f64, f64),
    /// Rest length, stiffness and damping.
    All((f64, f64, f64)),
}

/// [`chunk_forces`] with what the run shares, the rest read per spring from spring
/// index `p` on.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn chunk_any(
    n: usize,
    view: &RunView<'_>,
    a: usize,
    b: usize,
    p: usize,
    shared: Shared,
    magnitude: impl Fn(f64, f64, f64) -> f64,
    out: (&mut [f64], &mut [f64], &mut [f64]),
) {
    match shared {
        Shared::All(u) => chunk_forces(n, view, a, b, Uniform(u), magnitude, out),
        Shared::Material(k, c) => chunk_forces(n, view, a, b, RestOnly(&view.rest[p..p + n], k, c), magnitude, out),
        Shared::Nothing => {
            let per = PerSpring(&view.rest[p..p + n], &view.k[p..p + n], &view.c[p..p + n]);
            chunk_forces(n, view, a, b, per, magnitude, out)
        }
    }
}

/// Forces on the first ends of n springs whose ends are a..a+n and b..b+n. The body
/// mirrors [`scalar_force`] operation for operation.
#[inline(always)]
fn chunk_forces(
    n: usize,
    view: &RunView<'_>,
    a: usize,
    b: usize,
    params: impl Params,
    magnitude: impl Fn(f64, f64, f64) -> f64,
    out: (&mut [f64], &mut [f64], &mut [f64]),
) {
    let (ox, oy, oz) = out;
    let (xa, ya, za) = (&view.x[0][a..a + n], &view.x[1][a..a + n], &view.x[2][a..a + n]);
    let (xb, yb, zb) = (&view.x[0][b..b + n], &view.x[1][b..b + n], &view.x[2][b..b + n]);
    let (vxa, vya, vza) = (&view.v[0][a..a + n], &view.v[1][a..a + n], &view.v[2][a..a + n]);
    let (vxb, vyb, vzb) = (&view.v[0][b..b + n], &view.v[1][b..b + n], &view.v[2][b..b + n]);
    let (ox, oy, oz) = (&mut ox[..n], &mut oy[..n], &mut oz[..n]);
    for i in 0..n {
        let (mut dx, mut dy, mut dz) = (xb[i] - xa[i], yb[i] - ya[i], zb[i] - za[i]);
        let l = (dx * dx + dy * dy + dz * dz).sqrt();
        let il = 1.0 / l.max(f64::MIN_POSITIVE);
        dx *= il;
        dy *= il;
        dz *= il;
        let dv = (vxb[i] - vxa[i]) * dx + (vyb[i] - vya[i]) * dy + (vzb[i] - vza[i]) * dz;
        let (rest, k, c) = params.at(i);
        let f = magnitude(l, rest, k) + c * dv;
        ox[i] = f * dx;
        oy[i] = f * dy;
        oz[i] = f * dz;
    }
}
