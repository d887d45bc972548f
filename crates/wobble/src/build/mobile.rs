//! A mobile (001 §3, Fig. 3): horizontal bars of oriented particles hanging from
//! threads, with weights or further bars hanging from their ends, described as a
//! tree. Bars are generalized springs (they stay straight); threads are springs
//! without bend or twist resistance (they only pull), so each bar swings and turns
//! freely about its thread.
//!
//! Bars are drawn as tubes and weights as octahedra by offsetting (001 §4.3).
//!
//! Each bar hangs from its balance point: the centre of mass of the bar and
//! everything below it, computed from the tree, so the mobile is level at rest.
//! Bars at even depth lie along x, at odd depth along z.

use glam::DVec3;

use super::{BuildError, WorldBuilder, check, check_mass};
use crate::force::{GeneralizedParams, GeneralizedSprings};

/// Most segments per bar or thread.
pub const MAX_SEGMENTS: usize = 10_000;

/// What hangs from a thread.
#[derive(Clone, Debug, PartialEq)]
pub enum Hanging {
    /// A weight: one particle of this mass, kg.
    Weight(f64),
    /// Another bar.
    Bar(Box<MobileBar>),
}

/// A thread and what hangs from it.
#[derive(Clone, Debug, PartialEq)]
pub struct Pendant {
    /// Thread length, m.
    pub thread: f64,
    /// What hangs at its lower end.
    pub item: Hanging,
}

/// A horizontal bar with a pendant at each end.
#[derive(Clone, Debug, PartialEq)]
pub struct MobileBar {
    /// Length, m.
    pub length: f64,
    /// The bar's own mass, kg.
    pub mass: f64,
    /// Hangs from the bar's first end (−x or −z).
    pub left: Pendant,
    /// Hangs from the bar's second end.
    pub right: Pendant,
}

/// Mobile parameters. Units: m, kg.
#[derive(Clone, Debug, PartialEq)]
pub struct Mobile {
    /// The fixed point the top thread hangs from, m.
    pub anchor: DVec3,
    /// The top thread and the tree below it.
    pub top: Pendant,
    /// Springs along each bar (must resist bending to keep bars straight).
    pub bar: GeneralizedParams,
    /// Springs along the threads (bend and twist are ignored: threads only pull).
    pub thread: GeneralizedParams,
    /// Segments per bar (≥ 2).
    pub bar_segments: usize,
    /// Segments per thread (≥ 1).
    pub thread_segments: usize,
    /// Mass of each inner thread particle, kg.
    pub thread_particle_mass: f64,
    /// Particle radius, m (> 0): inertia 2/5 m r² of bar particles and weights.
    pub radius: f64,
}

impl Default for Mobile {
    fn default() -> Self {
        let weight = |m: f64| Pendant { thread: 0.25, item: Hanging::Weight(m) };
        let lower = MobileBar { length: 0.4, mass: 0.02, left: weight(0.05), right: weight(0.05) };
        let root = MobileBar {
            length: 0.8,
            mass: 0.04,
            left: weight(0.1),
            right: Pendant { thread: 0.2, item: Hanging::Bar(Box::new(lower)) },
        };
        Self {
            anchor: DVec3::new(0.0, 2.0, 0.0),
            top: Pendant { thread: 0.3, item: Hanging::Bar(Box::new(root)) },
            bar: GeneralizedParams::new(2e4, 1.0, 100.0, 100.0).with_angular_damping(5e-3, 5e-3),
            thread: GeneralizedParams::plain(5e3, 0.2),
            bar_segments: 4,
            thread_segments: 2,
            thread_particle_mass: 2e-3,
            radius: 0.03,
        }
    }
}

/// Where a mobile's parts are.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MobileHandle {
    /// The anchor particle (pinned).
    pub anchor: usize,
    /// Particles of each bar, from its first end to its second, depth-first order.
    pub bars: Vec<Vec<usize>>,
    /// Weight particles, depth-first order.
    pub weights: Vec<usize>,
}

impl Pendant {
    /// Total mass hanging from this pendant's thread (threads' inner particles
    /// included), kg.
    fn mass(&self, m: &Mobile) -> f64 {
        let thread = m.thread_particle_mass * (m.thread_segments - 1) as f64;
        thread
            + match &self.item {
                Hanging::Weight(w) => *w,
                Hanging::Bar(bar) => bar.mass + bar.left.mass(m) + bar.right.mass(m),
            }
    }
}

/// An octahedron of circumradius `r` (m) around particle `p`, as an offset surface.
fn octahedron(body: &str, p: usize, rest: &crate::model::State, r: f64) -> crate::model::OffsetSurface {
    let mut s = crate::model::OffsetSurface::new(body);
    for d in [DVec3::X, -DVec3::X, DVec3::Y, -DVec3::Y, DVec3::Z, -DVec3::Z] {
        s.push(p, d * r, rest.q[p]);
    }
    // Faces (+x, +y, +z) and their mirror images, wound outward.
    for (a, b, c) in [(0, 2, 4), (2, 1, 4), (1, 3, 4), (3, 0, 4), (2, 0, 5), (1, 2, 5), (3, 1, 5), (0, 3, 5)] {
        s.triangles.push([a, b, c]);
    }
    s
}

