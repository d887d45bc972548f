//! Contact between bodies and within a body: found each step, not declared.
//!
//! # Geometry
//! Each body that collides contributes its collision surface ([`surface`]): the
//! particles, edges and triangles of its drawn surface — a cloth's triangles (both
//! sides), a grid's or lattice's boundary faces, a pressure or two-layer body's
//! outer layer, a rod's or chain's segments (capsules: edges with the thickness as
//! radius), and for bodies with neither (loose oriented particles) the particles
//! themselves as spheres. Each body has a `thickness` h_b (contact distance, m); two
//! primitives of bodies a and b are in contact within (h_a + h_b)/2, so a body
//! meets itself at h_b. Primitives that share a particle never form a contact.
//!
//! # The stage, after every integrator
//! [`Contacts::resolve`] runs after the integrator and the constraints, on the start
//! positions x⁰ of the step and the candidate end state (x¹, v¹), so it works the
//! same for explicit, Verlet, implicit and semi-implicit stepping:
//!
//! 1. **Broad phase** ([`broad`]): boxes around each primitive's sweep x⁰ → x¹,
//!    grown by half its body's thickness, in a spatial hash; candidate pairs
//!    (vertex–triangle, edge–edge, vertex–vertex) in a fixed order.
//! 2. **Proximity** ([`narrow`]): pairs closer than their contact distance at x¹ are
//!    pushed apart to it (positions moved along the normal in proportion to inverse
//!    mass, weighted by the barycentric stencil) and, if approaching, receive an
//!    impulse with restitution ε and Coulomb friction μ. Linear momentum is exactly
//!    conserved (the weights of a stencil sum to zero).
//! 3. **Continuous detection**: each pair's linear motion x⁰ → x¹ is tested for a
//!    time at which its four points are coplanar and within η = 0.1 × the contact
//!    distance (roots of the coplanarity cubic, its critical points, and t = 1). A hit
//!    moves the end positions so the pair ends at least half its contact distance
//!    apart along the normal at impact and stops its approach (inelastic). Repeated
//!    up to [`ContactSettings::ccd_iterations`] times.
//! 4. **Fail-safe, rigid impact zones** (Provot; Bridson, Fedkiw and Anderson): while
//!    hits remain, the particles of each hit are merged into zones, and each zone
//!    moves rigidly over the step with its own linear and angular momentum; zones
//!    grow until no hit remains, up to [`ContactSettings::zone_iterations`] rounds.
//! 5. **Last resort, freezing**: particles of any remaining hit are put back at x⁰
//!    with zero velocity, repeated until no hit remains. Since the start of the step
//!    was free of intersections and frozen particles do not move, this ends, with at
//!    most one round per particle.
//!
//! **Guarantee.** If the surfaces do not intersect at the start of a step, they do
//! not intersect at its end, whatever the integrator: every pair's straight path
//! from x⁰ to x¹ is free of coplanar-and-touching events after stage 5 (up to η).
//! Particles that no contact can move (pinned or driven on both sides of a pair) are
//! the exception; such hits are counted as `unresolved`. [`ContactReport`] counts
//! how often stages 4 and 5 fire; the metrics carry it.
//!
//! Pairs that already intersect when the world is built (a scene whose bodies start
//! interpenetrating) are left out of continuous detection until they separate, so
//! they can come apart instead of locking (proximity still pushes them apart).

use glam::{DMat3, DQuat, DVec3};

use crate::model::{Particles, State, Topology, Vec3s};

pub mod broad;
pub mod intersect;
pub mod narrow;
pub mod surface;

pub use broad::{Aabb, SpatialHash};
pub use narrow::PairKind;
pub use surface::{ContactOptions, SurfaceError};

use narrow::{Hit, Proximity};

/// Settings of the contact stage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactSettings {
    /// Restitution ε of contacts between bodies, in [0, 1].
    pub restitution: f64,
    /// Coulomb friction μ between bodies, ≥ 0.
    pub friction: f64,
    /// Gauss–Seidel passes of the proximity response.
    pub proximity_iterations: u32,
    /// Rounds of continuous detection with impulses before impact zones.
    pub ccd_iterations: u32,
    /// Rounds of impact-zone merging before freezing.
    pub zone_iterations: u32,
}

