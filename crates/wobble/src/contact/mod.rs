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
//! 1. **Broad phase** ([`broad`]; the list kept across steps in `pairs.rs`): boxes
//!    around each primitive's sweep x⁰ → x¹, grown by half its body's thickness,
//!    in a spatial hash; candidate pairs (vertex–triangle, edge–edge,
//!    vertex–vertex) in a fixed order.
//! 2. **Proximity** ([`narrow`]; the response in `response.rs`): pairs closer
//!    than their contact distance at x¹ are pushed apart to it (positions moved
//!    along the normal in proportion to inverse mass, weighted by the barycentric
//!    stencil) and, if approaching, receive an impulse with restitution ε and
//!    Coulomb friction μ. Linear momentum is exactly conserved (the weights of a
//!    stencil sum to zero).
//! 3. **Continuous detection** (`continuous.rs`): each pair's linear motion
//!    x⁰ → x¹ is tested for a time at which its four points are coplanar and
//!    within η = 0.1 × the contact distance (roots of the coplanarity cubic, its
//!    critical points, and t = 1). A hit
//!    moves the end positions so the pair ends at least half its contact distance
//!    apart along the normal at impact and stops its approach (inelastic). Repeated
//!    up to [`ContactSettings::ccd_iterations`] times.
//! 4. **Fail-safe, rigid impact zones** (`zones.rs`; Provot; Bridson, Fedkiw and
//!    Anderson): while hits remain, the particles of each hit are merged into zones, and each zone
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
//! Bodies whose surfaces already intersect when the world is built (a scene whose
//! bodies start interpenetrating) do not touch each other — every pair between them
//! is left out of the proximity response and of continuous detection — until their
//! surfaces no longer intersect and every pair between them is apart by its contact
//! distance; from then on they collide. So they can come apart instead of locking
//! (continuous detection would stop every particle inside the other body from
//! leaving it, and a local push moves such a particle further in). Stencils that
//! only touch at the start are left out of continuous detection until they are
//! apart by their contact distance. The warning's depth is, for two closed
//! surfaces, how far the deepest vertex of either lies inside the other.
//!
//! # Inside an implicit solve
//! Proximity pushes positions apart by inverse mass: at implicit Euler's steps
//! (h²k/m ≫ 1 for the springs behind a contact) a layer pressed by the one above
//! it is then carried by its mass alone, and a crumpled cloth never came to rest
//! (1 cm/s after 3 s, about g h per step). So the pairs found close at the last
//! proximity pass are also springs inside the next implicit solve
//! ([`Contacts::add_coupled_forces`], [`Contacts::add_coupled_jacobian`], asked for
//! by implicit Euler only; `springs.rs`): with the stencil weights w (the first
//! side's sum to 1, the second's to −1), normal n and penetration δ = d − |x_a − x_b| into the
//! contact distance d, the force on stencil particle a is w_a (k δ n − c v_t), with
//! k = κ m / h² (m the stencil's effective mass 1 / Σ w² / m, κ =
//! [`CONTACT_COUPLED_STIFFNESS`]) and c the lagged Coulomb damper of
//! [`coupled::coupled_friction`] on the tangential relative velocity v_t. Its
//! Jacobian, with the weights and normal held as the response holds them, is
//! ∂f_a/∂x_b = −k w_a w_b n nᵀ and ∂f_a/∂v_b = −c w_a w_b (I − n nᵀ): a stencil
//! block ([`crate::solve::JacobianSink::add_stencil`]), whose off-diagonal parts the implicit
//! solver applies without widening its pattern ([`crate::solve::Stencils`]). The
//! proximity pass after such a step pushes a held pair apart only to within
//! [`coupled::COUPLED_SLOP`] of its distance (its spring carries the load with that
//! penetration next step), and first takes back the separating speed each spring
//! gave in pushing a starting penetration out (a split impulse). The pairs are
//! saved in checkpoints, so a resumed run continues bit for bit.

use glam::DVec3;

use crate::model::{Particles, State, Vec3s};

pub mod box_box;
pub mod broad;
mod continuous;
pub mod coupled;
pub mod intersect;
pub mod narrow;
mod pairs;
mod response;
mod springs;
mod stencil;
pub mod surface;
mod zones;