impl Mobile {
    /// Adds the mobile as body `name` (anchor pinned) with its own generalized-spring
    /// term.
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<MobileHandle, BuildError> {
        check(
            (2..=MAX_SEGMENTS).contains(&self.bar_segments),
            name,
            "bar_segments",
            self.bar_segments,
            "must be 2 to 10,000",
        )?;
        check(
            (1..=MAX_SEGMENTS).contains(&self.thread_segments),
            name,
            "thread_segments",
            self.thread_segments,
            "must be 1 to 10,000",
        )?;
        check(self.radius.is_finite() && self.radius > 0.0, name, "radius", self.radius, "must be positive (m)")?;
        check(self.anchor.is_finite(), name, "anchor", self.anchor, "must be finite")?;
        check_mass(name, "thread_particle_mass", self.thread_particle_mass)?;
        let (first, tri_first, line_first) = (b.particle_count(), b.topology.triangles.len(), b.topology.lines.len());
        let anchor = b.add_particle(self.anchor, DVec3::ZERO, 1.0, self.radius);
        b.make_oriented(name, anchor..anchor + 1, None)?;
        b.pin(anchor);
        let mut term = GeneralizedSprings::new(name);
        let bars = term.group(&format!("{name}.bars"), self.bar)?;
        let threads =
            term.group(&format!("{name}.threads"), GeneralizedParams::plain(self.thread.stretch, self.thread.damping))?;
        let mut handle = MobileHandle { anchor, ..MobileHandle::default() };
        let mut edges: Vec<(usize, usize, u16, DVec3)> = Vec::new();
        self.hang(b, name, &self.top, anchor, 0, threads, bars, &mut edges, &mut handle)?;
        for (p, q, g, across) in edges {
            term.push_at_rest(&b.particles, &b.state, p, q, g, across, across)?;
            b.topology.lines.push([p as u32, q as u32]);
        }
        b.add_force(term);
        // Drawn by offsetting (001 §4.3): bars as tubes, weights as octahedra.
        for bar in &handle.bars {
            b.topology.offsets.push(super::rod::tube(name, bar, &b.state, 0.5 * self.radius, DVec3::Y));
        }
        for &w in &handle.weights {
            b.topology.offsets.push(octahedron(name, w, &b.state, 2.0 * self.radius));
        }
        b.add_body(name, "mobile", first, tri_first, line_first, false)?;
        Ok(handle)
    }

    /// Hangs `pendant` from particle `top` at tree depth `depth`.
    #[allow(clippy::too_many_arguments)]
    fn hang(
        &self,
        b: &mut WorldBuilder,
        name: &str,
        pendant: &Pendant,
        top: usize,
        depth: usize,
        threads: u16,
        bars: u16,
        edges: &mut Vec<(usize, usize, u16, DVec3)>,
        handle: &mut MobileHandle,
    ) -> Result<(), BuildError> {
        check(
            pendant.thread.is_finite() && pendant.thread > 0.0,
            name,
            "thread",
            pendant.thread,
            "must be positive (m)",
        )?;
        check(depth < 32, name, "bar", depth, "the tree is deeper than 32 levels")?;
        let x_top = b.state.x.get(top);
        let n = self.thread_segments;
        let mut above = top;
        for k in 1..n {
            let x = x_top - DVec3::Y * (pendant.thread * k as f64 / n as f64);
            let p = b.add_particle(x, DVec3::ZERO, self.thread_particle_mass, 0.5 * self.radius);
            b.make_oriented(name, p..p + 1, None)?;
            edges.push((above, p, threads, DVec3::X));
            above = p;
        }
        let bottom = x_top - DVec3::Y * pendant.thread;
        match &pendant.item {
            Hanging::Weight(m) => {
                check_mass(name, "weight", *m)?;
                let p = b.add_particle(bottom, DVec3::ZERO, *m, self.radius);
                b.make_oriented(name, p..p + 1, None)?;
                edges.push((above, p, threads, DVec3::X));
                handle.weights.push(p);
            }
            Hanging::Bar(bar) => {
                check(bar.length.is_finite() && bar.length > 0.0, name, "length", bar.length, "must be positive (m)")?;
                check_mass(name, "bar mass", bar.mass)?;
                let dir = if depth.is_multiple_of(2) { DVec3::X } else { DVec3::Z };
                let (ml, mr) = (bar.left.mass(self), bar.right.mass(self));
                // Balance point from the first end: moments of the bar and both loads.
                let s = (0.5 * bar.mass + mr) * bar.length / (bar.mass + ml + mr);
                let segs = self.bar_segments;
                let left = ((segs as f64 * s / bar.length).round() as usize).clamp(1, segs - 1);
                let right = segs - left;
                let start = bottom - dir * s;
                // Positions: `left` equal segments to the balance point, `right` after.
                let mut xs: Vec<f64> = (0..=left).map(|k| s * k as f64 / left as f64).collect();
                xs.extend((1..=right).map(|k| s + (bar.length - s) * k as f64 / right as f64));
                // Lumped masses: each segment's mass split between its ends, which keeps
                // the bar's centre of mass at its middle.
                let density = bar.mass / bar.length;
                let mut masses = vec![0.0; xs.len()];
                for k in 0..xs.len() - 1 {
                    let half = 0.5 * density * (xs[k + 1] - xs[k]);
                    masses[k] += half;
                    masses[k + 1] += half;
                }
                let ids: Vec<usize> = xs
                    .iter()
                    .zip(&masses)
                    .map(|(&x, &m)| b.add_particle(start + dir * x, DVec3::ZERO, m, self.radius))
                    .collect();
                b.make_oriented(name, ids[0]..ids[ids.len() - 1] + 1, None)?;
                edges.push((above, ids[left], threads, dir));
                for w in ids.windows(2) {
                    edges.push((w[0], w[1], bars, DVec3::Y));
                }
                handle.bars.push(ids.clone());
                self.hang(b, name, &bar.left, ids[0], depth + 1, threads, bars, edges, handle)?;
                self.hang(b, name, &bar.right, ids[ids.len() - 1], depth + 1, threads, bars, edges, handle)?;
            }
        }
        Ok(())
    }
}