impl Default for ContactSettings {
    fn default() -> Self {
        Self { restitution: 0.0, friction: 0.3, proximity_iterations: 2, ccd_iterations: 4, zone_iterations: 16 }
    }
}

/// What the last contact stage did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactReport {
    /// Candidate pairs from the broad phase.
    pub pairs: usize,
    /// Pairs closer than their contact distance at the end of the step.
    pub proximity: usize,
    /// Collisions found by continuous detection (all rounds).
    pub ccd_hits: usize,
    /// Impact-zone rounds used (0 when impulses sufficed).
    pub zone_rounds: usize,
    /// Particles frozen by the last resort.
    pub frozen: usize,
    /// Hits left between particles no contact can move.
    pub unresolved: usize,
    /// Times the candidate-pair list was rebuilt (0 when the last one served).
    pub rebuilds: usize,
    /// Wall time of the broad phase, s.
    pub seconds_broad: f64,
    /// Wall time of the narrow phase (proximity and continuous tests), s.
    pub seconds_narrow: f64,
    /// Wall time of the responses (impulses, zones, freezing), s.
    pub seconds_response: f64,
}

/// A candidate pair: its kind, its four particles (unused slots repeat slot 0) and
/// its contact distance, m.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    /// Vertex–triangle, edge–edge or vertex–vertex.
    pub kind: PairKind,
    /// Stencil particles.
    pub p: [u32; 4],
    /// Contact distance, m.
    pub distance: f64,
}

/// The contact stage: every body's collision surface and the scratch space of the
/// response. See the module docs.
#[derive(Clone, Debug)]
pub struct Contacts {
    /// Collision surfaces, one per colliding body.
    pub surfaces: surface::Surfaces,
    /// Settings.
    pub settings: ContactSettings,
    report: ContactReport,
    /// Pairs excluded from continuous detection because they intersected at build time.
    excluded: Vec<[u32; 4]>,
    hash: SpatialHash,
    boxes: Vec<Aabb>,
    pairs: Vec<Pair>,
    hits: Vec<(usize, Hit)>,
    close: Vec<u32>,
    /// Sweep that `pairs` was built for (empty: rebuild next time).
    built_x0: Vec3s,
    built_x1: Vec3s,
    /// Extra growth of the boxes `pairs` was built with, m.
    margin: f64,
    /// Rebuilds of the pair list in the current resolve.
    rebuilds: usize,
    zone_of: Vec<u32>,
    frozen: Vec<bool>,
}

impl Contacts {
    /// The contact stage over `surfaces`.
    #[must_use]
    pub fn new(surfaces: surface::Surfaces, settings: ContactSettings) -> Self {
        Self {
            surfaces,
            settings,
            report: ContactReport::default(),
            excluded: Vec::new(),
            hash: SpatialHash::default(),
            boxes: Vec::new(),
            pairs: Vec::new(),
            hits: Vec::new(),
            close: Vec::new(),
            built_x0: Vec3s::default(),
            built_x1: Vec3s::default(),
            margin: 0.0,
            rebuilds: 0,
            zone_of: Vec::new(),
            frozen: Vec::new(),
        }
    }

    /// What the last [`Contacts::resolve`] did.
    #[must_use]
    pub fn report(&self) -> ContactReport {
        self.report
    }

    /// Candidate pairs of the last broad phase.
    #[must_use]
    pub fn pairs(&self) -> &[Pair] {
        &self.pairs
    }

