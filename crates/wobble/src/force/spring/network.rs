//! The spring network: every spring of a world in the kernel's sorted layout, and
//! its force term.

use glam::DVec3;
use rayon::prelude::*;

use super::kernel::{Kernel, RunView, ScatterView, Shared, scalar_force};
use super::law::{spring_blocks, spring_blocks_definite};
use super::{CHUNK, MIN_RUN, SpringError, SpringKind, SpringLaw, SpringSet};
use crate::force::{
    ForceContext, ForceTerm, JacobianSink, Loads, Parameter, ParameterError, StrainStats, require_non_negative,
};
use crate::model::{State, Vec3s};

/// A run of springs (a0 + i, b0 + i), i < len, stored at spring indices s0 + i.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Run {
    pub(super) a0: usize,
    pub(super) b0: usize,
    pub(super) s0: usize,
    pub(super) len: usize,
    pub(super) law: u8,
    /// What the springs of the run share: (rest, k, c) on regular grids (the
    /// kernel then reads no per-spring data, which halves its memory traffic),
    /// or (k, c) on meshes of one material (the kernel reads only rest lengths).
    pub(super) shared: Shared,
}

/// The spring force term: every spring of a world, sorted into runs.
#[derive(Clone, Debug)]
pub struct SpringNetwork {
    a: Vec<u32>,
    b: Vec<u32>,
    rest: Vec<f64>,
    k: Vec<f64>,
    c: Vec<f64>,
    kind: Vec<SpringKind>,
    group: Vec<u16>,
    law_id: Vec<u8>,
    laws: Vec<SpringLaw>,
    groups: Vec<String>,
    runs: Vec<Run>,
    /// First spring index of the scattered list (all later springs are scattered).
    scattered_start: usize,
    /// Per particle, its scattered springs in index order: CSR offsets into `gather`.
    gather_offsets: Vec<u32>,
    /// Scattered-spring index (relative to `scattered_start`) << 1 | (1 for the second end).
    gather: Vec<u32>,
    /// Per-spring forces of the scattered list, for the parallel gather.
    scratch: Vec3s,
    /// The law of every scattered spring, when they share one.
    scattered_law: Option<SpringLaw>,
    n_particles: usize,
}