pub use broad::{Aabb, SpatialHash};
pub use narrow::PairKind;
pub use surface::{ContactOptions, SurfaceError};

use narrow::Hit;
use pairs::{Incidence, UpdateScratch};
use stencil::gather;

/// Settings of the contact stage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactSettings {
    /// Restitution ε of contacts between bodies, in [0, 1].
    pub restitution: f64,
    /// Coulomb friction μ between bodies, ≥ 0.
    pub friction: f64,
    /// Gauss–Seidel passes of the proximity response. Each pass carries a push
    /// one layer further through a stack; with 2 the 64 × 64 crumple never came
    /// to rest (mean speed stayed near 2 cm/s, about g·h per step, for 8 s), with
    /// 4, 8 and 16 it settles to 0.6, 0.7 and 0.5 cm/s.
    pub proximity_iterations: u32,
    /// Rounds of continuous detection with impulses before impact zones.
    pub ccd_iterations: u32,
    /// Rounds of impact-zone merging before freezing.
    pub zone_iterations: u32,
}

impl Default for ContactSettings {
    fn default() -> Self {
        Self { restitution: 0.0, friction: 0.3, proximity_iterations: 8, ccd_iterations: 4, zone_iterations: 16 }
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

/// Stiffness of the contact springs between deformable surfaces inside an implicit
/// solve, as the multiple κ of the stencil's effective mass over h² (k = κ m / h²;
/// default 10, against 100 for colliders and rigid bodies). Measured on the
/// 64 × 64 crumple at h = 1 ms: κ = 100 took 71 conjugate-gradient iterations a
/// step, κ = 10 and 3 took 36 (21.7 without self-contact); a cloth layer's load
/// sinks in by F h² / (κ m), still far within the contact distance.
pub const CONTACT_COUPLED_STIFFNESS: f64 = 10.0;

/// Sorts pair indices `ks` into the pairs' canonical order ([`Pair::order`]),
/// equal keys by index. The keys are packed once into `keys` (scratch kept by
/// the caller) instead of being gathered from the pairs at every comparison.
fn sort_canonical(ks: &mut [u32], pairs: &[Pair], keys: &mut Vec<(u64, u128, u32)>) {
    keys.clear();
    keys.extend(ks.iter().map(|&k| {
        let (a, b) = pairs[k as usize].order_key();
        (a, b, k)
    }));
    keys.sort_unstable();
    for (k, &(_, _, sorted)) in ks.iter_mut().zip(keys.iter()) {
        *k = sorted;
    }
}

/// A candidate pair: its kind, its four particles (unused slots repeat slot 0),
/// its contact distance, m, and the primitive it was found for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    /// Vertex–triangle, edge–edge or vertex–vertex.
    pub kind: PairKind,
    /// Stencil particles.
    pub p: [u32; 4],
    /// Contact distance, m.
    pub distance: f64,
    /// Index of the first primitive (the vertex in `Surfaces::vertices`, the
    /// lower-numbered edge, or the lower-numbered point): part of the canonical
    /// order in which the response takes pairs (by kind, this, then the stencil).
    pub query: u32,
    /// Index of the second primitive (the triangle, the higher-numbered edge or
    /// point).
    pub other: u32,
    /// Distance between the two primitives with every particle at its anchor (where
    /// it was when its box was last fitted), m; −∞ when not measured. A pass skips
    /// the pair when this, less how far its particles have strayed from their
    /// anchors, still exceeds what the pass looks for (see `Contacts::strays`).
    pub gap: f64,
}

impl Pair {
    /// The key of the canonical order in which the response takes pairs: fixed by
    /// the geometry alone, whatever the list's own order (which depends on the
    /// thread count, the hash and when the list was built).
    fn order(&self) -> (u8, u32, [u32; 4]) {
        (self.kind as u8, self.query, self.p)
    }