    /// Body pairs that intersect in state `x` and the deepest overlap of each, for
    /// the warning on a scene whose bodies start interpenetrating; the intersecting
    /// stencils are remembered and left out of continuous detection until they
    /// separate.
    pub fn start(&mut self, topology: &Topology, x: &Vec3s) -> Vec<(String, String, f64)> {
        self.excluded.clear();
        if !x.components().iter().all(|c| c.iter().all(|v| v.is_finite())) {
            return Vec::new();
        }
        self.broad_phase(x, x);
        let mut touching = Vec::new();
        for pair in &self.pairs {
            let pos = gather(x, pair.p);
            let prox = narrow::proximity(pair.kind, &pos, DVec3::Y);
            // Touching surfaces, or spheres overlapping by more than half.
            let overlapping = match pair.kind {
                PairKind::VertexVertex => prox.distance < pair.distance * 0.5,
                _ => prox.distance < 1e-12 * (1.0 + pos[0].length()),
            };
            if overlapping {
                self.excluded.push(pair.p);
                touching.push(pair.p);
            }
        }
        let tris = &self.surfaces.triangles;
        let groups: Vec<usize> = self.surfaces.triangle_body.iter().map(|&b| b as usize).collect();
        for (a, b) in intersect::intersecting_pairs(tris, &groups, x, true) {
            for (v, t) in [(a, b), (b, a)] {
                for &p in &tris[v] {
                    let [i, j, k] = tris[t];
                    self.excluded.push([p, i, j, k]);
                }
            }
            touching.push([tris[a][0], tris[a][1], tris[b][0], tris[b][1]]);
        }
        self.excluded.sort_unstable();
        self.excluded.dedup();
        let mut out: Vec<(String, String, f64)> = Vec::new();
        for p in touching {
            let (ba, bb) = (topology.body_of(p[0] as usize), topology.body_of(p[2] as usize));
            if let (Some(ba), Some(bb)) = (ba, bb) {
                let depth = self.surfaces.depth_estimate(p, x);
                match out.iter_mut().find(|e| e.0 == ba.name && e.1 == bb.name) {
                    Some(e) => e.2 = e.2.max(depth),
                    None => out.push((ba.name.clone(), bb.name.clone(), depth)),
                }
            }
        }
        out
    }

    /// The contact stage for a step from positions `x0` to the candidate end state
    /// `state` of length `h` (s). See the module docs.
    pub fn resolve(&mut self, particles: &Particles, x0: &Vec3s, state: &mut State, h: f64) -> ContactReport {
        let mut report = ContactReport::default();
        // A non-finite state is a blow-up for the health check to report; contact
        // has nothing sound to do with it.
        let finite = |x: &Vec3s| x.components().iter().all(|c| c.iter().all(|v| v.is_finite()));
        if self.surfaces.is_empty() || !finite(x0) || !finite(&state.x) {
            self.report = report;
            return report;
        }
        self.rebuilds = 0;
        let clock = std::time::Instant::now();
        self.ensure_pairs(x0, &state.x);
        report.pairs = self.pairs.len();
        report.seconds_broad = clock.elapsed().as_secs_f64();
        let clock = std::time::Instant::now();
        report.proximity = self.proximity(particles, state);
        report.seconds_response += clock.elapsed().as_secs_f64();
        let s = self.settings;
        // Continuous detection with impulses.
        let mut clean = false;
        for round in 0..s.ccd_iterations {
            if round > 0 {
                let clock = std::time::Instant::now();
                self.ensure_pairs(x0, &state.x);
                report.seconds_broad += clock.elapsed().as_secs_f64();
            }
            let clock = std::time::Instant::now();
            self.find_hits(x0, &state.x);
            report.seconds_narrow += clock.elapsed().as_secs_f64();
            if self.hits.is_empty() {
                clean = true;
                break;
            }
            report.ccd_hits += self.hits.len();
            let clock = std::time::Instant::now();
            self.respond_to_hits(particles, x0, state);
            report.seconds_response += clock.elapsed().as_secs_f64();
        }
        // Rigid impact zones.
        if !clean {
            self.zone_of.clear();
            self.zone_of.extend(0..state.len() as u32);
            for _ in 0..s.zone_iterations {
                let clock = std::time::Instant::now();
                self.ensure_pairs(x0, &state.x);
                self.find_hits(x0, &state.x);
                report.seconds_narrow += clock.elapsed().as_secs_f64();
                if self.hits.is_empty() {
                    clean = true;
                    break;
                }
                report.zone_rounds += 1;
                report.ccd_hits += self.hits.len();
                let clock = std::time::Instant::now();
                self.merge_zones();
                self.rigidify_zones(particles, x0, state, h);
                report.seconds_response += clock.elapsed().as_secs_f64();
            }
        }
        // Freezing.
        if !clean {
            self.frozen.clear();
            self.frozen.resize(state.len(), false);
            loop {
                self.ensure_pairs(x0, &state.x);
                self.find_hits(x0, &state.x);
                if self.hits.is_empty() {
                    break;
                }
                let mut newly = 0;
                for &(k, _) in &self.hits {
                    for &p in &self.pairs[k].p {
                        let i = p as usize;
                        if !self.frozen[i] && particles.inv_mass[i] > 0.0 {
                            self.frozen[i] = true;
                            state.x.set(i, x0.get(i));
                            state.v.set(i, DVec3::ZERO);
                            newly += 1;
                        }
                    }
                }
                report.frozen += newly;
                if newly == 0 {
                    report.unresolved = self.hits.len();
                    break;
                }
            }
        }
        report.rebuilds = self.rebuilds;
        self.report = report;
        report
    }