impl SpringNetwork {
    /// Sorts `set` into runs for `n_particles` particles, checking every spring.
    pub fn new(set: &SpringSet, n_particles: usize) -> Result<Self, SpringError> {
        for (index, s) in set.springs.iter().enumerate() {
            for p in [s.a as usize, s.b as usize] {
                if p >= n_particles {
                    return Err(SpringError::OutOfRange { index, kind: s.kind, particle: p, count: n_particles });
                }
            }
            if s.a == s.b {
                return Err(SpringError::SelfLoop { index, kind: s.kind, particle: s.a as usize });
            }
            if !(s.rest.is_finite() && s.rest > 0.0) {
                return Err(SpringError::BadRest {
                    index,
                    kind: s.kind,
                    a: s.a as usize,
                    b: s.b as usize,
                    rest: s.rest,
                });
            }
            let (k, c) = (s.params.stiffness, s.params.damping);
            if !(k.is_finite() && k >= 0.0 && c.is_finite() && c >= 0.0) {
                return Err(SpringError::BadParams { index, kind: s.kind, k, c });
            }
        }
        let mut laws: Vec<SpringLaw> = Vec::new();
        let mut law_of = |law: SpringLaw| -> u8 {
            match laws.iter().position(|l| *l == law) {
                Some(i) => i as u8,
                None => {
                    laws.push(law);
                    (laws.len() - 1) as u8
                }
            }
        };
        // Normalise a < b (the force is symmetric in its ends), then order by law,
        // offset and first end so that runs are contiguous. The sort is stable and
        // keyed on data only, so the layout is reproducible.
        let mut items: Vec<(u8, u32, u32, usize)> = set
            .springs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (a, b) = if s.a < s.b { (s.a, s.b) } else { (s.b, s.a) };
                (law_of(s.params.law), b - a, a, i)
            })
            .collect();
        items.sort_by_key(|&(law, off, a, _)| (law, off, a));

        // Split into maximal runs.
        let mut run_items: Vec<(usize, usize)> = Vec::new(); // (start, len) into items
        let mut start = 0;
        for i in 1..=items.len() {
            let continues = i < items.len() && {
                let (p, q) = (items[i - 1], items[i]);
                p.0 == q.0 && p.1 == q.1 && p.2 + 1 == q.2
            };
            if !continues {
                run_items.push((start, i - start));
                start = i;
            }
        }
        let mut order: Vec<usize> = Vec::with_capacity(items.len());
        let mut runs = Vec::new();
        let mut scattered: Vec<usize> = Vec::new();
        for &(st, len) in &run_items {
            if len >= MIN_RUN {
                let (law, off, a0, _) = items[st];
                runs.push(Run {
                    a0: a0 as usize,
                    b0: (a0 + off) as usize,
                    s0: order.len(),
                    len,
                    law,
                    shared: Shared::Nothing,
                });
                order.extend(items[st..st + len].iter().map(|it| it.3));
            } else {
                scattered.extend(st..st + len);
            }
        }
        // Scattered springs in (first end, second end) order for locality.
        scattered.sort_by_key(|&i| (items[i].2, items[i].2 + items[i].1, items[i].3));
        let scattered_start = order.len();
        order.extend(scattered.iter().map(|&i| items[i].3));

        let mut net = SpringNetwork {
            a: Vec::with_capacity(order.len()),
            b: Vec::with_capacity(order.len()),
            rest: Vec::with_capacity(order.len()),
            k: Vec::with_capacity(order.len()),
            c: Vec::with_capacity(order.len()),
            kind: Vec::with_capacity(order.len()),
            group: Vec::with_capacity(order.len()),
            law_id: Vec::with_capacity(order.len()),
            laws: Vec::new(),
            groups: set.groups.clone(),
            runs,
            scattered_start,
            gather_offsets: Vec::new(),
            gather: Vec::new(),
            scratch: Vec3s::zeros(order.len() - scattered_start),
            scattered_law: None,
            n_particles,
        };
        for &i in &order {
            let s = &set.springs[i];
            let (a, b) = if s.a < s.b { (s.a, s.b) } else { (s.b, s.a) };
            net.a.push(a);
            net.b.push(b);
            net.rest.push(s.rest);
            net.k.push(s.params.stiffness);
            net.c.push(s.params.damping);
            net.kind.push(s.kind);
            net.group.push(s.group);
        }
        net.share_parameters();
        let mut law_by_insertion = vec![0u8; items.len()];
        for it in &items {
            law_by_insertion[it.3] = it.0;
        }
        net.law_id = order.iter().map(|&i| law_by_insertion[i]).collect();
        net.laws = laws;
        net.scattered_law = match net.law_id.get(scattered_start) {
            Some(&first) if net.law_id[scattered_start..].iter().all(|&l| l == first) => Some(net.laws[first as usize]),
            _ => None,
        };

        // CSR of scattered springs per particle, each list in spring order.
        let mut counts = vec![0u32; n_particles + 1];
        for s in scattered_start..net.len() {
            counts[net.a[s] as usize + 1] += 1;
            counts[net.b[s] as usize + 1] += 1;
        }
        for i in 0..n_particles {
            counts[i + 1] += counts[i];
        }
        let mut fill = counts.clone();
        let mut gather = vec![0u32; counts[n_particles] as usize];
        for s in scattered_start..net.len() {
            let rel = (s - scattered_start) as u32;
            for (p, side) in [(net.a[s], 0u32), (net.b[s], 1u32)] {
                let slot = &mut fill[p as usize];
                gather[*slot as usize] = rel << 1 | side;
                *slot += 1;
            }
        }
        net.gather_offsets = counts;
        net.gather = gather;
        Ok(net)
    }

    /// Finds what each run's springs share (see `Run::shared`); again after any
    /// change of a parameter.
    fn share_parameters(&mut self) {
        for run in &mut self.runs {
            let r = run.s0..run.s0 + run.len;
            let first = (self.rest[run.s0], self.k[run.s0], self.c[run.s0]);
            let same = |v: &[f64], x: f64| v.iter().all(|&y| y.to_bits() == x.to_bits());
            run.shared = if !(same(&self.k[r.clone()], first.1) && same(&self.c[r.clone()], first.2)) {
                Shared::Nothing
            } else if same(&self.rest[r], first.0) {
                Shared::All(first)
            } else {
                Shared::Material(first.1, first.2)
            };
        }
    }

    /// Number of springs.
    #[must_use]
    pub fn len(&self) -> usize {
        self.a.len()
    }

    /// True when there are no springs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.a.is_empty()
    }

    /// Number of springs that run through the vectorised kernel.
    #[must_use]
    pub fn vectorised_len(&self) -> usize {
        self.scattered_start
    }

    /// Ends of spring `s` (kernel order).
    #[must_use]
    pub fn ends(&self, s: usize) -> (usize, usize) {
        (self.a[s] as usize, self.b[s] as usize)
    }

    /// Rest length of spring `s`, m.
    #[must_use]
    pub fn rest_length(&self, s: usize) -> f64 {
        self.rest[s]
    }

    /// Stiffness of spring `s`, N/m.
    #[must_use]
    pub fn stiffness(&self, s: usize) -> f64 {
        self.k[s]
    }

    /// Damping of spring `s`, N s/m.
    #[must_use]
    pub fn damping(&self, s: usize) -> f64 {
        self.c[s]
    }

    /// Kind of spring `s`.
    #[must_use]
    pub fn kind(&self, s: usize) -> SpringKind {
        self.kind[s]
    }

    /// Law of spring `s`.
    #[must_use]
    pub fn law(&self, s: usize) -> SpringLaw {
        self.laws[self.law_id[s] as usize]
    }

    /// Number of springs of `kind`.
    #[must_use]
    pub fn count(&self, kind: SpringKind) -> usize {
        self.kind.iter().filter(|k| **k == kind).count()
    }

    /// Strain (r − L)/L of spring `s` in state `x`.
    #[must_use]
    pub fn strain_of(&self, s: usize, x: &Vec3s) -> f64 {
        let (a, b) = self.ends(s);
        (x.get(a).distance(x.get(b)) - self.rest[s]) / self.rest[s]
    }

    /// Force on the first end of spring `s` (the second end gets its negative),
    /// evaluated as the scalar reference of the kernel.
    #[inline]
    #[must_use]
    pub fn spring_force(&self, s: usize, x: &Vec3s, v: &Vec3s) -> DVec3 {
        let (a, b) = self.ends(s);
        let law = self.laws[self.law_id[s] as usize];
        scalar_force(law, x.get(a), x.get(b), v.get(a), v.get(b), self.rest[s], self.k[s], self.c[s])
    }

    /// Adds all spring forces with a plain loop in spring order: the reference the
    /// kernel is tested against (equal up to summation order).
    pub fn add_forces_reference(&self, state: &State, f: &mut Vec3s) {
        for s in 0..self.len() {
            let (a, b) = self.ends(s);
            let fa = self.spring_force(s, &state.x, &state.v);
            f.add(a, fa);
            f.sub(b, fa);
        }
    }

    /// Adds every spring force to `f` with the given kernel (every kernel gives the
    /// same bits; this exists to test that).
    pub fn add_forces_with(&mut self, kernel: Kernel, state: &State, f: &mut Vec3s) {
        self.add_run_forces(kernel, state, f);
        self.add_scattered_forces(kernel, state, f);
    }

    fn add_run_forces(&self, kernel: Kernel, state: &State, f: &mut Vec3s) {
        let n = self.n_particles;
        let bs = crate::par::block_len(n);
        let view = RunView {
            runs: &self.runs,
            laws: &self.laws,
            x: state.x.components(),
            v: state.v.components(),
            rest: &self.rest,
            k: &self.k,
            c: &self.c,
        };
        if bs >= n {
            let [fx, fy, fz] = f.components_mut();
            kernel.run_block(&view, 0, n, [fx, fy, fz]);
            return;
        }
        let [fx, fy, fz] = f.components_mut();
        let n = n.min(fx.len()).min(fy.len()).min(fz.len());
        crate::par::for_ranges_mut([&mut fx[..n], &mut fy[..n], &mut fz[..n]], |p0, f| {
            let p1 = p0 + f[0].len();
            kernel.run_block(&view, p0, p1, f);
        });
    }

    /// The scattered springs' forces added to `f` in spring order, every spring
    /// of law `law`: computed a chunk at a time by the gathering kernel, then
    /// added to both ends spring by spring (the scalar loop it replaced took 1.2 ×
    /// as long on the springs of the level-4 two-layer sphere; see
    /// docs/performance.md).
    fn add_scattered_serial(&self, kernel: Kernel, law: SpringLaw, state: &State, f: &mut Vec3s) {
        let view = self.scatter_view(state);
        let [fx, fy, fz] = f.components_mut();
        let (mut ox, mut oy, mut oz) = ([0.0f64; CHUNK], [0.0f64; CHUNK], [0.0f64; CHUNK]);
        let mut d = [[0.0f64; CHUNK]; 6];
        let mut s = self.scattered_start;
        while s < self.len() {
            let n = CHUNK.min(self.len() - s);
            kernel.scattered_chunk(&view, law, s, &mut d, [&mut ox[..n], &mut oy[..n], &mut oz[..n]]);
            for i in 0..n {
                let (a, b) = (self.a[s + i] as usize, self.b[s + i] as usize);
                let (px, py, pz) = (ox[i], oy[i], oz[i]);
                fx[a] += px;
                fy[a] += py;
                fz[a] += pz;
                fx[b] -= px;
                fy[b] -= py;
                fz[b] -= pz;
            }
            s += n;
        }
    }

    fn scatter_view<'a>(&'a self, state: &'a State) -> ScatterView<'a> {
        ScatterView {
            a: &self.a,
            b: &self.b,
            x: state.x.components(),
            v: state.v.components(),
            rest: &self.rest,
            k: &self.k,
            c: &self.c,
        }
    }

    fn add_scattered_forces(&mut self, kernel: Kernel, state: &State, f: &mut Vec3s) {
        let s0 = self.scattered_start;
        let count = self.len() - s0;
        if count == 0 {
            return;
        }
        let bs = crate::par::block_len(self.n_particles);
        if bs >= self.n_particles {
            // Same contributions in the same per-particle order as the gather below.
            // One law for every scattered spring (the common case) is dispatched
            // once, outside the loop.
            match self.scattered_law {
                Some(law) => self.add_scattered_serial(kernel, law, state, f),
                None => {
                    for s in s0..self.len() {
                        let (a, b) = self.ends(s);
                        let fa = self.spring_force(s, &state.x, &state.v);
                        f.add(a, fa);
                        f.sub(b, fa);
                    }
                }
            }
            return;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let this = &*self;
        {
            let [sx, sy, sz] = scratch.components_mut();
            let view = self.scatter_view(state);
            sx.par_chunks_mut(CHUNK).zip(sy.par_chunks_mut(CHUNK)).zip(sz.par_chunks_mut(CHUNK)).enumerate().for_each(
                |(ci, ((sx, sy), sz))| {
                    if let Some(law) = this.scattered_law {
                        let mut d = [[0.0f64; CHUNK]; 6];
                        kernel.scattered_chunk(&view, law, s0 + ci * CHUNK, &mut d, [sx, sy, sz]);
                        return;
                    }
                    for j in 0..sx.len() {
                        let fa = this.spring_force(s0 + ci * CHUNK + j, &state.x, &state.v);
                        sx[j] = fa.x;
                        sy[j] = fa.y;
                        sz[j] = fa.z;
                    }
                },
            );
        }
        let (offsets, gather) = (&self.gather_offsets, &self.gather);
        let [fx, fy, fz] = f.components_mut();
        let sc = &scratch;
        fx.par_chunks_mut(bs).zip(fy.par_chunks_mut(bs)).zip(fz.par_chunks_mut(bs)).enumerate().for_each(
            |(bi, ((fx, fy), fz))| {
                for j in 0..fx.len() {
                    let p = bi * bs + j;
                    for &e in &gather[offsets[p] as usize..offsets[p + 1] as usize] {
                        let s = (e >> 1) as usize;
                        if e & 1 == 0 {
                            fx[j] += sc.x[s];
                            fy[j] += sc.y[s];
                            fz[j] += sc.z[s];
                        } else {
                            fx[j] -= sc.x[s];
                            fy[j] -= sc.y[s];
                            fz[j] -= sc.z[s];
                        }
                    }
                }
            },
        );
        self.scratch = scratch;
    }

    /// Indices of springs whose group (body) is `group` and kind is `kind`.
    fn select(&self, group: u16, kind: SpringKind) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter(move |&s| self.group[s] == group && self.kind[s] == kind)
    }
}