    /// [`Pair::order`] packed into integers that compare the same way.
    fn order_key(&self) -> (u64, u128) {
        let p = self.p.iter().fold(0u128, |acc, &i| (acc << 32) | u128::from(i));
        ((u64::from(self.kind as u8) << 32) | u64::from(self.query), p)
    }
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
    /// Stencils excluded from continuous detection because they touched at build
    /// time (until they are apart by their contact distance).
    excluded: Vec<[u32; 4]>,
    /// Body pairs (surface body indices, smaller first, sorted) whose surfaces
    /// intersected at build time: every pair between them is left out of the
    /// proximity response and of continuous detection until the surfaces no
    /// longer intersect ([`joins_excluded`]).
    excluded_bodies: Vec<(u32, u32)>,
    /// Spatial hashes of the vertices, triangles, edges and loose points.
    hashes: broad::Hashes,
    /// Cell edge of the last full build's hashes, m.
    cell: f64,
    /// Scratch of incremental updates: the hashes of the fresh primitives,
    /// their boxes, and the pairs found by each chunk of lookups.
    update_scratch: UpdateScratch,
    boxes: Vec<Aabb>,
    pairs: Vec<Pair>,
    /// Scratch of a full build: the pairs of its second chain (see
    /// `build_pairs`).
    pairs_second: Vec<Pair>,
    hits: Vec<(usize, Hit)>,
    close: Vec<u32>,
    /// Whether the list leaves out pairs that cannot come within their contact
    /// distance while every particle stays in its box, and measures each pair's
    /// `gap` (see `Near`).
    cull: bool,
    /// Per particle, where it was when its box was last fitted, and (scratch) how
    /// far it has strayed from there.
    anchor: Vec3s,
    stray: Vec<f64>,
    /// Per particle, the distance from its anchor to its box's farthest corner
    /// (see `Near`).
    reach: Vec<f64>,
    /// Steps of the current motion each particle's box also covers ahead.
    lookahead: f64,
    /// Per particle, the box around the sweep `pairs` was built for, grown by
    /// `margin` (empty: rebuild next time).
    built_lo: Vec3s,
    built_hi: Vec3s,
    /// Counts rebuilds of `pairs`, so continuous detection knows when its last
    /// pass covered the current list.
    pairs_version: u64,
    /// `pairs_version` and end positions of the last continuous pass (`None`: the
    /// next pass tests every pair).
    tested: Option<u64>,
    tested_x1: Vec3s,
    /// Scratch: particles whose pairs the next continuous pass must test.
    retest: Vec<bool>,
    /// Particles whose pairs the next continuous pass must test because the pair
    /// list changed around them (an incremental update).
    pending: Vec<bool>,
    /// Primitives touching each particle (for incremental updates).
    incidence: Incidence,
    /// Particles whose boxes grew since the last full build, and a flag per
    /// particle; their primitives' hashed boxes are stale.
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
    /// Scratch of incremental updates: particles outside their boxes (and a flag
    /// per particle), primitives touching them (stamped with the update's number).
    moved: Vec<u32>,
    moving: Vec<bool>,
    /// Particles the responses may have moved since the list last checked every
    /// particle against its box this step (each once, flagged in `marked`).
    touched: Vec<u32>,
    marked: Vec<bool>,
    fresh: [Vec<u32>; 4],
    /// Scratch of [`sort_canonical`]: each pair's packed order key and index.
    order_keys: Vec<(u64, u128, u32)>,
    prim_stamp: [Vec<u32>; 4],
    stamp: u32,
    /// Dirty primitives per class, flags and lists.
    prim_dirty: [Vec<bool>; 4],
    prim_dirty_list: [Vec<u32>; 4],
    /// Scratch of the proximity response's islands: union–find parents, island of
    /// each root and of each close pair, island bounds, close pairs by island.
    parent: Vec<u32>,
    island_id: Vec<u32>,
    island_of: Vec<u32>,
    island_start: Vec<u32>,
    island_sorted: Vec<u32>,
    /// Scratch of the islands' counting sort: where each island's next pair goes.
    island_fill: Vec<u32>,
    /// Which part of the parallel sweep each island goes to when several
    /// threads sweep.
    island_part: Vec<u32>,
    /// Per-range outputs of the parallel passes that list particles or pairs.
    parts_u32: crate::par::Parts<u32>,
    parts_hits: crate::par::Parts<(usize, Hit)>,
    /// Pairs of the last full build; later ones come from incremental updates.
    base_len: usize,
    /// Extra growth of the boxes `pairs` was built with, m.
    margin: f64,
    /// Rebuilds of the pair list in the current resolve.
    rebuilds: usize,
    zone_of: Vec<u32>,
    frozen: Vec<bool>,
    /// The pairs that were within their contact distance at the last proximity
    /// pass: the contacts an implicit solve of the next step holds as springs.
    coupled: Vec<Pair>,
    /// Whether the step under way was solved with those springs, and each one's
    /// starting penetration (for the split impulse).
    coupled_now: bool,
    coupled_depth: Vec<(u32, f64)>,
    /// Scratch: the stencils of the contacts the step's solve held, sorted, and
    /// the held pairs' own distances while the response sees them shrunk.
    held_keys: Vec<(u8, [u32; 4])>,
    shrunk: Vec<(u32, f64)>,
}

impl Contacts {
    /// The contact stage over `surfaces`.
    #[must_use]
    pub fn new(surfaces: surface::Surfaces, settings: ContactSettings) -> Self {
        Self {
            incidence: Incidence::of(&surfaces),
            surfaces,
            settings,
            report: ContactReport::default(),
            excluded: Vec::new(),
            excluded_bodies: Vec::new(),
            hashes: Default::default(),
            cell: 1.0,
            update_scratch: Default::default(),
            boxes: Vec::new(),
            pairs: Vec::new(),
            pairs_second: Vec::new(),
            hits: Vec::new(),
            close: Vec::new(),
            cull: false,
            anchor: Vec3s::default(),
            reach: Vec::new(),
            stray: Vec::new(),
            lookahead: 0.0,
            built_lo: Vec3s::default(),
            built_hi: Vec3s::default(),
            pairs_version: 0,
            tested: None,
            tested_x1: Vec3s::default(),
            retest: Vec::new(),
            pending: Vec::new(),
            dirty: Vec::new(),
            is_dirty: Vec::new(),
            moved: Vec::new(),
            moving: Vec::new(),
            touched: Vec::new(),
            marked: Vec::new(),
            fresh: Default::default(),
            order_keys: Vec::new(),
            prim_stamp: Default::default(),
            stamp: 0,
            prim_dirty: Default::default(),
            prim_dirty_list: Default::default(),
            parent: Vec::new(),
            island_id: Vec::new(),
            island_of: Vec::new(),
            island_start: Vec::new(),
            island_sorted: Vec::new(),
            island_fill: Vec::new(),
            island_part: Vec::new(),
            parts_u32: Default::default(),
            parts_hits: Default::default(),
            base_len: 0,
            margin: 0.0,
            rebuilds: 0,
            zone_of: Vec::new(),
            frozen: Vec::new(),
            coupled: Vec::new(),
            coupled_now: false,
            coupled_depth: Vec::new(),
            held_keys: Vec::new(),
            shrunk: Vec::new(),
        }
    }