    /// Rebuilds the candidate pairs for positions `x` at rest (no sweep).
    pub(crate) fn broad_phase_public(&mut self, x: &Vec3s) {
        self.broad_phase(x, x);
    }

    /// Makes `pairs` hold every pair whose sweeps x0 → x1 (grown by the contact
    /// distance) overlap. The list is built for the sweep x0ᵇ → x1ᵇ with every box
    /// grown by a margin, and reused while |x0 − x0ᵇ| and |x1 − x1ᵇ| stay within
    /// the margin for every particle (then each new sweep box lies inside its
    /// grown box, so no overlapping pair is missing). Corrections within a step
    /// and slow motion between steps reuse it.
    fn ensure_pairs(&mut self, x0: &Vec3s, x1: &Vec3s) {
        if self.built_x0.len() == x0.len() && self.margin > 0.0 {
            let m = self.margin;
            let within = |x: &Vec3s, b: &Vec3s| {
                (0..x.len()).all(|i| {
                    let d = (x.get(i) - b.get(i)).abs();
                    d.x <= m && d.y <= m && d.z <= m
                })
            };
            if within(x0, &self.built_x0) && within(x1, &self.built_x1) {
                return;
            }
        }
        // Twice the largest thickness: measured on the 64 × 64 crumple as the best
        // balance between rebuilds (smaller) and pairs to test (larger).
        self.margin = PAIR_MARGIN * self.surfaces.bodies.iter().map(|b| b.thickness).fold(0.0, f64::max);
        self.rebuilds += 1;
        self.build_pairs(x0, x1, self.margin);
        self.built_x0.copy_from(x0);
        self.built_x1.copy_from(x1);
    }

    /// Rebuilds `pairs` for the sweep `x0` → `x1` (margin 0: valid for this sweep
    /// only).
    fn broad_phase(&mut self, x0: &Vec3s, x1: &Vec3s) {
        self.build_pairs(x0, x1, 0.0);
        self.built_x0.resize(0);
    }

