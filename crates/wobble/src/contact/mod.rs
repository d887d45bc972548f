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
//!
//! # Inside an implicit solve
//! Proximity pushes positions apart by inverse mass: at implicit Euler's steps
//! (h²k/m ≫ 1 for the springs behind a contact) a layer pressed by the one above
//! it is then carried by its mass alone, and a crumpled cloth never came to rest
//! (1 cm/s after 3 s, about g h per step). So the pairs found close at the last
//! proximity pass are also springs inside the next implicit solve
//! ([`Contacts::add_coupled_forces`], [`Contacts::add_coupled_jacobian`], asked for
//! by implicit Euler only): with the stencil weights w (the first side's sum to 1,
//! the second's to −1), normal n and penetration δ = d − |x_a − x_b| into the
//! contact distance d, the force on stencil particle a is w_a (k δ n − c v_t), with
//! k = κ m / h² (m the stencil's effective mass 1 / Σ w² / m, κ =
//! [`CONTACT_COUPLED_STIFFNESS`]) and c the lagged Coulomb damper of
//! [`coupled::coupled_friction`] on the tangential relative velocity v_t. Its
//! Jacobian, with the weights and normal held as the response holds them, is
//! ∂f_a/∂x_b = −k w_a w_b n nᵀ and ∂f_a/∂v_b = −c w_a w_b (I − n nᵀ): a stencil
//! block ([`JacobianSink::add_stencil`]), whose off-diagonal parts the implicit
//! solver applies without widening its pattern ([`crate::solve::Stencils`]). The
//! proximity pass after such a step pushes a held pair apart only to within
//! [`coupled::COUPLED_SLOP`] of its distance (its spring carries the load with that
//! penetration next step), and first takes back the separating speed each spring
//! gave in pushing a starting penetration out (a split impulse). The pairs are
//! saved in checkpoints, so a resumed run continues bit for bit.

use glam::{DMat3, DQuat, DVec3};

use crate::force::Loads;
use crate::model::{Particles, State, Topology, Vec3s};
use crate::par::SharedRows;
use crate::solve::JacobianSink;

pub mod broad;
pub mod coupled;
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
    /// Spatial hashes of the vertices, triangles, edges and loose points.
    hashes: [SpatialHash; 4],
    /// Cell edge of the last full build's hashes, m.
    cell: f64,
    /// Scratch of incremental updates: a hash of one class's fresh primitives,
    /// and their boxes.
    fresh_scratch: [FreshScratch; 3],
    boxes: Vec<Aabb>,
    pairs: Vec<Pair>,
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
    /// Each island's first particle, which says which thread sweeps it when
    /// several do.
    island_key: Vec<u32>,
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