    /// Writes what the stage carries between steps and what changes results: the
    /// stencils and body pairs excluded at build time and the frozen flags. The candidate list
    /// and its boxes are caches: the response takes pairs in a canonical order
    /// fixed by the geometry alone, whatever list they come from.
    pub(crate) fn save_state(&self, out: &mut crate::checkpoint::StateWriter) {
        let excluded: Vec<u32> = self.excluded.iter().flatten().copied().collect();
        out.u32s(&excluded);
        let bodies: Vec<u32> = self.excluded_bodies.iter().flat_map(|&(a, b)| [a, b]).collect();
        out.u32s(&bodies);
        out.bools(&self.frozen);
        // The contacts the next implicit step couples into its solve.
        let stencils: Vec<u32> = self.coupled.iter().flat_map(|p| p.p).collect();
        out.u32s(&stencils);
        let kinds: Vec<u32> = self.coupled.iter().map(|p| p.kind as u32).collect();
        out.u32s(&kinds);
        let distances: Vec<f64> = self.coupled.iter().map(|p| p.distance).collect();
        out.f64s(&distances);
    }

    /// Reads what [`Contacts::save_state`] wrote.
    pub(crate) fn restore_state(
        &mut self,
        input: &mut crate::checkpoint::StateReader<'_>,
    ) -> Result<(), crate::checkpoint::RestoreError> {
        let mut flat = Vec::new();
        input.u32s("excluded contact stencils", &mut flat)?;
        if !flat.len().is_multiple_of(4) {
            return Err(crate::checkpoint::RestoreError::Invalid("excluded contact stencils"));
        }
        self.excluded = flat.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]).collect();
        let mut bodies = Vec::new();
        input.u32s("excluded contact body pairs", &mut bodies)?;
        let count = self.surfaces.bodies.len() as u32;
        if !bodies.len().is_multiple_of(2) || bodies.iter().any(|&b| b >= count) {
            return Err(crate::checkpoint::RestoreError::Invalid("excluded contact body pairs"));
        }
        self.excluded_bodies = bodies.chunks_exact(2).map(|c| (c[0], c[1])).collect();
        input.bools("frozen particles", None, &mut self.frozen)?;
        let (mut stencils, mut kinds, mut distances) = (Vec::new(), Vec::new(), Vec::new());
        input.u32s("coupled contact stencils", &mut stencils)?;
        input.u32s("coupled contact kinds", &mut kinds)?;
        input.f64s("coupled contact distances", &mut distances)?;
        if stencils.len() != 4 * kinds.len() || distances.len() != kinds.len() {
            return Err(crate::checkpoint::RestoreError::Invalid("coupled contacts"));
        }
        self.coupled.clear();
        for (k, (&kind, &distance)) in kinds.iter().zip(&distances).enumerate() {
            let kind = match kind {
                0 => PairKind::VertexTriangle,
                1 => PairKind::EdgeEdge,
                2 => PairKind::VertexVertex,
                _ => return Err(crate::checkpoint::RestoreError::Invalid("coupled contact kind")),
            };
            let p = [stencils[4 * k], stencils[4 * k + 1], stencils[4 * k + 2], stencils[4 * k + 3]];
            self.coupled.push(Pair { kind, p, distance, query: 0, other: 0, gap: f64::NEG_INFINITY });
        }
        Ok(())
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