    /// Rebuilds `pairs` for the sweep `x0` → `x1` with every box grown by a further
    /// `margin` (m).
    fn build_pairs(&mut self, x0: &Vec3s, x1: &Vec3s, margin: f64) {
        let surf = &self.surfaces;
        self.pairs.clear();
        // Cell size: the mean extent of the triangle (or edge) boxes.
        let tri_boxes = surf.triangles.len();
        self.boxes.clear();
        for (k, t) in surf.triangles.iter().enumerate() {
            let m = 0.5 * surf.thickness_of(surf.triangle_body[k]) + margin;
            let p = t.map(|i| x0.get(i as usize));
            let q = t.map(|i| x1.get(i as usize));
            self.boxes.push(Aabb::around(&[p[0], p[1], p[2], q[0], q[1], q[2]], m));
        }
        for (k, e) in surf.edges.iter().enumerate() {
            let m = 0.5 * surf.thickness_of(surf.edge_body[k]) + margin;
            let p = e.map(|i| x0.get(i as usize));
            let q = e.map(|i| x1.get(i as usize));
            self.boxes.push(Aabb::around(&[p[0], p[1], q[0], q[1]], m));
        }
        let point_first = self.boxes.len();
        for (k, &v) in surf.points.iter().enumerate() {
            let m = 0.5 * surf.thickness_of(surf.point_body[k]) + margin;
            self.boxes.push(Aabb::around(&[x0.get(v as usize), x1.get(v as usize)], m));
        }
        if self.boxes.is_empty() {
            return;
        }
        let mean = self.boxes.iter().map(|b| (b.hi - b.lo).max_element()).sum::<f64>() / self.boxes.len() as f64;
        let cell = mean.max(1e-9);
        // Vertex–triangle: vertices query the triangles; edge–edge: edges query the
        // edges after them; vertex–vertex among the particles of bodies without
        // edges. Queries run in parallel chunks whose results are concatenated in
        // chunk order, so the pair list is the same for any thread count.
        let boxes = &self.boxes;
        let (tris, edges, points) = (&boxes[..tri_boxes], &boxes[tri_boxes..point_first], &boxes[point_first..]);
        let pairs = &mut self.pairs;
        self.hash.build(tris, cell);
        let hash = &self.hash;
        let vt = |k: usize, out: &mut Vec<Pair>| {
            let v = surf.vertices[k];
            let vb = surf.vertex_body[k];
            let q = Aabb::around(&[x0.get(v as usize), x1.get(v as usize)], 0.5 * surf.thickness_of(vb) + margin);
            hash.for_each_overlap(tris, &q, |t| {
                let tb = surf.triangle_body[t as usize];
                let tri = surf.triangles[t as usize];
                if !tri.contains(&v) && surf.may_touch(vb, tb) {
                    let p = [v, tri[0], tri[1], tri[2]];
                    out.push(Pair { kind: PairKind::VertexTriangle, p, distance: surf.contact_distance(vb, tb) });
                }
            });
        };
        chunked(surf.vertices.len(), vt, pairs);
        self.hash.build(edges, cell);
        let hash = &self.hash;
        let ee = |k: usize, out: &mut Vec<Pair>| {
            let (e, eb) = (surf.edges[k], surf.edge_body[k]);
            hash.for_each_overlap(edges, &edges[k], |o| {
                let o = o as usize;
                let (f, ob) = (surf.edges[o], surf.edge_body[o]);
                if o > k && !f.contains(&e[0]) && !f.contains(&e[1]) && surf.may_touch(eb, ob) {
                    let p = [e[0], e[1], f[0], f[1]];
                    out.push(Pair { kind: PairKind::EdgeEdge, p, distance: surf.contact_distance(eb, ob) });
                }
            });
        };
        chunked(surf.edges.len(), ee, pairs);
        if !points.is_empty() {
            self.hash.build(points, cell);
            let hash = &self.hash;
            let vv = |k: usize, out: &mut Vec<Pair>| {
                let (v, vb) = (surf.points[k], surf.point_body[k]);
                hash.for_each_overlap(points, &points[k], |o| {
                    let o = o as usize;
                    let ob = surf.point_body[o];
                    if o > k && surf.may_touch(vb, ob) {
                        let p = [v, surf.points[o], v, v];
                        out.push(Pair { kind: PairKind::VertexVertex, p, distance: surf.contact_distance(vb, ob) });
                    }
                });
            };
            chunked(surf.points.len(), vv, pairs);
        }
    }

    /// Proximity response at the end positions; returns the number of pairs found
    /// closer than their contact distance in the first pass.
    fn proximity(&mut self, particles: &Particles, state: &mut State) -> usize {
        // Detection in parallel (read-only), response in order on the close pairs.
        let x = &state.x;
        let pairs = &self.pairs;
        let detect = |k: usize, out: &mut Vec<u32>| {
            let pair = &pairs[k];
            let pos = gather(x, pair.p);
            if far_apart(pair.kind, &pos, pair.distance) {
                return;
            }
            if narrow::proximity(pair.kind, &pos, DVec3::Y).distance < pair.distance {
                out.push(k as u32);
            }
        };
        self.close.clear();
        chunked(pairs.len(), detect, &mut self.close);
        let (eps, mu) = (self.settings.restitution, self.settings.friction);
        for _ in 0..self.settings.proximity_iterations.max(1) {
            for &k in &self.close {
                let pair = &self.pairs[k as usize];
                let pos = gather(&state.x, pair.p);
                let prox = narrow::proximity(pair.kind, &pos, DVec3::Y);
                if prox.distance >= pair.distance {
                    continue;
                }
                let k = effective_inverse_mass(particles, pair, &prox);
                if k <= 0.0 {
                    continue;
                }
                // Position: to the contact distance.
                let lambda = (pair.distance - prox.distance) / k;
                apply(&mut state.x, particles, pair, &prox, prox.n * lambda);
                // Velocity: stop an approach (with restitution), Coulomb friction.
                let rel = relative(&state.v, pair, &prox);
                let vn = rel.dot(prox.n);
                if vn < 0.0 {
                    let jn = -(1.0 + eps) * vn / k;
                    let vt = rel - vn * prox.n;
                    let vt_len = vt.length();
                    let mut impulse = prox.n * jn;
                    if vt_len > 0.0 {
                        let jt = (vt_len / k).min(mu * jn);
                        impulse -= vt * (jt / vt_len);
                    }
                    apply(&mut state.v, particles, pair, &prox, impulse);
                }
            }
        }
        self.close.len()
    }