impl ForceTerm for SpringNetwork {
    fn name(&self) -> &str {
        "springs"
    }

    fn add_forces(&mut self, ctx: &ForceContext<'_>, out: &mut Loads) {
        debug_assert_eq!(ctx.state.len(), self.n_particles);
        self.add_forces_with(Kernel::select(), ctx.state, &mut out.f);
    }

    fn potential_energy(&self, ctx: &ForceContext<'_>) -> f64 {
        let x = &ctx.state.x;
        (0..self.len())
            .map(|s| {
                let (a, b) = self.ends(s);
                self.law(s).energy(x.get(a).distance(x.get(b)), self.rest[s], self.k[s])
            })
            .sum()
    }

    fn add_jacobian(&self, ctx: &ForceContext<'_>, sink: &mut dyn JacobianSink) {
        let x = &ctx.state.x;
        let blocks = if sink.definite() { spring_blocks_definite } else { spring_blocks };
        sink.add_pairs(self.len(), &|s| self.ends(s), &|s| {
            let (a, b) = self.ends(s);
            blocks(self.law(s), x.get(a), x.get(b), self.rest[s], self.k[s], self.c[s])
        });
    }

    fn has_jacobian(&self) -> bool {
        true
    }

    fn add_stiffness_bound(&self, ctx: &ForceContext<'_>, k_row: &mut [f64], c_row: &mut [f64]) {
        let w = &ctx.particles.inv_mass;
        let x = &ctx.state.x;
        for s in 0..self.len() {
            let (a, b) = self.ends(s);
            let cross = (w[a] * w[b]).sqrt();
            // Non-linear laws: the block's norm at the current length, max(|g'|, |g/r|)
            // (at least k), since a stretched cubic is far stiffer than at rest.
            let k = match self.law(s) {
                SpringLaw::Linear => self.k[s],
                law => {
                    let r = x.get(a).distance(x.get(b));
                    let (g, dg) = law.magnitude(r, self.rest[s], self.k[s]);
                    self.k[s].max(dg.abs()).max(if r > 0.0 { (g / r).abs() } else { 0.0 })
                }
            };
            k_row[a] += k * (w[a] + cross);
            k_row[b] += k * (w[b] + cross);
            c_row[a] += self.c[s] * (w[a] + cross);
            c_row[b] += self.c[s] * (w[b] + cross);
        }
    }