    /// Body pairs that intersect in state `x` and an estimate of how deep, for the
    /// warning on a scene whose bodies start interpenetrating (each pair once, in
    /// body order). Every pair between two such bodies is left out of the
    /// proximity response and of continuous detection until their surfaces no
    /// longer intersect; stencils that merely
    /// touch are left out until they are apart by their contact distance.
    pub fn start(&mut self, x: &Vec3s) -> Vec<(String, String, f64)> {
        self.excluded.clear();
        self.excluded_bodies.clear();
        if !crate::par::all_finite(x) {
            return Vec::new();
        }
        self.broad_phase(x, x);
        // (surface body, surface body, depth), smaller body first.
        let mut deep: Vec<(u32, u32, f64)> = Vec::new();
        let mut record = |a: u32, b: u32, depth: f64| {
            let key = (a.min(b), a.max(b));
            match deep.iter_mut().find(|e| (e.0, e.1) == key) {
                Some(e) => e.2 = e.2.max(depth),
                None => deep.push((key.0, key.1, depth)),
            }
        };
        for pair in &self.pairs {
            let pos = gather(x, pair.p);
            let prox = narrow::proximity(pair.kind, &pos, DVec3::Y);
            match pair.kind {
                // Spheres overlapping by more than half their contact distance.
                PairKind::VertexVertex if prox.distance < pair.distance * 0.5 => {
                    self.excluded.push(pair.p);
                    let (a, b) = self.surfaces.pair_bodies(pair);
                    record(a, b, pair.distance - prox.distance);
                }
                PairKind::VertexVertex => {}
                _ if prox.distance < 1e-12 * (1.0 + pos[0].length()) => self.excluded.push(pair.p),
                _ => {}
            }
        }
        let tris = &self.surfaces.triangles;
        let groups: Vec<usize> = self.surfaces.triangle_body.iter().map(|&b| b as usize).collect();
        let mut crossing: Vec<(u32, u32)> = Vec::new();
        for (a, b) in intersect::intersecting_pairs(tris, &groups, x, true) {
            let (ta, tb) = (x.gather(&tris[a]), x.gather(&tris[b]));
            let (ba, bb) = (self.surfaces.triangle_body[a], self.surfaces.triangle_body[b]);
            record(ba, bb, crossing_depth(ta, tb));
            crossing.push((ba.min(bb), ba.max(bb)));
        }
        // Two closed surfaces: the depth is how far the deepest vertex of either
        // lies inside the other (the crossing triangles' estimate above can read
        // a whole element where faces of the two lie in one plane).
        crossing.sort_unstable();
        crossing.dedup();
        for &(a, b) in &crossing {
            if let Some(depth) = self.surfaces.overlap_depth(a, b, x)
                && let Some(e) = deep.iter_mut().find(|e| (e.0, e.1) == (a, b))
            {
                e.2 = depth;
            }
        }
        self.excluded.sort_unstable();
        self.excluded.dedup();
        deep.sort_unstable_by_key(|e| (e.0, e.1));
        self.excluded_bodies = deep.iter().map(|e| (e.0, e.1)).collect();
        let name = |k: u32| self.surfaces.bodies[k as usize].name.clone();
        deep.into_iter().map(|(a, b, depth)| (name(a), name(b), depth)).collect()
    }