    /// Continuous detection over every pair for the sweep `x0` → `x1` into `hits`.
    fn find_hits(&mut self, x0: &Vec3s, x1: &Vec3s) {
        let (pairs, excluded) = (&self.pairs, &self.excluded);
        let test = |k: usize, out: &mut Vec<(usize, Hit)>| {
            let pair = &pairs[k];
            if !excluded.is_empty() && excluded.binary_search(&pair.p).is_ok() {
                return;
            }
            let (a, b) = (gather(x0, pair.p), gather(x1, pair.p));
            let eta = 0.1 * pair.distance;
            if sweeps_apart(pair.kind, &a, &b, eta) {
                return;
            }
            SCRATCH.with_borrow_mut(|times| {
                if let Some(hit) = narrow::ccd(pair.kind, &a, &b, eta, times) {
                    out.push((k, hit));
                }
            });
        };
        self.hits.clear();
        chunked(pairs.len(), test, &mut self.hits);
        if !self.excluded.is_empty() {
            // Excluded stencils that have separated rejoin continuous detection.
            let pairs = &self.pairs;
            let still = |p: &[u32; 4]| {
                pairs.iter().find(|q| q.p == *p).is_none_or(|q| {
                    let pos = gather(x1, q.p);
                    narrow::proximity(q.kind, &pos, DVec3::Y).distance < q.distance
                })
            };
            self.excluded.retain(still);
        }
    }

    /// Impulse-and-push response to each hit, in order (Gauss–Seidel).
    fn respond_to_hits(&mut self, particles: &Particles, x0: &Vec3s, state: &mut State) {
        for &(k, hit) in &self.hits {
            let pair = self.pairs[k];
            let mut prox = hit.at;
            prox.n = hit_normal(pair.kind, &gather(x0, pair.p), &gather(&state.x, pair.p), &hit);
            let kk = effective_inverse_mass(particles, &pair, &prox);
            if kk <= 0.0 {
                continue;
            }
            let target = 0.5 * pair.distance;
            let gap = relative(&state.x, &pair, &prox).dot(prox.n);
            if gap < target {
                apply(&mut state.x, particles, &pair, &prox, prox.n * ((target - gap) / kk));
            }
            let vn = relative(&state.v, &pair, &prox).dot(prox.n);
            if vn < 0.0 {
                apply(&mut state.v, particles, &pair, &prox, prox.n * (-vn / kk));
            }
        }
    }

    /// Merges the particles of every current hit into impact zones (union–find on
    /// `zone_of`).
    fn merge_zones(&mut self) {
        let find = |z: &mut Vec<u32>, mut i: u32| {
            while z[i as usize] != i {
                let up = z[z[i as usize] as usize];
                z[i as usize] = up;
                i = up;
            }
            i
        };
        for &(k, _) in &self.hits {
            let pair = self.pairs[k];
            let used = match pair.kind {
                PairKind::VertexVertex => 2,
                _ => 4,
            };
            let root = find(&mut self.zone_of, pair.p[0]);
            for &p in &pair.p[1..used] {
                let r = find(&mut self.zone_of, p);
                if r != root {
                    let (lo, hi) = if r < root { (r, root) } else { (root, r) };
                    self.zone_of[hi as usize] = lo;
                }
            }
        }
        for i in 0..self.zone_of.len() {
            let r = find(&mut self.zone_of, i as u32);
            self.zone_of[i] = r;
        }
    }