/// A contact held as a spring inside an implicit solve.
struct Spring {
    /// Closest points, weights and normal at the step's start.
    prox: narrow::Proximity,
    /// Penetration into the contact distance, m (> 0).
    depth: f64,
    /// Stiffness, N/m.
    k: f64,
    /// Friction damping, N s/m.
    c: f64,
    /// Tangential relative velocity, m/s.
    slip: DVec3,
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
            hashes: Default::default(),
            cell: 1.0,
            fresh_scratch: Default::default(),
            boxes: Vec::new(),
            pairs: Vec::new(),
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
            prim_stamp: Default::default(),
            stamp: 0,
            prim_dirty: Default::default(),
            prim_dirty_list: Default::default(),
            parent: Vec::new(),
            island_id: Vec::new(),
            island_of: Vec::new(),
            island_start: Vec::new(),
            island_sorted: Vec::new(),
            island_key: Vec::new(),
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
    /// stencils excluded at build time and the frozen flags. The candidate list
    /// and its boxes are caches: the response takes pairs in a canonical order
    /// fixed by the geometry alone, whatever list they come from.
    pub(crate) fn save_state(&self, out: &mut crate::checkpoint::StateWriter) {
        let excluded: Vec<u32> = self.excluded.iter().flatten().copied().collect();
        out.u32s(&excluded);
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

    /// Calls `each(index, pair, spring)` for every contact of the last proximity pass
    /// still within its contact distance at `state`, as a spring of a step of `h`
    /// (see the module docs, "Inside an implicit solve").
    fn coupled_springs(
        &self,
        particles: &Particles,
        state: &State,
        h: f64,
        mut each: impl FnMut(usize, &Pair, Spring),
    ) {
        for (index, pair) in self.coupled.iter().enumerate() {
            let prox = narrow::proximity(pair.kind, &gather(&state.x, pair.p), DVec3::Y);
            let depth = pair.distance - prox.distance;
            let w = effective_inverse_mass(&particles.inv_mass, pair, &prox);
            // The response leaves a pair at its distance to 1e-9 of it.
            if !coupled::coupled_touches(depth, 2.0 * pair.distance) || w <= 0.0 {
                continue;
            }
            let depth = depth.max(0.0);
            let k = coupled::coupled_stiffness(CONTACT_COUPLED_STIFFNESS, w, h);
            let rel = relative(&state.v, pair, &prox);
            let slip = rel - rel.dot(prox.n) * prox.n;
            let c = coupled::coupled_friction(
                CONTACT_COUPLED_STIFFNESS,
                w,
                h,
                self.settings.friction,
                k * depth,
                slip.length(),
            );
            each(index, pair, Spring { prox, depth, k, c, slip });
        }
    }

    /// Adds the forces of the contact springs an implicit solve of a step of `h`
    /// from `state` holds (see the module docs): on stencil particle a,
    /// w_a (k δ n − c v_t).
    pub fn add_coupled_forces(&mut self, particles: &Particles, state: &State, h: f64, out: &mut Loads) {
        let mut depths = std::mem::take(&mut self.coupled_depth);
        depths.clear();
        self.coupled_springs(particles, state, h, |index, pair, s| {
            let f = s.prox.n * (s.k * s.depth) - s.slip * s.c;
            for (a, &p) in pair.p.iter().enumerate() {
                if s.prox.w[a] != 0.0 {
                    out.f.add(p as usize, f * s.prox.w[a]);
                }
            }
            depths.push((index as u32, s.depth));
        });
        self.coupled_depth = depths;
        self.coupled_now = true;
    }

    /// Adds the Jacobian blocks of those springs: ∂f_a/∂x_b = −k w_a w_b n nᵀ (the
    /// weights and normal held, as in the response) and
    /// ∂f_a/∂v_b = −c w_a w_b (I − n nᵀ).
    pub fn add_coupled_jacobian(&self, particles: &Particles, state: &State, h: f64, sink: &mut dyn JacobianSink) {
        self.coupled_springs(particles, state, h, |_, pair, s| {
            let nn = outer(s.prox.n, s.prox.n);
            let tangent = DMat3::IDENTITY - nn;
            sink.add_stencil(pair.p, s.prox.w, nn * -s.k, tangent * -s.c);
        });
    }

    /// After a step solved with the contact springs: takes back the separating
    /// speed they gave in pushing each starting penetration out (a split impulse,
    /// as the colliders do), so that position errors do not become velocities.
    fn release_coupled(&mut self, particles: &Particles, state: &mut State, h: f64) {
        if !std::mem::take(&mut self.coupled_now) {
            return;
        }
        for &(index, depth) in &self.coupled_depth {
            let pair = &self.coupled[index as usize];
            let prox = narrow::proximity(pair.kind, &gather(&state.x, pair.p), DVec3::Y);
            let w = effective_inverse_mass(&particles.inv_mass, pair, &prox);
            let vn = relative(&state.v, pair, &prox).dot(prox.n);
            if vn > 0.0 && w > 0.0 {
                let cut = vn.min(coupled::coupled_push_speed(CONTACT_COUPLED_STIFFNESS, depth, h));
                apply(&mut state.v, &particles.inv_mass, pair, &prox, prox.n * (-cut / w));
            }
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
        if !crate::par::all_finite(x) {
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
        if self.surfaces.is_empty() || !(crate::par::all_finite(x0) && crate::par::all_finite(&state.x)) {
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

    /// Makes `pairs` hold every pair whose sweeps x0 → x1 (grown by the contact
    /// distance) overlap.
    ///
    /// The list is built with each particle's box around its sweep grown by a
    /// margin, and each primitive's box the union of its particles' boxes (grown by
    /// half the thickness). It stays valid while every particle's x0 and x1 lie
    /// inside its own box: then every primitive's current sweep box lies inside the
    /// box it was hashed with, so no overlapping pair is missing. When a few
    /// particles leave their boxes (corrections within a step), their boxes grow and
    /// only the pairs of the primitives around them are found again
    /// ([`Contacts::update_pairs`]); when many do, the list is rebuilt.
    fn ensure_pairs(&mut self, x0: &Vec3s, x1: &Vec3s) {
        let n = x0.len();
        if self.built_lo.len() == n {
            let (lo, hi) = (self.built_lo.components(), self.built_hi.components());
            let (a, b) = (x0.components(), x1.components());
            let limit = (n / INCREMENTAL_SHARE).max(INCREMENTAL_MIN);
            self.moved.clear();
            // Axis by axis over the component arrays, without early exits (the
            // comparisons vectorise); a particle's index is listed when either end
            // of its sweep lies outside its box.
            let test = |r: std::ops::Range<usize>, out: &mut Vec<u32>| {
                let mut outside = [false; 256];
                let mut first = r.start;
                while first < r.end {
                    let len = (r.end - first).min(outside.len());
                    let flags = &mut outside[..len];
                    flags.fill(false);
                    for axis in 0..3 {
                        let rows = first..first + len;
                        let (lo, hi, a, b) =
                            (&lo[axis][rows.clone()], &hi[axis][rows.clone()], &a[axis][rows.clone()], &b[axis][rows]);
                        for (k, flag) in flags.iter_mut().enumerate() {
                            *flag |= !((a[k] >= lo[k]) & (a[k] <= hi[k]) & (b[k] >= lo[k]) & (b[k] <= hi[k]));
                        }
                    }
                    out.extend(flags.iter().enumerate().filter(|&(_, &f)| f).map(|(k, _)| (first + k) as u32));
                    first += len;
                }
            };
            crate::par::collect_ranges(n, &mut self.parts_u32, test, &mut self.moved);
            self.clear_touched();
            if self.moved.is_empty() {
                return;
            }
            if self.moved.len() + self.dirty.len() <= limit {
                self.update_pairs(x0, x1);
                return;
            }
        }
        self.rebuilds += 1;
        self.full_build(x0, x1);
    }

    /// [`Contacts::ensure_pairs`] after responses within a step: x0 is unchanged
    /// and only the particles in `touched` can have moved since the last check, so
    /// only their end positions are tested.
    fn ensure_touched(&mut self, x0: &Vec3s, x1: &Vec3s) {
        let n = x0.len();
        if self.built_lo.len() != n {
            self.clear_touched();
            self.ensure_pairs(x0, x1);
            return;
        }
        let (lo, hi) = (&self.built_lo, &self.built_hi);
        let inside = |i: usize, p: DVec3| p.cmpge(lo.get(i)).all() && p.cmple(hi.get(i)).all();
        self.moved.clear();
        self.moved.extend(self.touched.iter().copied().filter(|&i| !inside(i as usize, x1.get(i as usize))));
        self.moved.sort_unstable();
        self.clear_touched();
        if self.moved.is_empty() {
            return;
        }
        let limit = (n / INCREMENTAL_SHARE).max(INCREMENTAL_MIN);
        if self.moved.len() + self.dirty.len() <= limit {
            self.update_pairs(x0, x1);
            return;
        }
        self.rebuilds += 1;
        self.full_build(x0, x1);
    }

    /// Adds the particles of the close pairs to `touched`.
    fn touch_close(&mut self) {
        for k in 0..self.close.len() {
            let p = self.pairs[self.close[k] as usize].p;
            self.touch(p);
        }
    }

    /// Adds the particles of the current hits to `touched`.
    fn touch_hits(&mut self) {
        for k in 0..self.hits.len() {
            let p = self.pairs[self.hits[k].0].p;
            self.touch(p);
        }
    }

    /// Adds particles `p` to `touched` (each once).
    fn touch(&mut self, p: [u32; 4]) {
        if self.marked.len() < self.built_lo.len() {
            self.marked.resize(self.built_lo.len(), false);
        }
        for i in p {
            if let Some(m) = self.marked.get_mut(i as usize).filter(|m| !**m) {
                *m = true;
                self.touched.push(i);
            }
        }
    }

    /// Empties `touched`.
    fn clear_touched(&mut self) {
        for &i in &self.touched {
            self.marked[i as usize] = false;
        }
        self.touched.clear();
    }

    /// Rebuilds the list for the sweep `x0` → `x1`, with a margin for reuse.
    fn full_build(&mut self, x0: &Vec3s, x1: &Vec3s) {
        let n = x0.len();
        // A list can outlive the step when no particle's sweep is longer than
        // the thickness: then each particle's box also covers its motion some
        // steps ahead plus a small margin. For fast motion the box covers two
        // steps ahead and the margin is the thickness (it absorbs small
        // corrections; larger ones go to incremental updates). Either list is
        // culled by distance (`Near`) and each pass tests pairs by their gaps
        // (`kept_apart`).
        let thickness = self.surfaces.bodies.iter().map(|b| b.thickness).fold(0.0, f64::max);
        let sweep = (0..n).map(|i| (x1.get(i) - x0.get(i)).abs().max_element()).fold(0.0, f64::max);
        let slow = sweep <= thickness;
        let factor = if slow { PAIR_MARGIN } else { PAIR_MARGIN_FAST };
        self.margin = factor * thickness;
        // Culling costs a distance per candidate pair at the build and saves a
        // box test per pair in every pass: worth it for a list built to last, and
        // for the fast lists too (implicit crumple, 0.3 builds a step: 63,000 →
        // 37,500 pairs; on two threads broad 2.1 → 2.7 ms, narrow 1.4 → 0.6 ms,
        // response 1.3 → 0.8 ms a step).
        self.cull = true;
        self.lookahead = if slow { PAIR_LOOKAHEAD } else { PAIR_LOOKAHEAD_FAST };
        self.build_pairs(x0, x1, self.margin);
    }

    /// The broad phase on its own: every candidate pair whose boxes around the
    /// sweep `x0` → `x1` (grown by the contact distance) overlap, in the order the
    /// response uses. Valid for this sweep only.
    pub fn broad_phase(&mut self, x0: &Vec3s, x1: &Vec3s) -> &[Pair] {
        self.cull = false;
        self.lookahead = 0.0;
        self.build_pairs(x0, x1, 0.0);
        self.built_lo.resize(0);
        &self.pairs
    }

    /// Sets particle `i`'s box to its sweep `a` → `b` grown by `margin`, or grows
    /// it to cover that sweep.
    fn fit_particle_box(&mut self, i: usize, a: DVec3, b: DVec3, grow: bool) {
        let m = DVec3::splat(self.margin);
        let ahead = b + self.lookahead * (b - a);
        let (mut lo, mut hi) = (a.min(b).min(ahead) - m, a.max(b).max(ahead) + m);
        if grow {
            lo = lo.min(self.built_lo.get(i));
            hi = hi.max(self.built_hi.get(i));
        }
        self.built_lo.set(i, lo);
        self.built_hi.set(i, hi);
        self.anchor.set(i, b);
        self.reach[i] = (b - lo).max(hi - b).length();
    }

    /// Rebuilds `pairs` for the sweep `x0` → `x1` with every box grown by a further
    /// `margin` (m).
    fn build_pairs(&mut self, x0: &Vec3s, x1: &Vec3s, margin: f64) {
        self.pairs.clear();
        // Hits index the old list (and a new list is tested whole anyway).
        self.hits.clear();
        self.pairs_version += 1;
        self.margin = margin;
        self.built_lo.resize(x0.len());
        self.built_hi.resize(x0.len());
        self.anchor.resize(x0.len());
        self.reach.resize(x0.len(), 0.0);
        for i in 0..x0.len() {
            self.fit_particle_box(i, x0.get(i), x1.get(i), false);
        }
        for &i in &self.dirty {
            self.is_dirty[i as usize] = false;
        }
        self.dirty.clear();
        for class in [TRIANGLES, EDGES, POINTS, VERTICES] {
            let count = self.surfaces.count(class);
            for &k in &self.prim_dirty_list[class] {
                self.prim_dirty[class][k as usize] = false;
            }
            self.prim_dirty_list[class].clear();
            self.prim_dirty[class].resize(count, false);
            self.prim_stamp[class].resize(count, 0);
        }
        let surf = &self.surfaces;
        let (lo, hi) = (&self.built_lo, &self.built_hi);
        // Every primitive's box, class after class, filled in parallel chunks.
        let counts = [TRIANGLES, EDGES, POINTS, VERTICES].map(|class| surf.count(class));
        self.boxes.clear();
        self.boxes.resize(counts.iter().sum(), Aabb::default());
        let fill = |first: usize, out: &mut [Aabb]| {
            let (mut class, mut k) = (0, first);
            while class < 3 && k >= counts[class] {
                k -= counts[class];
                class += 1;
            }
            for b in out {
                while k >= counts[class] {
                    k = 0;
                    class += 1;
                }
                *b = primitive_box(surf, lo, hi, class, k);
                k += 1;
            }
        };
        if self.boxes.len() <= CHUNK || rayon::current_num_threads() == 1 {
            fill(0, &mut self.boxes);
        } else {
            use rayon::prelude::*;
            self.boxes.par_chunks_mut(CHUNK).enumerate().for_each(|(c, out)| fill(c * CHUNK, out));
        }
        if self.boxes.is_empty() {
            return;
        }
        let (tri_boxes, point_first) = (surf.triangles.len(), surf.triangles.len() + surf.edges.len());
        let vertex_first = point_first + surf.points.len();
        // Cell size: the mean extent of the triangle, edge and point boxes.
        let shared = &self.boxes[..vertex_first];
        let mean = shared.iter().map(|b| (b.hi - b.lo).max_element()).sum::<f64>() / shared.len().max(1) as f64;
        let cell = (mean * CELL_SIZE).max(1e-9);
        self.cell = cell;
        // Vertex–triangle: the vertices' hash joined with the triangles'; edge–edge
        // and vertex–vertex (particles of bodies without edges): self-joins. Joins
        // run over parts of the table in parallel, concatenated in part order. (The
        // list's order does not matter: the response takes the pairs it acts on
        // in their canonical order, `Pair::order`.)
        let boxes = &self.boxes;
        let tris = &boxes[..tri_boxes];
        let edges = &boxes[tri_boxes..point_first];
        let points = &boxes[point_first..vertex_first];
        let verts = &boxes[vertex_first..];
        let pairs = &mut self.pairs;
        // The four hashes are independent: build them side by side.
        let [hv, ht, he, hp] = &mut self.hashes;
        rayon::join(
            || rayon::join(|| hv.build(verts, cell), || ht.build(tris, cell)),
            || rayon::join(|| he.build(edges, cell), || hp.build(points, cell)),
        );
        let [hv, ht, he, hp] = &self.hashes;
        let near = Near { on: self.cull, x: &self.anchor, reach: &self.reach };
        let vt = |k, t| surf.vertex_triangle(k, t).and_then(|p| near.keep(p));
        let ee = |k, o| surf.edge_edge(k, o).and_then(|p| near.keep(p));
        let vv = |k, o| surf.point_point(k, o).and_then(|p| near.keep(p));
        in_parts(hv.slots(), |r, out| hv.join(ht, r, |k, t| out.extend(vt(k, t))), pairs);
        hv.join_large(ht, |k, t| pairs.extend(vt(k, t)));
        in_parts(he.slots(), |r, out| he.self_join(r, |k, o| out.extend(ee(k, o))), pairs);
        he.self_join_large(|k, o| pairs.extend(ee(k, o)));
        in_parts(hp.slots(), |r, out| hp.self_join(r, |k, o| out.extend(vv(k, o))), pairs);
        hp.self_join_large(|k, o| pairs.extend(vv(k, o)));
        self.base_len = self.pairs.len();
    }

    /// Incremental update of `pairs` for the particles in `moved` (which left
    /// their boxes): their boxes grow to cover x0 → x1, they and their primitives
    /// become dirty (hashed boxes stale) until the next full build, and the pairs
    /// of the primitives touching them are found again — against the hashes for
    /// clean primitives (whose hashed boxes still hold), and directly against the
    /// dirty ones.
    fn update_pairs(&mut self, x0: &Vec3s, x1: &Vec3s) {
        let n = x0.len();
        self.is_dirty.resize(n, false);
        self.moving.resize(n, false);
        self.pending.resize(n, false);
        // The list's indices change: what the next continuous pass must test is
        // kept per particle instead.
        for &(k, _) in &self.hits {
            for &p in &self.pairs[k].p {
                self.pending[p as usize] = true;
            }
        }
        self.hits.clear();
        for k in 0..self.moved.len() {
            let i = self.moved[k] as usize;
            self.fit_particle_box(i, x0.get(i), x1.get(i), true);
            self.moving[i] = true;
            self.pending[i] = true;
            if !self.is_dirty[i] {
                self.is_dirty[i] = true;
                self.dirty.push(i as u32);
            }
        }
        // Pairs found by earlier updates that touch a moving particle go; they
        // are found again below. (Pairs of the full build that touch a dirty
        // particle are dead: skipped, see `Live`.)
        let moving = &self.moving;
        let mut keep = self.base_len;
        for k in self.base_len..self.pairs.len() {
            if !self.pairs[k].p.iter().any(|&i| moving[i as usize]) {
                self.pairs[keep] = self.pairs[k];
                keep += 1;
            }
        }
        self.pairs.truncate(keep);
        // The primitives touching a moving particle: new this update, and dirty
        // (their hashed boxes are stale) until the next full build.
        let surf = &self.surfaces;
        self.stamp += 1;
        for class in [TRIANGLES, EDGES, POINTS, VERTICES] {
            self.fresh[class].clear();
        }
        for &i in &self.moved {
            for &(class, k) in self.incidence.of_particle(i) {
                let (class, k) = (class as usize, k as usize);
                if self.prim_stamp[class][k] != self.stamp {
                    self.prim_stamp[class][k] = self.stamp;
                    self.fresh[class].push(k as u32);
                    if !self.prim_dirty[class][k] {
                        self.prim_dirty[class][k] = true;
                        self.prim_dirty_list[class].push(k as u32);
                    }
                }
            }
        }
        for &i in &self.moved {
            self.moving[i as usize] = false;
        }
        // Each fresh primitive against the clean ones (through the full build's
        // hashes) and against every dirty one: the fresh ones of a class are hashed
        // on their own and each dirty primitive of the partner class is looked up
        // in that small hash (a direct test of every fresh against every dirty
        // primitive grew with the square of the dirty list: 0.6 ms an update for 17
        // particles on the crumple, late in a list's life). A pair of two fresh
        // primitives is found once.
        // The three groups (fresh vertices, fresh triangles, fresh edges and
        // points) are independent lookups: they run side by side, each into its
        // own list, and the lists are appended in a fixed order.
        let mut scratch = std::mem::take(&mut self.fresh_scratch);
        let (lo, hi) = (&self.built_lo, &self.built_hi);
        let (dirty, dirty_list, fresh, stamp) = (&self.prim_dirty, &self.prim_dirty_list, &self.fresh, self.stamp);
        let [hv, ht, he, hp] = &self.hashes;
        let near = Near { on: self.cull, x: &self.anchor, reach: &self.reach };
        let cell = self.cell;
        let b = |class: usize, k: u32| primitive_box(surf, lo, hi, class, k as usize);
        let clean = |class: usize, k: u32| !dirty[class][k as usize];
        let is_fresh = |class: usize, k: u32| self.prim_stamp[class][k as usize] == stamp;
        let hash_fresh = |class: usize, part: &mut FreshScratch| {
            part.boxes.clear();
            part.boxes.extend(fresh[class].iter().map(|&k| b(class, k)));
            part.hash.build(&part.boxes, cell);
            part.found.clear();
        };
        let [sv, st, se] = &mut scratch;
        let vertices = |part: &mut FreshScratch| {
            hash_fresh(VERTICES, part);
            let (small, found) = (&part.hash, &mut part.found);
            for &k in &fresh[VERTICES] {
                ht.for_each_overlap(&b(VERTICES, k), |t| {
                    if clean(TRIANGLES, t) {
                        found.extend(surf.vertex_triangle(k, t).and_then(|p| near.keep(p)));
                    }
                });
            }
            for &t in &dirty_list[TRIANGLES] {
                let bt = b(TRIANGLES, t);
                small.for_each_overlap(&bt, |j| {
                    let k = fresh[VERTICES][j as usize];
                    if bt.overlaps(&b(VERTICES, k)) {
                        found.extend(surf.vertex_triangle(k, t).and_then(|p| near.keep(p)));
                    }
                });
            }
        };
        let triangles = |part: &mut FreshScratch| {
            hash_fresh(TRIANGLES, part);
            let (small, found) = (&part.hash, &mut part.found);
            for &t in &fresh[TRIANGLES] {
                hv.for_each_overlap(&b(TRIANGLES, t), |k| {
                    if clean(VERTICES, k) {
                        found.extend(surf.vertex_triangle(k, t).and_then(|p| near.keep(p)));
                    }
                });
            }
            for &k in &dirty_list[VERTICES] {
                if is_fresh(VERTICES, k) {
                    continue;
                }
                let bk = b(VERTICES, k);
                small.for_each_overlap(&bk, |j| {
                    let t = fresh[TRIANGLES][j as usize];
                    if bk.overlaps(&b(TRIANGLES, t)) {
                        found.extend(surf.vertex_triangle(k, t).and_then(|p| near.keep(p)));
                    }
                });
            }
        };
        let edges_points = |part: &mut FreshScratch| {
            let mut found = std::mem::take(&mut part.found);
            found.clear();
            for (class, hash) in [(EDGES, he), (POINTS, hp)] {
                let make = |k: u32, o: u32| {
                    let (k, o) = (k.min(o), k.max(o));
                    if class == EDGES { surf.edge_edge(k, o) } else { surf.point_point(k, o) }
                        .and_then(|p| near.keep(p))
                };
                for &k in &fresh[class] {
                    hash.for_each_overlap(&b(class, k), |o| {
                        if clean(class, o) {
                            found.extend(make(k, o));
                        }
                    });
                }
                hash_fresh(class, part);
                for &o in &dirty_list[class] {
                    let bo = b(class, o);
                    part.hash.for_each_overlap(&bo, |j| {
                        let k = fresh[class][j as usize];
                        if o != k && !(is_fresh(class, o) && o < k) && bo.overlaps(&b(class, k)) {
                            found.extend(make(k, o));
                        }
                    });
                }
            }
            part.found = found;
        };
        rayon::join(|| rayon::join(|| vertices(sv), || triangles(st)), || edges_points(se));
        for part in &scratch {
            self.pairs.extend_from_slice(&part.found);
        }
        self.fresh_scratch = scratch;
    }

    /// Proximity response at the end positions; returns the number of pairs found
    /// closer than their contact distance in the first pass.
    fn proximity(&mut self, particles: &Particles, state: &mut State, coupled: bool) -> usize {
        // Detection in parallel (read-only), response in order on the close pairs.
        // First test: the pair's gap.
        let x = &state.x;
        self.strays(None, x);
        let stray = &self.stray;
        let pairs = &self.pairs;
        let live = Live::of_list(self.base_len, &self.dirty, &self.is_dirty);
        let detect = |k: usize, out: &mut Vec<u32>| {
            let pair = &pairs[k];
            if !live.of(k, pair) {
                return;
            }
            if kept_apart(pair, stray, pair.distance) {
                return;
            }
            let pos = gather(x, pair.p);
            if narrow::proximity(pair.kind, &pos, DVec3::Y).distance < pair.distance {
                out.push(k as u32);
            }
        };
        self.close.clear();
        crate::par::collect_ranges(
            pairs.len(),
            &mut self.parts_u32,
            |r, out| r.for_each(|k| detect(k, out)),
            &mut self.close,
        );
        // Gauss–Seidel in canonical order.
        self.close.sort_unstable_by_key(|&k| pairs[k as usize].order());
        let found = self.close.len();
        // The contacts the next step's implicit solve (if any) holds as springs:
        // every close pair. Those this step's solve held keep their penetration
        // up to the slop (the spring carries the load with it); the others are
        // moved apart to their distance.
        let mut held = std::mem::take(&mut self.held_keys);
        held.clear();
        if coupled {
            held.extend(self.coupled.iter().map(|p| (p.kind as u8, p.p)));
            held.sort_unstable();
        }
        self.coupled.clear();
        self.coupled.extend(self.close.iter().map(|&k| pairs[k as usize]));
        // A held pair is pushed apart only to within the slop of its distance (the
        // list is a cache: its distances are put back after the response).
        let mut shrunk = std::mem::take(&mut self.shrunk);
        shrunk.clear();
        if coupled {
            for &k in &self.close {
                let pair = &mut self.pairs[k as usize];
                if held.binary_search(&(pair.kind as u8, pair.p)).is_ok() {
                    shrunk.push((k, pair.distance));
                    pair.distance *= 1.0 - coupled::COUPLED_SLOP;
                }
            }
        }
        self.held_keys = held;
        let settings = self.settings;
        let islands = self.islands(particles, state.len());
        // Island after island: an island whose pass changed nothing is done (its
        // next passes would change nothing either), so this does the operations of
        // the passes over all pairs without their idle rounds. Islands share no
        // movable particle, so on two threads or more they are swept side by
        // side, each whole by one thread, on the particles in place: the result
        // is the same whichever thread sweeps which island.
        let (pairs, close, starts) = (&self.pairs, &self.close, &self.island_start);
        let inv = &particles.inv_mass;
        let threads = rayon::current_num_threads();
        if islands < 2 || close.len() < SPLIT_MIN_PAIRS || threads == 1 {
            for i in 0..islands {
                let mine = &close[starts[i] as usize..starts[i + 1] as usize];
                respond_close(pairs, mine, &mut state.x, &mut state.v, inv, settings);
            }
        } else {
            // Each island goes to the thread whose share of the particles holds
            // its pairs' first particle: that thread's passes touched it last, so
            // its data is in that core's cache.
            let key = &mut self.island_key;
            key.clear();
            key.extend((0..islands).map(|i| pairs[close[starts[i] as usize] as usize].p[0]));
            let (key, n) = (&*key, state.len());
            // SAFETY: each island's movable particles are in no other island
            // (`Contacts::islands`), and `respond_close` adds only to movable
            // particles (`apply` skips a zero inverse mass), so a row one thread
            // adds to is touched by no other thread.
            let (x, v) = unsafe { (SharedRows::new(&mut state.x), SharedRows::new(&mut state.v)) };
            crate::par::for_ranges(n, |r| {
                let (mut x, mut v) = (x, v);
                for i in 0..islands {
                    if r.contains(&(key[i] as usize)) {
                        let mine = &close[starts[i] as usize..starts[i + 1] as usize];
                        respond_close(pairs, mine, &mut x, &mut v, inv, settings);
                    }
                }
            });
        }
        for &(k, distance) in &shrunk {
            self.pairs[k as usize].distance = distance;
        }
        self.shrunk = shrunk;
        found
    }

    /// Sorts `close` into islands — groups of pairs linked through shared movable
    /// particles (pinned ones are only read) — keeping the canonical order within
    /// each; `island_start` gets their bounds. Returns the number of islands.
    fn islands(&mut self, particles: &Particles, n: usize) -> usize {
        let (pairs, parent) = (&self.pairs, &mut self.parent);
        parent.resize(n, 0);
        let movable = |p: u32| particles.inv_mass[p as usize] > 0.0;
        for &k in &self.close {
            for &p in &pairs[k as usize].p {
                parent[p as usize] = p;
            }
        }
        fn root(parent: &mut [u32], mut i: u32) -> u32 {
            while parent[i as usize] != i {
                let up = parent[parent[i as usize] as usize];
                parent[i as usize] = up;
                i = up;
            }
            i
        }
        for &k in &self.close {
            let mut first = None;
            for &p in pairs[k as usize].p.iter().filter(|&&p| movable(p)) {
                let r = root(parent, p);
                match first {
                    None => first = Some(r),
                    Some(f) if f != r => parent[r as usize] = f,
                    Some(_) => {}
                }
            }
        }
        // Number the islands by first appearance, then a stable counting sort.
        self.island_of.clear();
        self.island_of.reserve(self.close.len());
        self.island_id.resize(n, u32::MAX);
        let mut islands = 0u32;
        for &k in &self.close {
            let id = match pairs[k as usize].p.iter().copied().find(|&p| movable(p)) {
                Some(p) => {
                    let r = root(parent, p) as usize;
                    if self.island_id[r] == u32::MAX {
                        self.island_id[r] = islands;
                        islands += 1;
                    }
                    self.island_id[r]
                }
                // Nothing movable: the response skips it; any island will do.
                None => 0,
            };
            self.island_of.push(id);
        }
        islands = islands.max(1);
        for &k in &self.close {
            for &p in &pairs[k as usize].p {
                self.island_id[p as usize] = u32::MAX;
            }
        }
        self.island_start.clear();
        self.island_start.resize(islands as usize + 1, 0);
        for &id in &self.island_of {
            self.island_start[id as usize + 1] += 1;
        }
        for i in 0..islands as usize {
            self.island_start[i + 1] += self.island_start[i];
        }
        self.island_sorted.clear();
        self.island_sorted.resize(self.close.len(), 0);
        let mut fill = self.island_start.clone();
        for (&k, &id) in self.close.iter().zip(&self.island_of) {
            self.island_sorted[fill[id as usize] as usize] = k;
            fill[id as usize] += 1;
        }
        std::mem::swap(&mut self.close, &mut self.island_sorted);
        islands as usize
    }

    /// Continuous detection for the sweep `x0` → `x1` into `hits`.
    ///
    /// Within one resolve (x0 fixed) a pass after the first tests only the pairs
    /// with a particle that moved since the previous pass or took part in one of
    /// its hits: every other pair has the same sweep as when it was last found
    /// clear, so testing it again would give the same answer. A rebuilt pair list
    /// is tested whole.
    fn find_hits(&mut self, x0: &Vec3s, x1: &Vec3s) {
        let partial = self.tested == Some(self.pairs_version) && self.tested_x1.len() == x1.len();
        if partial {
            self.retest.clear();
            self.retest.resize(x1.len(), false);
            self.pending.resize(x1.len(), false);
            for (i, r) in self.retest.iter_mut().enumerate() {
                *r = x1.get(i) != self.tested_x1.get(i) || self.pending[i];
            }
            for &(k, _) in &self.hits {
                for &p in &self.pairs[k].p {
                    self.retest[p as usize] = true;
                }
            }
        }
        // First test: the pair's gap.
        self.strays(Some(x0), x1);
        let stray = &self.stray;
        let (pairs, excluded, retest) = (&self.pairs, &self.excluded, &self.retest);
        let live = Live::of_list(self.base_len, &self.dirty, &self.is_dirty);
        let test = |k: usize, out: &mut Vec<(usize, Hit)>| {
            let pair = &pairs[k];
            if partial && !pair.p.iter().any(|&p| retest[p as usize]) || !live.of(k, pair) {
                return;
            }
            let eta = 0.1 * pair.distance;
            if kept_apart(pair, stray, eta) {
                return;
            }
            if !excluded.is_empty() && excluded.binary_search(&pair.p).is_ok() {
                return;
            }
            let (a, b) = (gather(x0, pair.p), gather(x1, pair.p));
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
        crate::par::collect_ranges(
            pairs.len(),
            &mut self.parts_hits,
            |r, out| r.for_each(|k| test(k, out)),
            &mut self.hits,
        );
        // The responses take the hits in canonical order.
        self.hits.sort_unstable_by_key(|h| pairs[h.0].order());
        self.pending.clear();
        self.tested = Some(self.pairs_version);
        self.tested_x1.copy_from(x1);
        if !self.excluded.is_empty() {
            // Excluded stencils that have separated rejoin continuous detection.
            let pairs = &self.pairs;
            let still = |p: &[u32; 4]| {
                pairs.iter().find(|q| q.p == *p).is_none_or(|q| {
                    let pos = gather(x1, q.p);
                    narrow::proximity(q.kind, &pos, DVec3::Y).distance < q.distance
                })
            };
            let before = self.excluded.len();
            self.excluded.retain(still);
            if self.excluded.len() != before {
                // Pairs that rejoined have not been tested yet.
                self.tested = None;
            }
        }
    }

    /// Sets `stray` to how far each particle is from its anchor: at `x1`, or at
    /// the farthest of `x0` and `x1` (and so anywhere on the straight sweep
    /// between them). With a pair's `gap`, a bound on how close it can be
    /// ([`kept_apart`]).
    fn strays(&mut self, x0: Option<&Vec3s>, x1: &Vec3s) {
        let anchor = &self.anchor;
        self.stray.resize(x1.len(), 0.0);
        let fill = |first: usize, out: &mut [f64]| {
            for (k, s) in out.iter_mut().enumerate() {
                let (i, a) = (first + k, anchor.get(first + k));
                let far = x1.get(i).distance(a);
                *s = x0.map_or(far, |x0| far.max(x0.get(i).distance(a)));
            }
        };
        crate::par::for_ranges_mut([&mut self.stray], |first, [out]| fill(first, out));
    }

    /// Impulse-and-push response to each hit, in order (Gauss–Seidel).
    fn respond_to_hits(&mut self, particles: &Particles, x0: &Vec3s, state: &mut State) {
        for &(k, hit) in &self.hits {
            let pair = self.pairs[k];
            let mut prox = hit.at;
            prox.n = hit_normal(pair.kind, &gather(x0, pair.p), &gather(&state.x, pair.p), &hit);
            let kk = effective_inverse_mass(&particles.inv_mass, &pair, &prox);
            if kk <= 0.0 {
                continue;
            }
            let target = 0.5 * pair.distance;
            let gap = relative(&state.x, &pair, &prox).dot(prox.n);
            if gap < target {
                apply(&mut state.x, &particles.inv_mass, &pair, &prox, prox.n * ((target - gap) / kk));
            }
            let vn = relative(&state.v, &pair, &prox).dot(prox.n);
            if vn < 0.0 {
                apply(&mut state.v, &particles.inv_mass, &pair, &prox, prox.n * (-vn / kk));
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
/// the pair list serve several steps (see `Contacts::ensure_pairs`), with
/// [`PAIR_LOOKAHEAD`]. Measured with it on the default scene (32 × 32 cloth,
/// 15 000 steps, one thread): margins 0.25–0.5 with 8–16 steps ahead took 3.8–5.0 s
/// (a noisy machine), without looking ahead 5.6 s at 0.5 and 7.8 s at 1.0; at 2
/// (the value before distance culling) 30 s, as nearly every pair of neighbouring
/// cloth elements then survives the culling. On the symplectic 64 × 64 crumple,
/// 1.7–2.0 ms per step against 3.3 ms without looking ahead.
const PAIR_MARGIN: f64 = 0.35;

/// Steps of a particle's current motion (its sweep x0 → x1 continued past x1)
/// that its box covers ahead, for lists that serve several steps: a cloth that
/// swings as a whole then stays inside its boxes instead of forcing a rebuild
/// every few steps. See [`PAIR_MARGIN`] for the measurements.
const PAIR_LOOKAHEAD: f64 = 12.0;

/// Steps of a particle's motion ahead that its box covers when particles move
/// farther than the thickness in a step: a particle that keeps its velocity then
/// stays inside its box for the next two steps instead of leaving it at once and
/// forcing an update or a rebuild. Measured on the implicit crumple (the
/// `contact-cost` experiment, h = 1 ms, two threads; broad / narrow / response ms
/// per step): 0 steps 4.5–4.8 / 1.2 / 1.2–1.3 (35,900 pairs), 1 step
/// 3.3 / 1.3 / 1.4, 2 steps 2.6–2.8 / 1.4–1.5 / 1.4–1.5 (37,600 pairs), 3 steps
/// 2.5 / 1.5 / 1.5 (42,000), 4 steps 2.7 / 1.4 / 1.5 (44,800).
const PAIR_LOOKAHEAD_FAST: f64 = 2.0;

/// Growth of the broad phase's boxes, in units of the largest thickness, when
/// particles move farther than the thickness in a step (the list cannot outlive the
/// step; the margin absorbs small corrections within it, larger ones go to
/// incremental updates). Measured on the implicit crumple: 0.5, 1 and 2 gave 7.9,
/// 5.4 and 4.8 ms of broad phase but 2.5, 2.6 and 3.1 ms of narrow phase per step.
const PAIR_MARGIN_FAST: f64 = 1.0;

/// An incremental update of the pair list handles at most 1/this of the particles
/// (and at least [`INCREMENTAL_MIN`]); beyond it the list is rebuilt.
const INCREMENTAL_SHARE: usize = 16;

/// See [`INCREMENTAL_SHARE`].
const INCREMENTAL_MIN: usize = 16;

/// Primitive classes of a surface, as indices.
const TRIANGLES: usize = 0;
const EDGES: usize = 1;
const POINTS: usize = 2;
const VERTICES: usize = 3;

/// The primitives (class, index) touching each particle.
#[derive(Clone, Debug, Default)]
struct Incidence {
    start: Vec<u32>,
    items: Vec<(u8, u32)>,
}

impl Incidence {
    fn of(surf: &surface::Surfaces) -> Incidence {
        let mut all: Vec<(u32, u8, u32)> = Vec::new();
        for class in [TRIANGLES, EDGES, POINTS, VERTICES] {
            for k in 0..surf.count(class) {
                for &p in surf.particles_of(class, k) {
                    all.push((p, class as u8, k as u32));
                }
            }
        }
        all.sort_unstable();
        all.dedup();
        let n = all.iter().map(|a| a.0 as usize + 1).max().unwrap_or(0);
        let mut start = vec![0u32; n + 1];
        for a in &all {
            start[a.0 as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        Incidence { start, items: all.into_iter().map(|a| (a.1, a.2)).collect() }
    }

    fn of_particle(&self, i: u32) -> &[(u8, u32)] {
        let i = i as usize;
        if i + 1 >= self.start.len() {
            return &[];
        }
        &self.items[self.start[i] as usize..self.start[i + 1] as usize]
    }
}

impl surface::Surfaces {
    /// Number of primitives of `class`.
    fn count(&self, class: usize) -> usize {
        match class {
            TRIANGLES => self.triangles.len(),
            EDGES => self.edges.len(),
            POINTS => self.points.len(),
            _ => self.vertices.len(),
        }
    }

    /// Particles of primitive `k` of `class`, and its body.
    fn particles_of(&self, class: usize, k: usize) -> &[u32] {
        match class {
            TRIANGLES => &self.triangles[k],
            EDGES => &self.edges[k],
            POINTS => std::slice::from_ref(&self.points[k]),
            _ => std::slice::from_ref(&self.vertices[k]),
        }
    }

    fn body_of(&self, class: usize, k: usize) -> u32 {
        match class {
            TRIANGLES => self.triangle_body[k],
            EDGES => self.edge_body[k],
            POINTS => self.point_body[k],
            _ => self.vertex_body[k],
        }
    }

    /// Vertex `k` against triangle `t`, unless they share a particle or their
    /// bodies do not touch.
    fn vertex_triangle(&self, k: u32, t: u32) -> Option<Pair> {
        let (v, vb) = (self.vertices[k as usize], self.vertex_body[k as usize]);
        let (tri, tb) = (self.triangles[t as usize], self.triangle_body[t as usize]);
        (!tri.contains(&v) && self.may_touch(vb, tb)).then(|| {
            let p = [v, tri[0], tri[1], tri[2]];
            Pair {
                kind: PairKind::VertexTriangle,
                p,
                distance: self.contact_distance(vb, tb),
                query: k,
                other: t,
                gap: f64::NEG_INFINITY,
            }
        })
    }

    /// Edge `k` against edge `o` (k < o), unless they share a particle or their
    /// bodies do not touch.
    fn edge_edge(&self, k: u32, o: u32) -> Option<Pair> {
        let (e, eb) = (self.edges[k as usize], self.edge_body[k as usize]);
        let (f, ob) = (self.edges[o as usize], self.edge_body[o as usize]);
        (!f.contains(&e[0]) && !f.contains(&e[1]) && self.may_touch(eb, ob)).then(|| {
            let p = [e[0], e[1], f[0], f[1]];
            Pair {
                kind: PairKind::EdgeEdge,
                p,
                distance: self.contact_distance(eb, ob),
                query: k,
                other: o,
                gap: f64::NEG_INFINITY,
            }
        })
    }

    /// Point `k` against point `o` (k < o), unless their bodies do not touch.
    fn point_point(&self, k: u32, o: u32) -> Option<Pair> {
        let (v, vb) = (self.points[k as usize], self.point_body[k as usize]);
        let (w, ob) = (self.points[o as usize], self.point_body[o as usize]);
        self.may_touch(vb, ob).then(|| Pair {
            kind: PairKind::VertexVertex,
            p: [v, w, v, v],
            distance: self.contact_distance(vb, ob),
            query: k,
            other: o,
            gap: f64::NEG_INFINITY,
        })
    }
}

/// Box of primitive `k` of `class`: the union of its particles' boxes (`lo`,
/// `hi`), grown by half its body's thickness.
fn primitive_box(surf: &surface::Surfaces, lo: &Vec3s, hi: &Vec3s, class: usize, k: usize) -> Aabb {
    let half = DVec3::splat(0.5 * surf.thickness_of(surf.body_of(class, k)));
    let mut b = Aabb { lo: DVec3::splat(f64::INFINITY), hi: DVec3::splat(f64::NEG_INFINITY) };
    for &p in surf.particles_of(class, k) {
        b.lo = b.lo.min(lo.get(p as usize));
        b.hi = b.hi.max(hi.get(p as usize));
    }
    Aabb { lo: b.lo - half, hi: b.hi + half }
}

/// Cell edge of the broad phase's hash, in units of the mean box extent: measured
/// on the 64 × 64 crumple (see docs/performance.md).
const CELL_SIZE: f64 = 2.0;

/// Table slots per parallel part of a broad-phase join.
const SLOTS_PER_PART: usize = 2048;

/// Runs `f(slots, out)` over the table slots 0..n in parallel parts and appends
/// the outputs to `dst` in part order.
fn in_parts<T: Send>(n: usize, f: impl Fn(std::ops::Range<usize>, &mut Vec<T>) + Sync, dst: &mut Vec<T>) {
    use rayon::prelude::*;
    let parts = n.div_ceil(SLOTS_PER_PART);
    if parts <= 1 || rayon::current_num_threads() == 1 {
        f(0..n, dst);
        return;
    }
    let outs: Vec<Vec<T>> = (0..parts)
        .into_par_iter()
        .map(|c| {
            let mut out = Vec::new();
            f(c * SLOTS_PER_PART..((c + 1) * SLOTS_PER_PART).min(n), &mut out);
            out
        })
        .collect();
    for o in outs {
        dst.extend(o);
    }
}

/// The proximity response: Gauss–Seidel passes over the pairs `close` (indices
/// into `pairs`, in the order given) on positions `x` and velocities `v` with
/// inverse masses `inv_mass`: each pair closer than its contact distance is pushed
/// apart to it along the normal and, if approaching, gets an impulse with
/// restitution and Coulomb friction. A pass that finds every pair at its distance
/// (to round-off) is the last.
fn respond_close<R: Rows>(pairs: &[Pair], close: &[u32], x: &mut R, v: &mut R, inv_mass: &[f64], s: ContactSettings) {
    let (eps, mu) = (s.restitution, s.friction);
    for _ in 0..s.proximity_iterations.max(1) {
        let mut changed = false;
        for &k in close {
            let pair = &pairs[k as usize];
            let pos = pair.p.map(|i| x.row(i as usize));
            let prox = narrow::proximity(pair.kind, &pos, DVec3::Y);
            if prox.distance >= pair.distance * (1.0 - 1e-9) {
                continue;
            }
            let k = effective_inverse_mass(inv_mass, pair, &prox);
            if k <= 0.0 {
                continue;
            }
            changed = true;
            // Position: to the contact distance.
            let lambda = (pair.distance - prox.distance) / k;
            apply(x, inv_mass, pair, &prox, prox.n * lambda);
            // Velocity: stop an approach (with restitution), Coulomb friction.
            let rel = relative(v, pair, &prox);
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
                apply(v, inv_mass, pair, &prox, impulse);
            }
        }
        if !changed {
            break;
        }
    }
}

/// Fewest close pairs for which the proximity response's islands are shared out
/// among the threads: below it the hand-over costs more than it saves.
const SPLIT_MIN_PAIRS: usize = 64;

/// Scratch of one group of an incremental update: the hash of its fresh
/// primitives, their boxes, and the pairs it found.
#[derive(Clone, Debug, Default)]
struct FreshScratch {
    hash: SpatialHash,
    boxes: Vec<Aabb>,
    found: Vec<Pair>,
}

/// Distance culling of candidate pairs for a list meant to serve many steps. While
/// a particle stays in its box it is within reach of its anchor (the distance to
/// the box's farthest corner), and every point of a primitive moves no farther
/// than its farthest-moving particle (points of a segment or triangle are convex
/// combinations of its particles). Two primitives whose distance at the anchors
/// is D therefore stay at least D − r_a − r_b apart, r being each side's largest
/// reach: a pair for which that exceeds its contact distance can neither be
/// closer than it at the end of a step nor come within it during one, and is
/// left out. A kept pair records D as its `gap`, for the per-pass test of
/// [`Contacts::strays`]. (Boxes that grow in an incremental update bring their
/// primitives' pairs back: those are found again with the new boxes and anchors.)
///
/// Two shortcuts keep this cheap, both exact (the kept pairs and their gaps are
/// those of the plain test): each particle's reach is computed once when its box
/// is fitted (`Contacts::reach`), and a candidate whose sides' anchor boxes are
/// already farther apart than its contact distance plus the reaches (a lower
/// bound on D, with a margin for rounding) is dropped before D is measured —
/// most candidates of a folded cloth are neighbours on the same sheet, a few
/// edges apart.
struct Near<'a> {
    on: bool,
    /// The particles' anchors.
    x: &'a Vec3s,
    /// Each particle's reach: the distance from its anchor to its box's farthest
    /// corner.
    reach: &'a [f64],
}

impl Near<'_> {
    fn keep(&self, mut pair: Pair) -> Option<Pair> {
        if !self.on {
            return Some(pair);
        }
        let reach = sides_reach(&pair, |i| self.reach[i as usize]);
        let pos = gather(self.x, pair.p);
        // The anchor boxes' distance bounds D from below; the margin of a
        // millionth covers the rounding of both D and this bound, so a pair
        // dropped here would also fail the exact test below.
        let bound = pair.distance + reach;
        if anchor_box_gap2(pair.kind, &pos) > (bound * (1.0 + 1e-6)).powi(2) {
            return None;
        }
        pair.gap = narrow::distance(pair.kind, &pos);
        (pair.gap - reach < pair.distance).then_some(pair)
    }
}

/// The largest of `reach` over the particles of each side of `pair`, summed: a
/// bound on how much closer the two primitives can get than they are at the
/// positions `reach` is measured from.
fn sides_reach(pair: &Pair, reach: impl Fn(u32) -> f64) -> f64 {
    let (split, used) = match pair.kind {
        PairKind::VertexTriangle => (1, 4),
        PairKind::EdgeEdge => (2, 4),
        PairKind::VertexVertex => (1, 2),
    };
    let side = |ids: &[u32]| ids.iter().map(|&i| reach(i)).fold(0.0, f64::max);
    side(&pair.p[..split]) + side(&pair.p[split..used])
}

/// Squared distance between the boxes around each side's points of a stencil of
/// kind `kind` at positions `x` (0 when they overlap): a lower bound on the
/// squared distance between the two primitives.
fn anchor_box_gap2(kind: PairKind, x: &[DVec3; 4]) -> f64 {
    let (split, used) = match kind {
        PairKind::VertexTriangle => (1, 4),
        PairKind::EdgeEdge => (2, 4),
        PairKind::VertexVertex => (1, 2),
    };
    let bounds = |p: &[DVec3]| p[1..].iter().fold((p[0], p[0]), |(lo, hi), q| (lo.min(*q), hi.max(*q)));
    let ((alo, ahi), (blo, bhi)) = (bounds(&x[..split]), bounds(&x[split..used]));
    (blo - ahi).max(alo - bhi).max(DVec3::ZERO).length_squared()
}

/// Whether `pair` cannot be within `tolerance` (m) with its particles at most
/// `stray` from their anchors: its `gap` less their reach still exceeds it (with
/// a relative allowance of 1e-9 for the round-off of the distances).
fn kept_apart(pair: &Pair, stray: &[f64], tolerance: f64) -> bool {
    pair.gap - sides_reach(pair, |i| stray[i as usize]) > tolerance + 1e-9 * pair.gap
}

/// Tells live pairs from dead ones: a pair of the last full build that touches a
/// particle made dirty since is dead (its primitives' pairs were found again).
#[derive(Clone, Copy)]
struct Live<'a> {
    /// Pairs from here on are live (0 when nothing is dirty).
    base_len: usize,
    is_dirty: &'a [bool],
}

impl<'a> Live<'a> {
    /// For a list whose pairs from `base_len` on came from incremental updates
    /// since particles `dirty` (flags `is_dirty`) became dirty.
    fn of_list(base_len: usize, dirty: &[u32], is_dirty: &'a [bool]) -> Live<'a> {
        Live { base_len: if dirty.is_empty() { 0 } else { base_len }, is_dirty }
    }

    fn of(&self, k: usize, pair: &Pair) -> bool {
        k >= self.base_len || !pair.p.iter().any(|&i| self.is_dirty[i as usize])
    }
}

/// Boxes per parallel chunk when a full build fills the primitives' boxes.
const CHUNK: usize = 512;

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

/// Per-particle vectors the responses read and add to: a [`Vec3s`] itself, or
/// a view of one shared among threads that work on disjoint islands.
trait Rows {
    fn row(&self, i: usize) -> DVec3;
    fn add_row(&mut self, i: usize, d: DVec3);
}

/// [`Rows`] through a type's own `get` and `add`.
macro_rules! rows_by_get_and_add {
    ($($t:ty),*) => {$(
        impl Rows for $t {
            #[inline]
            fn row(&self, i: usize) -> DVec3 {
                self.get(i)
            }
            #[inline]
            fn add_row(&mut self, i: usize, d: DVec3) {
                self.add(i, d);
            }
        }
    )*};
}

rows_by_get_and_add!(Vec3s, SharedRows<'_>);

/// Positions of a stencil's particles.
fn gather(x: &Vec3s, p: [u32; 4]) -> [DVec3; 4] {
    x.gather(&p)
}

/// Σ w_k u_k over the stencil (a relative position or velocity).
fn relative(u: &impl Rows, pair: &Pair, prox: &Proximity) -> DVec3 {
    let mut r = DVec3::ZERO;
    for (k, &p) in pair.p.iter().enumerate() {
        if prox.w[k] != 0.0 {
            r += prox.w[k] * u.row(p as usize);
        }
    }
    r
}

/// Σ w_k² / m_k: the inverse of the stencil's effective mass along a direction.
fn effective_inverse_mass(inv_mass: &[f64], pair: &Pair, prox: &Proximity) -> f64 {
    pair.p.iter().zip(prox.w).map(|(&p, w)| w * w * inv_mass[p as usize]).sum()
}

/// Adds w_k / m_k × `impulse` to each stencil particle's entry of `u` (a position
/// change or a velocity change): the stencil's Σ w_k u_k then changes by k × impulse.
fn apply(u: &mut impl Rows, inv_mass: &[f64], pair: &Pair, prox: &Proximity, impulse: DVec3) {
    for (k, &p) in pair.p.iter().enumerate() {
        let f = prox.w[k] * inv_mass[p as usize];
        if f != 0.0 {
            u.add_row(p as usize, impulse * f);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::crumple::crumple_world;
    use crate::integrate::IntegratorKind;
    use std::collections::BTreeSet;

    /// The live pairs of `c`'s list as a set of (kind, stencil), none twice.
    fn live_set(c: &Contacts) -> BTreeSet<(u8, [u32; 4])> {
        let live = Live::of_list(c.base_len, &c.dirty, &c.is_dirty);
        let mut set = BTreeSet::new();
        for (k, p) in c.pairs.iter().enumerate() {
            if live.of(k, p) {
                assert!(set.insert((p.kind as u8, p.p)), "pair {:?} {:?} listed twice", p.kind, p.p);
            }
        }
        set
    }

    /// Checks `c`'s list for the sweep `x0` → `x1` against a fresh broad phase
    /// (`fresh`): every pair within its contact distance at the end, or meeting
    /// within η during the sweep, must be live and pass its gap test. Returns how
    /// many close and hitting pairs were checked, and how many pairs in all.
    fn check_pairs_that_can_touch(
        c: &mut Contacts,
        fresh: &mut Contacts,
        x0: &Vec3s,
        x1: &Vec3s,
        round: usize,
    ) -> (usize, usize, usize) {
        let live = Live::of_list(c.base_len, &c.dirty, &c.is_dirty);
        let listed: std::collections::BTreeMap<(u8, [u32; 4]), Pair> = c
            .pairs
            .iter()
            .enumerate()
            .filter(|(k, p)| live.of(*k, p))
            .map(|(_, p)| ((p.kind as u8, p.p), *p))
            .collect();
        c.strays(None, x1);
        let at_end = c.stray.clone();
        c.strays(Some(x0), x1);
        let over_sweep = c.stray.clone();
        let (mut touching, mut hitting, mut checked) = (0, 0, 0);
        let mut times = Vec::new();
        for p in fresh.broad_phase(x0, x1).to_vec() {
            let (a, b) = (gather(x0, p.p), gather(x1, p.p));
            let close = narrow::proximity(p.kind, &b, DVec3::Y).distance < p.distance;
            let eta = 0.1 * p.distance;
            let hit = narrow::ccd(p.kind, &a, &b, eta, &mut times).is_some();
            if !(close || hit) {
                continue;
            }
            checked += 1;
            let kept = listed.get(&(p.kind as u8, p.p));
            let kept =
                kept.unwrap_or_else(|| panic!("round {round}: {:?} {:?} can touch but is not live", p.kind, p.p));
            if close {
                touching += 1;
                assert!(!kept_apart(kept, &at_end, p.distance), "round {round}: close pair skipped by its gap");
            }
            if hit {
                hitting += 1;
                assert!(!kept_apart(kept, &over_sweep, eta), "round {round}: hitting pair skipped by its gap");
            }
        }
        (touching, hitting, checked)
    }

    #[test]
    fn incremental_updates_keep_every_pair_that_can_touch() {
        // A folded cloth, its list built for one fast sweep (every list is culled
        // by distance), then particles nudged out of their boxes a few at a time
        // (incremental updates) and many at once (a rebuild): every pair that a
        // fresh broad phase finds and that is within its contact distance at the
        // end, or meets within η during the sweep, must stay live in the list and
        // pass its gap test.
        let mut world = crumple_world(16, IntegratorKind::SymplecticEuler, 1e-3, true).expect("crumple");
        world.run(150).expect("fold");
        let x0 = world.state.x.clone();
        let mut x1 = x0.clone();
        for i in 0..x1.len() {
            x1.add(i, world.state.v.get(i) * 1e-3);
        }
        let mut c = world.contacts.clone();
        c.ensure_pairs(&x0, &x1);
        let mut fresh = world.contacts.clone();
        let mut seed = 1u64;
        let (mut updates, mut checked) = (0, 0);
        for round in 0..12 {
            let nudged = if round == 8 { x1.len() / 2 } else { 3 };
            for _ in 0..nudged {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let i = (seed >> 33) as usize % x1.len();
                let d = DVec3::new(1.0, -0.5, 0.25) * (0.02 * ((seed >> 20) % 7) as f64 / 7.0);
                x1.add(i, d);
            }
            let before = c.pairs_version;
            c.ensure_pairs(&x0, &x1);
            if c.pairs_version == before && !c.dirty.is_empty() {
                updates += 1;
            }
            // No live pair is listed twice.
            live_set(&c);
            let (_, _, all) = check_pairs_that_can_touch(&mut c, &mut fresh, &x0, &x1, round);
            checked += all;
        }
        assert!(updates >= 5, "only {updates} incremental updates were exercised");
        assert!(checked > 100, "only {checked} touching pairs were checked");
    }

    /// A small deterministic generator for the tests below.
    fn next(seed: &mut u64) -> f64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*seed >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn gaps_less_reach_bound_the_distance_after_any_moves() {
        // The bound behind the culling: primitives at distance D, each particle then
        // moved by at most its reach, stay at least D − (largest reach of each side)
        // apart — for every kind of pair, many random shapes and moves.
        let mut seed = 7u64;
        for round in 0..3000 {
            let kind = [PairKind::VertexTriangle, PairKind::EdgeEdge, PairKind::VertexVertex][round % 3];
            let point = |seed: &mut u64, scale: f64| DVec3::new(next(seed), next(seed), next(seed)) * scale;
            let x: [DVec3; 4] = std::array::from_fn(|_| point(&mut seed, 1.0));
            let reach: [f64; 4] = std::array::from_fn(|_| 0.1 * next(&mut seed));
            let pair = Pair { kind, p: [0, 1, 2, 3], distance: 0.0, query: 0, other: 0, gap: f64::NEG_INFINITY };
            let d = narrow::proximity(kind, &x, DVec3::Y).distance;
            // The anchor boxes' distance, the culling's first test, is a lower bound on D.
            let box_gap = anchor_box_gap2(kind, &x).sqrt();
            assert!(box_gap <= d * (1.0 + 1e-12), "{kind:?}: box gap {box_gap} > D = {d}");
            let bound = d - sides_reach(&pair, |i| reach[i as usize]);
            for _ in 0..10 {
                let moved: [DVec3; 4] = std::array::from_fn(|i| {
                    let dir = (point(&mut seed, 2.0) - DVec3::ONE).normalize_or(DVec3::X);
                    x[i] + dir * reach[i] * next(&mut seed).sqrt()
                });
                let after = narrow::proximity(kind, &moved, DVec3::Y).distance;
                assert!(after >= bound - 1e-12, "{kind:?}: {after} < bound {bound} (D = {d})");
            }
        }
    }

    #[test]
    fn culled_lists_keep_every_pair_that_can_touch() {
        // A folded cloth moving slowly (sweeps under the thickness: the list is
        // culled by distance and passes test pairs by their gaps), then nudged a
        // few particles at a time: every pair that a fresh broad phase finds and
        // that is within its contact distance at the end, or meets within η during
        // the sweep, must be live in the list and must pass its gap test.
        let mut world = crumple_world(16, IntegratorKind::SymplecticEuler, 1e-3, true).expect("crumple");
        world.run(300).expect("fold");
        let thickness = world.contacts.surfaces.bodies.iter().map(|b| b.thickness).fold(0.0, f64::max);
        let x0 = world.state.x.clone();
        let vmax = (0..x0.len()).map(|i| world.state.v.get(i).abs().max_element()).fold(1e-9, f64::max);
        let h = 0.5 * thickness / vmax;
        let mut x1 = x0.clone();
        for i in 0..x1.len() {
            x1.add(i, world.state.v.get(i) * h);
        }
        let mut c = world.contacts.clone();
        c.built_lo.resize(0);
        c.ensure_pairs(&x0, &x1);
        assert!(c.cull, "the list should be culled for slow motion");
        let mut fresh = world.contacts.clone();
        let mut seed = 3u64;
        let (mut touching, mut hitting) = (0, 0);
        for round in 0..10 {
            for _ in 0..20 {
                let i = (next(&mut seed) * x1.len() as f64) as usize;
                let dir = DVec3::new(next(&mut seed), next(&mut seed), next(&mut seed)) * 2.0 - DVec3::ONE;
                let d = dir.normalize_or(DVec3::X) * (8.0 * thickness * next(&mut seed));
                x1.add(i, d);
            }
            c.ensure_pairs(&x0, &x1);
            let (close, hit, _) = check_pairs_that_can_touch(&mut c, &mut fresh, &x0, &x1, round);
            touching += close;
            hitting += hit;
        }
        assert!(
            touching > 0 && hitting > 0,
            "{touching} close and {hitting} hitting pairs: the test exercised too little"
        );
    }
}