    /// The contact stage for a step from positions `x0` to the candidate end state
    /// `state` of length `h` (s). See the module docs.
    pub fn resolve(&mut self, particles: &Particles, x0: &Vec3s, state: &mut State, h: f64) -> ContactReport {
        // A non-finite state is a blow-up for the health check to report; contact
        // has nothing sound to do with it.
        if self.surfaces.is_empty() || !(crate::par::all_finite(x0) && crate::par::all_finite(&state.x)) {
            self.report = ContactReport::default();
            return self.report;
        }
        self.resolve_finite(particles, x0, state, h)
    }

    /// [`Contacts::resolve`] for a caller that has just checked that `x0` and
    /// `state.x` are finite (the world's step, whose health check runs right
    /// before: the two passes over every particle are not made twice; on two
    /// threads each pass costs its hand-over besides the reading).
    pub(crate) fn resolve_finite(
        &mut self,
        particles: &Particles,
        x0: &Vec3s,
        state: &mut State,
        h: f64,
    ) -> ContactReport {
        let mut report = ContactReport::default();
        if self.surfaces.is_empty() {
            self.report = report;
            return report;
        }
        self.rebuilds = 0;
        let coupled = self.coupled_now;
        self.release_coupled(particles, state, h);
        // A new sweep: the first continuous pass tests every pair.
        self.tested = None;
        let clock = std::time::Instant::now();
        self.ensure_pairs(x0, &state.x);
        report.pairs = self.pairs.len();
        report.seconds_broad = clock.elapsed().as_secs_f64();
        let clock = std::time::Instant::now();
        report.proximity = self.proximity(particles, state, coupled);
        report.seconds_response += clock.elapsed().as_secs_f64();
        let s = self.settings;
        // Continuous detection with impulses.
        let mut clean = false;
        // Since the check above only the particles of close pairs can have moved.
        self.touch_close();
        for _ in 0..s.ccd_iterations {
            // The responses moved particles: make sure the list still covers them.
            let clock = std::time::Instant::now();
            self.ensure_touched(x0, &state.x);
            report.seconds_broad += clock.elapsed().as_secs_f64();
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
            self.touch_hits();
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
}

/// Whether `pair` joins two bodies in `excluded` (sorted body pairs whose surfaces
/// intersected at build time): such pairs are left out of the proximity response
/// and of continuous detection until the surfaces no longer intersect. (Pushed
/// apart locally, a particle inside the other body is pushed further in: the
/// side it is on is the wrong one.)
fn joins_excluded(surfaces: &surface::Surfaces, excluded: &[(u32, u32)], pair: &Pair) -> bool {
    if excluded.is_empty() {
        return false;
    }
    let (a, b) = surfaces.pair_bodies(pair);
    excluded.binary_search(&(a.min(b), a.max(b))).is_ok()
}

/// How deep two crossing triangles reach through each other: the farthest any
/// corner of one lies behind the other's plane, the smaller of the two ways (for
/// outward-wound closed surfaces, the depth of the overlap at that crossing).
fn crossing_depth(t: [DVec3; 3], u: [DVec3; 3]) -> f64 {
    let behind = |t: [DVec3; 3], u: [DVec3; 3]| {
        let Some(n) = (u[1] - u[0]).cross(u[2] - u[0]).try_normalize() else {
            return 0.0;
        };
        t.iter().map(|&p| -(p - u[0]).dot(n)).fold(0.0, f64::max)
    };
    behind(t, u).min(behind(u, t))
}