    /// Moves every zone of more than one particle rigidly over the step, keeping its
    /// linear and angular momentum (zones holding a pinned or driven particle stop).
    fn rigidify_zones(&mut self, particles: &Particles, x0: &Vec3s, state: &mut State, h: f64) {
        // Members of each zone, in particle order.
        let n = self.zone_of.len();
        let mut size = vec![0u32; n];
        for &z in &self.zone_of {
            size[z as usize] += 1;
        }
        let mut members: Vec<(u32, u32)> = (0..n as u32)
            .filter(|&i| size[self.zone_of[i as usize] as usize] > 1)
            .map(|i| (self.zone_of[i as usize], i))
            .collect();
        members.sort_unstable();
        let mut start = 0;
        while start < members.len() {
            let zone = members[start].0;
            let end = start + members[start..].iter().take_while(|m| m.0 == zone).count();
            let ids: Vec<usize> = members[start..end].iter().map(|m| m.1 as usize).collect();
            start = end;
            if ids.len() < 2 {
                continue;
            }
            if ids.iter().any(|&i| particles.inv_mass[i] == 0.0) {
                for &i in &ids {
                    if particles.inv_mass[i] > 0.0 {
                        state.x.set(i, x0.get(i));
                        state.v.set(i, DVec3::ZERO);
                    }
                }
                continue;
            }
            let mass: f64 = ids.iter().map(|&i| particles.mass[i]).sum();
            let wsum = |f: &dyn Fn(usize) -> DVec3| ids.iter().map(|&i| particles.mass[i] * f(i)).sum::<DVec3>() / mass;
            let c0 = wsum(&|i| x0.get(i));
            let c1 = wsum(&|i| state.x.get(i));
            let vc = wsum(&|i| state.v.get(i));
            let mut l = DVec3::ZERO;
            let mut inertia = DMat3::ZERO;
            for &i in &ids {
                let (m, r) = (particles.mass[i], x0.get(i) - c0);
                let u = (state.x.get(i) - x0.get(i) - (c1 - c0)) / h;
                l += m * r.cross(u);
                inertia += m * (DMat3::from_diagonal(DVec3::splat(r.length_squared())) - outer(r, r));
            }
            let w = if inertia.determinant().abs() > 1e-300 { inertia.inverse() * l } else { DVec3::ZERO };
            let rot = if w.length() * h > 0.0 { DQuat::from_scaled_axis(w * h) } else { DQuat::IDENTITY };
            for &i in &ids {
                let r = rot * (x0.get(i) - c0);
                state.x.set(i, c1 + r);
                state.v.set(i, vc + w.cross(r));
            }
        }
    }
}

thread_local! {
    /// Candidate times of continuous detection, one buffer per thread.
    static SCRATCH: std::cell::RefCell<Vec<(f64, bool)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Growth of the broad phase's boxes, in units of the largest thickness, that lets
/// the pair list serve several steps (see `Contacts::ensure_pairs`).
const PAIR_MARGIN: f64 = 2.0;

/// Items per parallel chunk of a contact pass.
const CHUNK: usize = 512;

/// Runs `f(k, out)` for k in 0..n in parallel chunks and appends the outputs to
/// `dst` in index order: the result does not depend on the thread count.
fn chunked<T: Send>(n: usize, f: impl Fn(usize, &mut Vec<T>) + Sync, dst: &mut Vec<T>) {
    use rayon::prelude::*;
    if n <= CHUNK || rayon::current_num_threads() == 1 {
        for k in 0..n {
            f(k, dst);
        }
        return;
    }
    let parts: Vec<Vec<T>> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut out = Vec::new();
            for k in c * CHUNK..((c + 1) * CHUNK).min(n) {
                f(k, &mut out);
            }
            out
        })
        .collect();
    for p in parts {
        dst.extend(p);
    }
}