    fn strain(&self, state: &State) -> Option<StrainStats> {
        if self.is_empty() {
            return None;
        }
        let mut st = StrainStats { count: self.len(), sum: 0.0, max: f64::NEG_INFINITY, max_abs: 0.0 };
        for s in 0..self.len() {
            let e = self.strain_of(s, &state.x);
            st.sum += e;
            st.max = st.max.max(e);
            st.max_abs = st.max_abs.max(e.abs());
        }
        Some(st)
    }

    fn segments(&self, out: &mut Vec<[u32; 2]>) {
        out.extend(self.a.iter().zip(&self.b).map(|(&a, &b)| [a, b]));
    }

    fn segment_rest_lengths(&self, out: &mut Vec<f64>) {
        out.extend_from_slice(&self.rest);
    }

    fn counts(&self) -> Vec<(String, usize)> {
        SpringKind::ALL
            .into_iter()
            .map(|k| (format!("{k} springs"), self.count(k)))
            .filter(|(_, n)| *n > 0)
            .chain(std::iter::once(("springs in vectorised runs".to_owned(), self.vectorised_len())))
            .collect()
    }

    /// `<body>.<kind>.stiffness` and `<body>.<kind>.damping` for every kind present.
    fn parameters(&self) -> Vec<Parameter> {
        let mut out = Vec::new();
        for (g, name) in self.groups.iter().enumerate() {
            for kind in SpringKind::ALL {
                if let Some(s) = self.select(g as u16, kind).next() {
                    let k = self.k[s];
                    out.push(Parameter {
                        key: format!("{name}.{kind}.stiffness"),
                        value: k,
                        unit: "N/m",
                        min: 0.0,
                        max: (10.0 * k).max(1.0),
                    });
                    let c = self.c[s];
                    out.push(Parameter {
                        key: format!("{name}.{kind}.damping"),
                        value: c,
                        unit: "N s/m",
                        min: 0.0,
                        max: (10.0 * c).max(1.0),
                    });
                }
            }
        }
        out
    }

    fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        let unknown =
            || ParameterError::Unknown { key: key.to_owned(), known: crate::force::known_keys(&self.parameters()) };
        let mut parts = key.rsplitn(3, '.');
        let (Some(field), Some(kind), Some(group)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(unknown());
        };
        let Some(kind) = SpringKind::ALL.into_iter().find(|k| k.as_str() == kind) else {
            return Err(unknown());
        };
        let Some(g) = self.groups.iter().position(|n| n == group) else {
            return Err(unknown());
        };
        require_non_negative(key, value)?;
        let selected: Vec<usize> = self.select(g as u16, kind).collect();
        if selected.is_empty() {
            return Err(unknown());
        }
        let target = match field {
            "stiffness" => &mut self.k,
            "damping" => &mut self.c,
            _ => return Err(unknown()),
        };
        for s in selected {
            target[s] = value;
        }
        self.share_parameters();
        Ok(())
    }
}