/// True when the primitives of a stencil at positions `x` are certainly farther
/// apart than `distance` (their bounding boxes are).
fn far_apart(kind: PairKind, x: &[DVec3; 4], distance: f64) -> bool {
    let split = match kind {
        PairKind::VertexTriangle | PairKind::VertexVertex => 1,
        PairKind::EdgeEdge => 2,
    };
    let used = if kind == PairKind::VertexVertex { 2 } else { 4 };
    let (a, b) = (&x[..split], &x[split..used]);
    let lo = |s: &[DVec3]| s.iter().fold(DVec3::INFINITY, |m, p| m.min(*p));
    let hi = |s: &[DVec3]| s.iter().fold(DVec3::NEG_INFINITY, |m, p| m.max(*p));
    let d = DVec3::splat(distance);
    (lo(a) - d).cmpgt(hi(b)).any() || (lo(b) - d).cmpgt(hi(a)).any()
}

/// True when the two sides of a stencil sweeping from `a` to `b` stay farther apart
/// than `eta` (their swept boxes do not meet).
fn sweeps_apart(kind: PairKind, a: &[DVec3; 4], b: &[DVec3; 4], eta: f64) -> bool {
    let (split, used) = match kind {
        PairKind::VertexTriangle => (1, 4),
        PairKind::EdgeEdge => (2, 4),
        PairKind::VertexVertex => (1, 2),
    };
    let bound = |r: std::ops::Range<usize>| {
        r.fold((DVec3::INFINITY, DVec3::NEG_INFINITY), |(lo, hi), k| (lo.min(a[k]).min(b[k]), hi.max(a[k]).max(b[k])))
    };
    let ((lo1, hi1), (lo2, hi2)) = (bound(0..split), bound(split..used));
    let e = DVec3::splat(eta);
    (lo1 - e).cmpgt(hi2).any() || (lo2 - e).cmpgt(hi1).any()
}

fn outer(a: DVec3, b: DVec3) -> DMat3 {
    DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}

/// Positions of a stencil's particles.
fn gather(x: &Vec3s, p: [u32; 4]) -> [DVec3; 4] {
    p.map(|i| x.get(i as usize))
}

/// Σ w_k u_k over the stencil (a relative position or velocity).
fn relative(u: &Vec3s, pair: &Pair, prox: &Proximity) -> DVec3 {
    let mut r = DVec3::ZERO;
    for (k, &p) in pair.p.iter().enumerate() {
        if prox.w[k] != 0.0 {
            r += prox.w[k] * u.get(p as usize);
        }
    }
    r
}

/// Σ w_k² / m_k: the inverse of the stencil's effective mass along a direction.
fn effective_inverse_mass(particles: &Particles, pair: &Pair, prox: &Proximity) -> f64 {
    pair.p.iter().zip(prox.w).map(|(&p, w)| w * w * particles.inv_mass[p as usize]).sum()
}

/// Adds w_k / m_k × `impulse` to each stencil particle's entry of `u` (a position
/// change or a velocity change): the stencil's Σ w_k u_k then changes by k × impulse.
fn apply(u: &mut Vec3s, particles: &Particles, pair: &Pair, prox: &Proximity, impulse: DVec3) {
    for (k, &p) in pair.p.iter().enumerate() {
        let f = prox.w[k] * particles.inv_mass[p as usize];
        if f != 0.0 {
            u.add(p as usize, impulse * f);
        }
    }
}

/// The normal of a hit: the triangle's (vertex–triangle) or the edges' common
/// perpendicular (edge–edge) at the hit time, pointing to where the first side was
/// at the start of the step; the proximity direction when that is degenerate.
fn hit_normal(kind: PairKind, x0: &[DVec3; 4], x1: &[DVec3; 4], hit: &Hit) -> DVec3 {
    let at = |k: usize| x0[k] + hit.t * (x1[k] - x0[k]);
    let geometric = match kind {
        PairKind::VertexTriangle => (at(2) - at(1)).cross(at(3) - at(1)),
        PairKind::EdgeEdge => (at(1) - at(0)).cross(at(3) - at(2)),
        PairKind::VertexVertex => hit.at.n,
    };
    let n = geometric.try_normalize().unwrap_or(hit.at.n);
    // Orient by the start: Σ w_k x⁰_k · n must be positive.
    let start: DVec3 = (0..4).map(|k| hit.at.w[k] * x0[k]).sum();
    let s = start.dot(n);
    if s < 0.0 || (s == 0.0 && n.dot(hit.at.n) < 0.0) { -n } else { n }
}
