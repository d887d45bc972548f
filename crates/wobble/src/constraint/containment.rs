//! Keeping a two-layer body's inner particles inside its outer layer (004 §4.6:
//! "for the particles on the inner layer, the boundary is constrained to the outer
//! layer instead of the wall and floor").
//!
//! # What is projected
//! Inner particle i has a partner o(i) on the outer surface (the outer particle of
//! the same index, joined to it by a radius spring). Its *candidates* are the outer
//! faces around o(i) (the two outer segments at o(i) for a 2D ring) and every other
//! outer face that comes within the margin m_i of x_i (each face's box, inflated by
//! the margin, holds x_i), so a flattened body's inner particles also see the
//! opposite skin. Those faces are found among per-particle candidate lists: the
//! faces whose boxes, grown by a slack, held the particle when the lists were made
//! (through a bounding-volume hierarchy on large bodies, by testing every box on
//! small ones); the lists serve every projection until some particle has moved,
//! apart from the body's mean motion, by half the slack. A few such particles do
//! not remake them: up to 16 (`MAX_LOOSE_VERTICES`) surface vertices past that
//! limit are *loose*, their faces tested by every search besides its list, and
//! up to 8 (`MAX_LOOSE_PAIRS`) inner particles past it search every face box
//! instead of their lists (a crumpled body at rest, where one jittering skin
//! vertex remade all lists every dozen steps, keeps them for hundreds). Each list
//! is ordered by a lower bound on its faces' distances to the particle when it
//! was made (in buckets an eighth of the slack wide: the larger of the plane and
//! box distances, or the distance itself for the nearer entries once lists last
//! for several projections), and a search stops at the first face that cannot
//! have come nearer than the best one found, since a point's distance to a
//! triangle changes by no more than the motion of the point and of the corners
//! apart from a common translation: after a collapse a search reads a quarter of
//! its list. Let c be the candidate point closest to x_i, lying on a
//! feature — a face interior, an edge or a vertex — with barycentric weights b_k on
//! that feature's vertices, and let n be the feature's outward unit pseudo-normal:
//! the face normal; on an edge the normalised sum of its two faces' normals; at a
//! vertex the angle-weighted normal of all faces around it (Bærentzen & Aanæs 2005:
//! with these normals the sign of (x − c)·n tells inside from outside whenever c is
//! the closest surface point). The constraint is
//!
//! ```text
//! C = (x_i − c) · n + m_i ≤ 0
//! ```
//!
//! the particle stays at least m_i below the tangent plane of its closest feature.
//! A violation is removed as a point–feature contact in position-based dynamics:
//! with inverse masses w,
//!
//! ```text
//! λ = C / (w_i + Σ_k b_k² w_k),   Δx_i = −w_i λ n,   Δx_k = +b_k w_k λ n,
//! ```
//!
//! which makes C = 0 to first order and leaves Σ m x unchanged (Σ_k b_k = 1). If the
//! particle then still moves outward relative to the surface point, u = (v_i −
//! Σ b_k v_k)·n > 0, that relative normal velocity is removed by the equal and
//! opposite impulse J = u / (w_i + Σ b_k² w_k) (a perfectly inelastic, frictionless
//! contact): linear momentum is conserved. The outer layer is pushed outward by its
//! inner layer as a real lining would push its skin.
//!
//! A particle is caught when it comes within its margin of any face, or anywhere
//! near its partner; one that crossed a distant face by more than its margin in a
//! single step would be missed, which needs a speed above m_i / h (10 m/s for the
//! default sphere at h = 1 ms). The tests check containment globally (winding
//! number) in the drop scenes.

use glam::DVec3;

use super::{Constraint, ConstraintContext};
use crate::force::pressure::{ClosedSurface, SurfaceError};
use crate::model::State;

/// Default margin as a fraction of each inner particle's rest distance to its
/// partner (the layer gap): a tenth of the gap keeps an inner particle clear of
/// the skin by more than a typical step's collision correction.
pub const DEFAULT_MARGIN_FRACTION: f64 = 0.1;

/// Up to this many (face, inner particle) pairs every face's box is tested
/// directly; above it, through the cell grid (the grid's sort costs more than a
/// few thousand box tests).
const BRUTE_FORCE_PAIRS: usize = 4096;
/// Faces per leaf of the bounding-volume hierarchy.
const LEAF_FACES: usize = 4;
/// The hierarchy is refitted (its boxes recomputed bottom-up around the same
/// tree) while the summed surface area of its nodes stays within this factor of
/// its area right after its last full build; past it, the tree is built anew.
const REFIT_LIMIT: f64 = 1.5;
/// The hierarchy is built anew once a projection's searches visit more than
/// this factor times the nodes they visited right after its last full build.
const VISIT_LIMIT: f64 = 1.2;

/// Slack of the candidate lists, in units of the largest margin: a list holds
/// the faces whose boxes, grown by this much, held the particle when the lists
/// were made, and the lists serve every projection until some particle has moved,
/// relative to the body's mean motion, by half of it along an axis (see
/// [`Containment::lists_hold`]).
const LIST_SLACK: f64 = 1.0;

/// Up to this many surface vertices that have moved past half the slack may be
/// *loose* (their faces tested by every search whose particle lies in the union
/// of their boxes, besides its list) before the lists are made anew: in a
/// crumpled body at rest one jittering skin vertex would otherwise remake all of
/// them every dozen steps. (Marking vertices loose from a quarter or a tenth of
/// that motion, so that the others' smaller motion bounds the searches, cut the
/// list entries read by a fifth but remade the lists twice as often: slower.)
const MAX_LOOSE_VERTICES: usize = 16;
/// Up to this many inner particles that have moved past half the slack may be
/// loose (searched over every face box) before the lists are made anew.
const MAX_LOOSE_PAIRS: usize = 8;

/// A candidate list's entries are grouped by a lower bound on their distance to
/// the particle in buckets this wide, in units of the lists' slack (see
/// [`Containment::violation`]) ...
const FLOOR_BUCKET_WIDTH: f64 = 0.125;
/// ... and this many buckets (the last holds every entry beyond).
const FLOOR_BUCKETS: usize = 64;
/// Entries whose plane-and-box bound is below this many slacks get the face's
/// distance itself as their bound (a crumpled skin's faces are tilted every
/// way, so many faces' planes pass near a particle whose faces lie farther).
const EXACT_FLOOR_REACH: f64 = 2.5;
/// ... when the lists before served at least this many projections (while a
/// body collapses, lists last a step or two and the distances would cost more
/// than they save).
const EXACT_FLOOR_LIFE: u64 = 8;
/// A triangle is a sliver, whose closest point is not taken for a bound, when
/// |(b − a) × (c − a)|² is below this times the fourth power of its longest
/// edge (the sine of its smallest angle below about 1e-4).
const SLIVER: f64 = 1e-8;

/// A node of the bounding-volume hierarchy over face boxes: its box, and either
/// two children (`left`, `left + 1`… stored as indices) or a range of leaf faces
/// in `order`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Node {
    lo: DVec3,
    hi: DVec3,
    /// Leaf: first face in `order`; inner node: index of the left child.
    start: u32,
    /// Leaf: face count (> 0); inner node: 0, the right child at `right`.
    count: u32,
    /// Inner node: index of the right child.
    right: u32,
}

/// The feature of a patch closest to a point.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Closest {
    /// Closest point, m.
    point: DVec3,
    /// Local vertex indices of the feature (unused slots repeat the first).
    verts: [u32; 3],
    /// Barycentric weights on `verts` (zero for unused slots).
    weights: [f64; 3],
    /// Outward unit pseudo-normal.
    normal: DVec3,
    /// Squared distance, m².
    dist2: f64,
    /// The face it lies on.
    face: u32,
    /// A triangle's vertex: its pseudo-normal is left out of `normal` (zero)
    /// until the search has chosen this feature (see [`Containment::violation`]).
    at_vertex: bool,
}

/// Inner particles kept inside an outer surface. See the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct Containment {
    /// Name for reports.
    pub name: String,
    /// Outer-surface particles (global indices); local index = position here.
    verts: Vec<u32>,
    /// Faces in local indices: triangles, or segments stored as [a, b, b].
    faces: Vec<[u32; 3]>,
    /// True for a 2D loop.
    planar: bool,
    /// For each face, the face across each of its edges (triangles only).
    adjacent: Vec<[u32; 3]>,
    /// CSR of faces around each local vertex.
    fan_start: Vec<u32>,
    fan: Vec<u32>,
    /// (inner particle, local index of its partner, margin m).
    pairs: Vec<(u32, u32, f64)>,
    /// Largest margin, m.
    max_margin: f64,
    /// Scratch: a bounding-volume hierarchy over the faces' margin-inflated
    /// boxes, refitted or rebuilt at each projection (empty on small bodies).
    tree: Vec<Node>,
    /// Scratch: face order of the hierarchy's leaves.
    order: Vec<u32>,
    /// Summed surface area of the hierarchy's nodes right after its last full
    /// build (0 when there is none to refit: no tree, or one that left out a
    /// non-finite box).
    built_area: f64,
    /// Nodes of the hierarchy visited by the searches of the projection right
    /// after its last full build.
    built_visits: u64,
    /// Full builds of the hierarchy so far (refits are not counted).
    pub tree_builds: u64,
    /// Scratch: margin-inflated box of each face at the last refresh (filled only
    /// when the lists are made or hold any face; see `boxes_current`).
    boxes: Vec<(DVec3, DVec3)>,
    /// Whether `boxes` holds the boxes of the last refresh (else a face's box is
    /// computed when asked for, from the same positions).
    boxes_current: bool,
    /// Scratch: per pair, the face its closest feature lay on at the last
    /// projection (a search hint; results do not depend on it).
    hint: Vec<u32>,
    /// Faces tested for the closest point in the last projection.
    pub face_tests: u64,
    /// Scratch: unit outward normal of each face at the last rebuild.
    face_normals: Vec<DVec3>,
    /// Scratch: pseudo-normal of each surface vertex at the last rebuild (2D
    /// loops only; a triangle vertex's is computed when a search ends there).
    vertex_normals: Vec<DVec3>,
    /// Scratch: each surface vertex's position at the last rebuild.
    start: Vec<DVec3>,
    /// Scratch: each surface vertex's position now (taken at the last rebuild
    /// and kept up to date through the corrections of a projection), in one
    /// array so that a face's corners are three loads.
    at: Vec<DVec3>,
    /// Scratch: per face, (b − a) × (c − a), its squared length and the corner
    /// a at the current positions (`at`), for the plane test of the search (one
    /// record, so that the test needs no other load).
    cross: Vec<(DVec3, f64, DVec3)>,
    /// Candidate lists: pair k's are `list[list_start[k]..list_start[k + 1]]`,
    /// the faces outside its partner's fan whose boxes grown by `slack` held its
    /// inner particle when the lists were made, in the order the hierarchy found
    /// them (the search's result does not depend on the order).
    list_start: Vec<u32>,
    list: Vec<u32>,
    /// Per list entry, a lower bound on the distance from the pair's inner
    /// particle to the face when the lists were made: the bucket its floor
    /// ([`Containment::distance_floor`]) fell in, whose lower edge (m) is
    /// `bucket_edge[bucket]`. Each pair's entries are in order of it, so a search
    /// can stop at the first entry that even the largest motion since then
    /// cannot bring within its best distance (see [`Containment::violation`]).
    /// (One byte, not the edge itself: a search streams through its list.)
    list_bucket: Vec<u8>,
    /// The buckets' lower edges, m, a hair below them so that rounding keeps
    /// them below the floors; the 0th is 0 (no bound).
    bucket_edge: [f64; FLOOR_BUCKETS],
    /// Scratch for sorting one pair's entries.
    list_sort: Vec<(u32, u32)>,
    /// The translation T of the body's mean motion since the lists were made
    /// (taken at the projection's start) and the largest distance any surface
    /// vertex has moved apart from it, |x − anchor − T|, kept up to date through
    /// the corrections of a projection, m.
    drift_mean: DVec3,
    surface_drift: f64,
    /// List entries visited by the searches of the last projection.
    pub list_visits: u64,
    /// Whether each surface vertex is loose: it has moved, apart from the mean
    /// motion, by more than half the slack along an axis since the lists were
    /// made. The lists may lack its faces, so every search tests them besides its
    /// list; the distance bounds of the lists' entries leave its motion out.
    loose_vertex: Vec<bool>,
    /// The loose surface vertices (those marked in `loose_vertex`) ...
    loose_vertices: Vec<u32>,
    /// ... and the union of their faces' boxes, each, at the projection's start.
    loose_boxes: Vec<(DVec3, DVec3)>,
    /// Whether each pair's inner particle has moved past the limit since the
    /// lists were made: its list may lack faces, so its search tests every face's
    /// box instead.
    loose_pair: Vec<bool>,
    /// Scratch: the pairs marked in `loose_pair`.
    loose_pairs: Vec<u32>,
    /// Where the inner particles (by pair) and then the surface vertices were
    /// when the lists were made (empty: no lists).
    list_anchor: Vec<DVec3>,
    /// Growth of the boxes behind the lists, m.
    slack: f64,
    /// Whether the lists hold for the state the face boxes were last taken at
    /// (set by a projection; a plain [`Containment::rebuild_cells`] clears it).
    lists_live: bool,
    /// Times the candidate lists were made.
    pub list_builds: u64,
    /// Projections served by the current lists, and by the lists before them.
    list_uses: u64,
    last_list_uses: u64,
    /// Whether projections search through the candidate lists (always, but for
    /// the test that compares them with the hierarchy's search).
    use_lists: bool,
    /// Inner particles moved in the last projection.
    pub corrections: usize,
    /// Largest violation C found in the last projection, m (≤ 0 when none).
    pub worst: f64,
}

impl Containment {
    /// Keeps each `(inner, partner)` particle pair's inner particle inside
    /// `surface` (the outer layer; `partner` is one of its particles), with margin
    /// `margin_fraction` × the pair's distance in `x` (the rest state).
    pub fn new(
        name: &str,
        surface: &ClosedSurface,
        pairs: &[(usize, usize)],
        margin_fraction: f64,
        x: &crate::model::Vec3s,
    ) -> Result<Self, SurfaceError> {
        surface.check_closed()?;
        let verts = surface.vertices();
        let local = |g: u32| verts.binary_search(&g).expect("face vertex is a surface vertex") as u32;
        let (faces, planar): (Vec<[u32; 3]>, bool) = match surface {
            ClosedSurface::Triangles(t) => (t.iter().map(|f| f.map(local)).collect(), false),
            ClosedSurface::Loop(l) => (l.iter().map(|&[a, b]| [local(a), local(b), local(b)]).collect(), true),
        };
        let mut count = vec![0u32; verts.len() + 1];
        for f in &faces {
            for &v in unique(f, planar) {
                count[v as usize + 1] += 1;
            }
        }
        for k in 1..count.len() {
            count[k] += count[k - 1];
        }
        let fan_start = count.clone();
        let mut fill = count;
        let mut fan = vec![0u32; *fan_start.last().unwrap_or(&0) as usize];
        for (fi, f) in faces.iter().enumerate() {
            for &v in unique(f, planar) {
                fan[fill[v as usize] as usize] = fi as u32;
                fill[v as usize] += 1;
            }
        }
        let mut adjacent = vec![[0u32; 3]; if planar { 0 } else { faces.len() }];
        if !planar {
            let mut by_edge = std::collections::HashMap::new();
            for (fi, f) in faces.iter().enumerate() {
                for k in 0..3 {
                    by_edge.insert((f[k], f[(k + 1) % 3]), fi as u32);
                }
            }
            for (fi, f) in faces.iter().enumerate() {
                for k in 0..3 {
                    // Closed and consistently wound: the reverse edge exists.
                    adjacent[fi][k] = by_edge[&(f[(k + 1) % 3], f[k])];
                }
            }
        }
        let pairs: Vec<(u32, u32, f64)> = pairs
            .iter()
            .map(|&(inner, partner)| {
                let m = margin_fraction * x.get(inner).distance(x.get(partner));
                (inner as u32, local(partner as u32), m)
            })
            .collect();
        let max_margin = pairs.iter().map(|p| p.2).fold(0.0, f64::max);
        Ok(Self {
            name: name.to_owned(),
            verts,
            faces,
            planar,
            adjacent,
            fan_start,
            fan,
            pairs,
            max_margin,
            tree: Vec::new(),
            order: Vec::new(),
            built_area: 0.0,
            built_visits: 0,
            tree_builds: 0,
            boxes: Vec::new(),
            boxes_current: false,
            face_tests: 0,
            hint: Vec::new(),
            face_normals: Vec::new(),
            vertex_normals: Vec::new(),
            start: Vec::new(),
            at: Vec::new(),
            cross: Vec::new(),
            list_start: Vec::new(),
            list: Vec::new(),
            list_bucket: Vec::new(),
            bucket_edge: {
                let width = bucket_width(LIST_SLACK * max_margin);
                std::array::from_fn(|b| b as f64 * width * (1.0 - 1e-12))
            },
            list_sort: Vec::new(),
            drift_mean: DVec3::ZERO,
            surface_drift: 0.0,
            list_visits: 0,
            loose_boxes: Vec::new(),
            loose_vertex: Vec::new(),
            loose_vertices: Vec::new(),
            loose_pair: Vec::new(),
            loose_pairs: Vec::new(),
            list_anchor: Vec::new(),
            slack: LIST_SLACK * max_margin,
            lists_live: false,
            list_builds: 0,
            list_uses: 0,
            last_list_uses: 0,
            use_lists: true,
            corrections: 0,
            worst: f64::NEG_INFINITY,
        })
    }

    /// Number of inner particles constrained.
    #[must_use]
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// True when no particle is constrained.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Current position of surface vertex `local` (see `at`).
    #[inline]
    fn pos(&self, local: u32) -> DVec3 {
        self.at[local as usize]
    }

    /// The corners of face `f` now.
    #[inline(always)]
    fn corners(&self, f: usize) -> [DVec3; 3] {
        let [a, b, c] = self.faces[f];
        [self.pos(a), self.pos(b), self.pos(c)]
    }

    /// (b − a) × (c − a) of face `f` (a, b, c its corners now), its squared
    /// length, and a.
    fn plane(&self, f: usize) -> (DVec3, f64, DVec3) {
        let [a, b, c] = self.corners(f);
        let cross = (b - a).cross(c - a);
        (cross, cross.length_squared(), a)
    }

    /// Unit outward normal of face `f`, computed.
    fn compute_face_normal(&self, f: usize) -> DVec3 {
        let [a, b, c] = self.corners(f);
        if self.planar {
            let d = b - a;
            DVec3::new(d.y, -d.x, 0.0).normalize_or_zero()
        } else {
            (b - a).cross(c - a).normalize_or_zero()
        }
    }

    /// Angle-weighted pseudo-normal of local vertex `v` (plain sum of the two edge
    /// normals in 2D), from the face normals and the positions of the last rebuild.
    fn compute_vertex_normal(&self, v: u32) -> DVec3 {
        let range = self.fan_start[v as usize] as usize..self.fan_start[v as usize + 1] as usize;
        let mut n = DVec3::ZERO;
        for &f in &self.fan[range] {
            let nf = self.face_normals[f as usize];
            if self.planar {
                n += nf;
                continue;
            }
            let t = self.faces[f as usize];
            let k = t.iter().position(|&u| u == v).unwrap_or(0);
            let at = |u: u32| self.start[u as usize];
            let p = at(v);
            let (e1, e2) = (at(t[(k + 1) % 3]) - p, at(t[(k + 2) % 3]) - p);
            let angle = e1.cross(e2).length().atan2(e1.dot(e2));
            n += angle * nf;
        }
        n.normalize_or_zero()
    }

    /// Closest feature of face `f` to `p`.
    fn closest_on_face(&self, f: usize, p: DVec3) -> Closest {
        let t = self.faces[f];
        let [a, b, c] = self.corners(f);
        let (point, verts, weights, normal, at_vertex) = if self.planar {
            let d = b - a;
            let len2 = d.length_squared();
            let s = if len2 > 0.0 { ((p - a).dot(d) / len2).clamp(0.0, 1.0) } else { 0.0 };
            let (verts, weights, normal) = if s <= 0.0 {
                ([t[0]; 3], [1.0, 0.0, 0.0], self.vertex_normals[t[0] as usize])
            } else if s >= 1.0 {
                ([t[1]; 3], [1.0, 0.0, 0.0], self.vertex_normals[t[1] as usize])
            } else {
                ([t[0], t[1], t[1]], [1.0 - s, s, 0.0], self.face_normals[f])
            };
            (a + d * s, verts, weights, normal, false)
        } else {
            let (bary, feature) = closest_barycentric(p, a, b, c);
            let (verts, weights, normal) = match feature {
                Feature::Face => (t, bary, self.face_normals[f]),
                Feature::Vertex(k) => ([t[k]; 3], [1.0, 0.0, 0.0], DVec3::ZERO),
                Feature::Edge(k) => {
                    let (i, j) = (k, (k + 1) % 3);
                    let other = self.adjacent[f][k] as usize;
                    let n = (self.face_normals[f] + self.face_normals[other]).normalize_or_zero();
                    ([t[i], t[j], t[j]], [bary[i], bary[j], 0.0], n)
                }
            };
            let point = a * bary[0] + b * bary[1] + c * bary[2];
            (point, verts, weights, normal, matches!(feature, Feature::Vertex(_)))
        };
        Closest { point, verts, weights, normal, dist2: (p - point).length_squared(), face: f as u32, at_vertex }
    }

    /// Recomputes the face and vertex normals and brings the search structure up
    /// to date: a bounding-volume hierarchy over each face's box inflated by the
    /// largest margin (median splits along the longest axis of the boxes' centres,
    /// leaves of [`LEAF_FACES`]), so a point's candidate faces are found in time
    /// that grows with the log of the face count and with the faces actually near
    /// it. Between full builds the tree is refitted (each node's box recomputed
    /// from its children, no sorting) until its summed node area exceeds
    /// [`REFIT_LIMIT`] × its area when built, or a projection's searches visit
    /// more than [`VISIT_LIMIT`] × the nodes they visited right after the build. The search is exact whatever the
    /// tree's shape (it finds what testing every face finds), so refitting changes
    /// the cost of a projection, never its result.
    /// A uniform grid was used before the hierarchy: once a sphere had collapsed
    /// into a pancake thinner than a cell, each cell held the whole column of
    /// folded skin (230 entries against 50 before), and a step cost 5.4 × one
    /// before the collapse.
    fn rebuild_cells(&mut self, state: &State) {
        self.lists_live = false;
        let finite = self.refresh(state);
        self.fill_boxes();
        self.update_tree(finite);
    }

    /// The face and vertex normals and the positions at `state` (the face boxes
    /// are filled separately, see [`Containment::fill_boxes`]); returns whether
    /// every position is finite.
    fn refresh(&mut self, state: &State) -> bool {
        self.at.clear();
        self.at.extend(self.verts.iter().map(|&g| state.x.get(g as usize)));
        self.start.clone_from(&self.at);
        self.face_normals.clear();
        self.cross.clear();
        for f in 0..self.faces.len() {
            let plane = self.plane(f);
            // A triangle's unit normal is its (b − a) × (c − a) normalised.
            let n = if self.planar { self.compute_face_normal(f) } else { plane.0.normalize_or_zero() };
            self.face_normals.push(n);
            self.cross.push(plane);
        }
        // A triangle vertex's pseudo-normal (angle-weighted: an arctangent per
        // face around it) is computed only for the few searches that end at a
        // vertex; a loop's (a plain sum) for every vertex here.
        self.vertex_normals.clear();
        if self.planar {
            for v in 0..self.verts.len() {
                let n = self.compute_vertex_normal(v as u32);
                self.vertex_normals.push(n);
            }
        }
        self.boxes_current = false;
        self.at.iter().all(|p| p.is_finite())
    }

    /// Margin-inflated box of face `f` at the positions of the last refresh.
    #[inline]
    fn face_box(&self, f: usize) -> (DVec3, DVec3) {
        let [a, b, c] = self.faces[f];
        let (a, b, c) = (self.start[a as usize], self.start[b as usize], self.start[c as usize]);
        (a.min(b).min(c) - self.max_margin, a.max(b).max(c) + self.max_margin)
    }

    /// Fills `boxes` for the last refresh.
    fn fill_boxes(&mut self) {
        self.boxes.clear();
        for f in 0..self.faces.len() {
            let b = self.face_box(f);
            self.boxes.push(b);
        }
        self.boxes_current = true;
    }

    /// Refits or rebuilds the hierarchy around the current face boxes (see
    /// [`Containment::rebuild_cells`]); `finite`: every box is finite.
    fn update_tree(&mut self, finite: bool) {
        if self.faces.len() * self.pairs.len() <= BRUTE_FORCE_PAIRS {
            // Small bodies: testing every box is cheaper than building a tree.
            self.tree.clear();
            return;
        }
        if finite && self.built_area > 0.0 && self.refit() <= REFIT_LIMIT * self.built_area {
            return;
        }
        self.tree.clear();
        self.order.clear();
        // A non-finite box (a state that is blowing up, about to be reported by the
        // world's health check) is left out, and such a tree is never refitted.
        self.order.extend(
            (0..self.faces.len() as u32)
                .filter(|&f| self.boxes[f as usize].0.is_finite() && self.boxes[f as usize].1.is_finite()),
        );
        let n = self.order.len();
        self.build_node(0, n);
        self.tree_builds += 1;
        self.built_area = if finite { self.tree.iter().map(|node| box_area(node.lo, node.hi)).sum() } else { 0.0 };
    }

    /// Recomputes every node's box around the current face boxes, children
    /// before parents (a node's children have larger indices); returns the summed
    /// node area.
    fn refit(&mut self) -> f64 {
        let mut area = 0.0;
        for i in (0..self.tree.len()).rev() {
            let node = self.tree[i];
            let (mut lo, mut hi) = (DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY));
            if node.count > 0 {
                for &f in &self.order[node.start as usize..(node.start + node.count) as usize] {
                    let (a, b) = self.boxes[f as usize];
                    (lo, hi) = (lo.min(a), hi.max(b));
                }
            } else {
                let (l, r) = (self.tree[node.start as usize], self.tree[node.right as usize]);
                (lo, hi) = (l.lo.min(r.lo), l.hi.max(r.hi));
            }
            self.tree[i].lo = lo;
            self.tree[i].hi = hi;
            area += box_area(lo, hi);
        }
        area
    }

    /// Builds the node over `order[start..end]` and its subtree; returns its index.
    fn build_node(&mut self, start: usize, end: usize) -> u32 {
        let (mut lo, mut hi) = (DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY));
        let (mut clo, mut chi) = (lo, hi);
        for &f in &self.order[start..end] {
            let (a, b) = self.boxes[f as usize];
            (lo, hi) = (lo.min(a), hi.max(b));
            let c = 0.5 * (a + b);
            (clo, chi) = (clo.min(c), chi.max(c));
        }
        let index = self.tree.len() as u32;
        self.tree.push(Node { lo, hi, start: start as u32, count: (end - start) as u32, right: 0 });
        if end - start <= LEAF_FACES {
            return index;
        }
        let extent = chi - clo;
        let axis = if extent.x >= extent.y && extent.x >= extent.z {
            0
        } else if extent.y >= extent.z {
            1
        } else {
            2
        };
        let mid = start + (end - start) / 2;
        let boxes = &self.boxes;
        let key = |f: &u32| {
            let (a, b) = boxes[*f as usize];
            (a[axis] + b[axis], *f)
        };
        self.order[start..end].select_nth_unstable_by(mid - start, |p, q| {
            let (kp, kq) = (key(p), key(q));
            kp.0.total_cmp(&kq.0).then(kp.1.cmp(&kq.1))
        });
        let left = self.build_node(start, mid);
        let right = self.build_node(mid, end);
        self.tree[index as usize].start = left;
        self.tree[index as usize].count = 0;
        self.tree[index as usize].right = right;
        index
    }

    /// Whether the candidate lists still hold at `state`, and the loose points and
    /// the surface's motion if they do: since the lists were made, no more than
    /// [`MAX_LOOSE_PAIRS`] inner particles and [`MAX_LOOSE_VERTICES`] surface
    /// vertices have moved, apart from the mean motion T of the particles and
    /// surface vertices together, by more than a little under half the slack
    /// along an axis.
    ///
    /// Then every face box a particle that is not loose lies in now, but for the
    /// loose vertices' faces, was within the slack of it when the lists were
    /// made: a face's box moves with its vertices (a box is their bounds grown by
    /// the margin), so with each vertex within δ of its anchor plus T and the
    /// particle too, the particle's anchor lies in the anchor box grown by
    /// 2δ ≤ slack. A body falling or
    /// swinging as a whole keeps its lists, and so does a crumpled one at rest
    /// whose skin jitters in a few places. Marks the loose points and sets
    /// `drift_mean` to T and `surface_drift` to the largest distance any other
    /// surface vertex has moved apart from T; returns false, with none marked,
    /// when the lists no longer hold.
    fn lists_hold(&mut self, state: &State) -> bool {
        self.clear_loose();
        let n = self.pairs.len();
        if self.list_anchor.len() != n + self.verts.len() {
            return false;
        }
        let count = self.list_anchor.len() as f64;
        let inner = |j: usize| state.x.get(self.pairs[j].0 as usize) - self.list_anchor[j];
        let surface = |v: usize| self.at[v] - self.list_anchor[n + v];
        let mean = ((0..n).map(inner).sum::<DVec3>() + (0..self.verts.len()).map(surface).sum::<DVec3>()) / count;
        let limit = 0.5 * self.slack * (1.0 - 1e-6);
        if !mean.is_finite() {
            return false;
        }
        for j in 0..n {
            if (inner(j) - mean).abs().max_element() > limit {
                if self.loose_pairs.len() == MAX_LOOSE_PAIRS {
                    self.clear_loose();
                    return false;
                }
                self.loose_pair[j] = true;
                self.loose_pairs.push(j as u32);
            }
        }
        let mut drift2 = 0.0f64;
        for v in 0..self.verts.len() {
            let d = surface(v) - mean;
            if d.abs().max_element() <= limit {
                drift2 = drift2.max(d.length_squared());
            } else {
                if self.loose_vertices.len() == MAX_LOOSE_VERTICES {
                    self.clear_loose();
                    return false;
                }
                self.loose_vertex[v] = true;
                self.loose_vertices.push(v as u32);
            }
        }
        self.drift_mean = mean;
        self.surface_drift = drift2.sqrt();
        true
    }

    /// Unmarks every loose point.
    fn clear_loose(&mut self) {
        for &v in &self.loose_vertices {
            self.loose_vertex[v as usize] = false;
        }
        self.loose_vertices.clear();
        self.loose_boxes.clear();
        self.loose_vertex.resize(self.verts.len(), false);
        for &k in &self.loose_pairs {
            self.loose_pair[k as usize] = false;
        }
        self.loose_pairs.clear();
        self.loose_pair.resize(self.pairs.len(), false);
    }

    /// How far surface vertex `v` has moved apart from the mean motion since the
    /// lists were made, m.
    #[inline]
    fn vertex_drift(&self, v: usize) -> f64 {
        (self.at[v] - self.list_anchor[self.pairs.len() + v] - self.drift_mean).length()
    }

    /// Makes the candidate lists at `state` (the face boxes and hierarchy must be
    /// those of `state`); returns the hierarchy's nodes visited.
    fn make_lists(&mut self, state: &State) -> u64 {
        let mut visits = 0;
        let per_width = 1.0 / bucket_width(self.slack);
        // Distances for bounds pay only when the lists will serve a while: take
        // the last lists' life as the forecast.
        let exact_below = if self.last_list_uses >= EXACT_FLOOR_LIFE { EXACT_FLOOR_REACH * self.slack } else { 0.0 };
        self.list.clear();
        self.list_bucket.clear();
        self.list_start.clear();
        self.list_start.push(0);
        for k in 0..self.pairs.len() {
            let (inner, partner, _) = self.pairs[k];
            let p = state.x.get(inner as usize);
            let fan =
                &self.fan[self.fan_start[partner as usize] as usize..self.fan_start[partner as usize + 1] as usize];
            let first = self.list.len();
            let list = &mut self.list;
            visits += faces_near(&self.tree, &self.order, &self.boxes, p, self.slack, fan, |f| list.push(f));
            // Each entry in the bucket of a lower bound on its distance, nearer
            // buckets first (a counting sort), with its bucket's lower edge.
            self.list_sort.clear();
            let mut count = [0u32; FLOOR_BUCKETS + 1];
            for &f in &self.list[first..] {
                let floor = self.distance_floor(f as usize, p, exact_below);
                // (`as` saturates: a negative or NaN floor goes to bucket 0.)
                let bucket = ((floor * per_width) as usize).min(FLOOR_BUCKETS - 1);
                count[bucket + 1] += 1;
                self.list_sort.push((bucket as u32, f));
            }
            for b in 1..count.len() {
                count[b] += count[b - 1];
            }
            self.list_bucket.resize(self.list.len(), 0);
            for &(bucket, f) in &self.list_sort {
                let bucket = bucket as usize;
                let at = first + count[bucket] as usize;
                count[bucket] += 1;
                self.list[at] = f;
                self.list_bucket[at] = bucket as u8;
            }
            self.list_start.push(self.list.len() as u32);
        }
        self.list_anchor.clear();
        self.list_anchor.extend(self.pairs.iter().map(|&(inner, _, _)| state.x.get(inner as usize)));
        for v in 0..self.verts.len() {
            let p = self.pos(v as u32);
            self.list_anchor.push(p);
        }
        self.list_builds += 1;
        self.clear_loose();
        self.drift_mean = DVec3::ZERO;
        self.surface_drift = 0.0;
        visits
    }

    /// A lower bound on the distance from `p` to face `f` at the current
    /// positions, less a rounding allowance, m: the larger of the distances to
    /// the face's plane and to its bounding box (both hold the face), and where
    /// that is below `exact_below` the distance itself (a closest-point search;
    /// on a triangle only when it is not a sliver, whose closest point rounding
    /// could misplace).
    fn distance_floor(&self, f: usize, p: DVec3, exact_below: f64) -> f64 {
        let [a, b, c] = self.corners(f);
        let gap = (a.min(b).min(c) - p).max(p - a.max(b).max(c)).max(DVec3::ZERO);
        let mut floor2 = gap.length_squared();
        let r = p - a;
        let n2 = self.cross[f].1;
        if !self.planar && n2 > 0.0 {
            let d = r.dot(self.cross[f].0);
            floor2 = floor2.max(d * d / n2);
        }
        // The shape is looked at only for the entries that would take the
        // distance (none while lists die young).
        let well_shaped = || {
            let longest2 = (b - a).length_squared().max((c - b).length_squared()).max((a - c).length_squared());
            self.planar || n2 >= SLIVER * longest2 * longest2
        };
        if floor2 < exact_below * exact_below && well_shaped() {
            floor2 = floor2.max(self.closest_on_face(f, p).dist2);
        }
        let floor = floor2.sqrt();
        floor * (1.0 - 1e-9) - 1e-12 * (2.0 * r.abs().max_element() + p.abs().max_element())
    }

    /// Brings the face boxes and the candidate lists up to `state` for a
    /// projection: the lists are made anew (with the hierarchy refitted or rebuilt
    /// first) only when they no longer hold. Returns the hierarchy's nodes visited
    /// in making them (`None` when the lists were kept).
    fn prepare(&mut self, state: &State) -> Option<u64> {
        let finite = self.refresh(state);
        self.lists_live = false;
        if !finite || !self.use_lists {
            // A state blowing up (for the health check to report): no lists.
            self.list_anchor.clear();
            self.fill_boxes();
            self.update_tree(finite);
            return None;
        }
        let visits = if self.lists_hold(state) {
            // Kept lists that hold faces, or loose points, need the faces' boxes;
            // empty ones (a round body: only the partners' fans) do not.
            if !self.list.is_empty() || !self.loose_vertices.is_empty() || !self.loose_pairs.is_empty() {
                self.fill_boxes();
            }
            for i in 0..self.loose_vertices.len() {
                let v = self.loose_vertices[i] as usize;
                let fan = &self.fan[self.fan_start[v] as usize..self.fan_start[v + 1] as usize];
                let union = fan.iter().fold((DVec3::INFINITY, DVec3::NEG_INFINITY), |(lo, hi), &f| {
                    let (a, b) = self.boxes[f as usize];
                    (lo.min(a), hi.max(b))
                });
                self.loose_boxes.push(union);
            }
            self.list_uses += 1;
            None
        } else {
            self.fill_boxes();
            self.update_tree(finite);
            self.last_list_uses = self.list_uses;
            self.list_uses = 1;
            Some(self.make_lists(state))
        };
        self.lists_live = true;
        visits
    }

    /// Whether face `f`'s plane, at the current positions, lies farther from `p`
    /// than the squared distance `bound` (so the face cannot hold a point nearer;
    /// see [`Containment::violation`]). Always false on a 2D loop.
    #[inline(always)]
    fn plane_beyond(&self, f: usize, p: DVec3, bound: f64) -> bool {
        if self.planar {
            return false;
        }
        // The plane at the current positions (earlier corrections of this
        // projection may have moved the face since the normals were taken:
        // `cross` follows them).
        let (normal, n2, a) = self.cross[f];
        let r = p - a;
        let d = r.dot(normal);
        n2 > 0.0 && d * d > (bound * (1.0 + 1e-9) + 1e-24 * r.length_squared()) * n2
    }

    /// The violation C = (x − c)·n + m of pair `k` at `state` (≤ 0 when satisfied),
    /// and the closest feature, over the partner's fan and (with `near`) the faces
    /// whose inflated boxes contain the particle.
    ///
    /// Also returns the faces tested for their closest point and the hierarchy's
    /// nodes visited.
    fn violation(&self, state: &State, k: usize, near: bool) -> (f64, Closest, u64, u64) {
        let (c, best, tests, visits, _) = self.violation_counted(state, k, near);
        (c, best, tests, visits)
    }

    /// [`Containment::violation`], also returning the list entries visited.
    fn violation_counted(&self, state: &State, k: usize, near: bool) -> (f64, Closest, u64, u64, u64) {
        let (inner, partner, m) = self.pairs[k];
        let p = state.x.get(inner as usize);
        let range = self.fan_start[partner as usize] as usize..self.fan_start[partner as usize + 1] as usize;
        let mut best: Option<Closest> = None;
        let (mut tests, mut visits) = (0u64, 0u64);
        // An upper bound on the closest distance: the face found closest at the
        // previous projection (a hint only, see below).
        // It bounds the search only when that face is itself a candidate (one of
        // the partner's faces, or one whose box holds the particle).
        let candidate = |f: u32| {
            self.fan[range.clone()].contains(&f)
                || (near && (f as usize) < self.faces.len() && {
                    let (lo, hi) = if self.boxes_current { self.boxes[f as usize] } else { self.face_box(f as usize) };
                    p.cmpge(lo).all() && p.cmple(hi).all()
                })
        };
        let hinted = self.hint.get(k).copied().filter(|&f| (f as usize) < self.faces.len() && candidate(f));
        // The hint face's closest point, kept for when the search reaches it.
        let hinted = hinted.map(|f| (f, self.closest_on_face(f as usize, p)));
        let mut bound = hinted.map_or(f64::INFINITY, |(_, c)| c.dist2);
        // `boxed`: the face is a candidate only if its box holds the particle,
        // which is tested after the plane (in a crumpled body most listed faces'
        // boxes hold the particle and most planes lie beyond the bound).
        let mut consider = |f: usize, bound: &mut f64, boxed: bool, plane: bool| {
            // A face whose plane is farther than the bound cannot hold the closest
            // point: skip it without the closest-point search (in a collapsed body
            // many folded faces lie within the margin of a particle). The slack
            // (relative 1e-9, and 1e-12 of the distance to the face for a particle on
            // its plane) makes the skip exact despite rounding: a skipped face could never
            // have been chosen, so the result is the search's without skips, and
            // does not depend on the hint (a resumed run gets the same numbers).
            if plane && self.plane_beyond(f, p, *bound) {
                return;
            }
            if boxed {
                let (lo, hi) = self.boxes[f];
                if !(p.cmpge(lo).all() && p.cmple(hi).all()) {
                    return;
                }
            }
            tests += 1;
            let c = match hinted {
                Some((h, c)) if h as usize == f => c,
                _ => self.closest_on_face(f, p),
            };
            *bound = bound.min(c.dist2);
            // Ties (a shared edge or vertex reached from two faces) go to the
            // lower face index, so the result never depends on the visiting order.
            if best.is_none_or(|b| c.dist2 < b.dist2 || (c.dist2 == b.dist2 && c.face < b.face)) {
                best = Some(c);
            }
        };
        for &f in &self.fan[range.clone()] {
            consider(f as usize, &mut bound, false, true);
        }
        let mut entries = 0u64;
        if near && self.lists_live && !self.loose_pair[k] {
            let fan = &self.fan[range.clone()];
            let range = self.list_start[k] as usize..self.list_start[k + 1] as usize;
            // Distances change by at most the particle's and the face's motion
            // apart from any common translation (a point's distance to a triangle
            // is 1-Lipschitz in the point and in each corner), so an entry whose
            // floor less that motion exceeds the best distance so far cannot hold
            // the closest point, nor can any entry after it (sorted by floor).
            let own = (p - self.list_anchor[k] - self.drift_mean).length();
            let motion = (own + self.surface_drift) * (1.0 + 1e-9);
            for (&f, &bucket) in self.list[range.clone()].iter().zip(&self.list_bucket[range]) {
                let reach = self.bucket_edge[bucket as usize] - motion;
                if reach > 0.0 && reach * reach > bound * (1.0 + 1e-9) {
                    break;
                }
                entries += 1;
                // The plane test here rather than in `consider`, which is not
                // inlined: most entries end at it.
                if !self.plane_beyond(f as usize, p, bound) {
                    consider(f as usize, &mut bound, true, false);
                }
            }
            // The loose vertices' faces, which the list may lack (one also in the
            // list, or around two loose vertices, is tested again, to the same
            // result).
            for (&v, &(lo, hi)) in self.loose_vertices.iter().zip(&self.loose_boxes) {
                if !(p.cmpge(lo).all() && p.cmple(hi).all()) {
                    continue;
                }
                for &f in &self.fan[self.fan_start[v as usize] as usize..self.fan_start[v as usize + 1] as usize] {
                    if !fan.contains(&f) {
                        consider(f as usize, &mut bound, true, true);
                    }
                }
            }
        } else if near {
            // A loose particle with kept lists tests every box: the hierarchy was
            // fitted to the boxes of the lists' making.
            let tree: &[Node] = if self.lists_live { &[] } else { &self.tree };
            let fan = &self.fan[range.clone()];
            visits += faces_near(tree, &self.order, &self.boxes, p, 0.0, fan, |f| {
                consider(f as usize, &mut bound, false, true);
            });
        }
        let mut best = best.expect("every surface vertex has a face");
        if best.at_vertex {
            best.normal = self.compute_vertex_normal(best.verts[0]);
        }
        ((p - best.point).dot(best.normal) + m, best, tests, visits, entries)
    }

    /// Largest violation C over all pairs at `state`, m (≤ 0 when every inner
    /// particle is inside with its margin). For tests and diagnostics: it works on
    /// a copy of the constraint's scratch space.
    #[must_use]
    pub fn max_violation(&self, state: &State) -> f64 {
        let mut probe = self.clone();
        probe.rebuild_cells(state);
        (0..self.pairs.len()).map(|k| probe.violation(state, k, true).0).fold(f64::NEG_INFINITY, f64::max)
    }

    /// Mean over the inner particles of the number of outer faces (the partner's
    /// own included) that lie within `factor` × the particle's margin of it at
    /// `state`: how dense the skin is around the inner layer. Any search that
    /// finds the closest face exactly must look at, at least, the faces within the
    /// closest distance plus its bound on how far things have moved, so on a body
    /// whose inner particles are held at their margin this counts what such a
    /// search cannot skip. A diagnostic (every face is tested against every
    /// particle, boxes first); it works on a copy of the scratch space.
    #[must_use]
    pub fn mean_faces_within(&self, state: &State, factor: f64) -> f64 {
        let mut probe = self.clone();
        probe.refresh(state);
        let mut count = 0usize;
        for &(inner, _, m) in &self.pairs {
            let p = state.x.get(inner as usize);
            let r = factor * m;
            for f in 0..probe.faces.len() {
                let [a, b, c] = probe.corners(f);
                let gap = (a.min(b).min(c) - p).max(p - a.max(b).max(c)).max(DVec3::ZERO);
                if gap.length_squared() <= r * r && probe.closest_on_face(f, p).dist2 <= r * r {
                    count += 1;
                }
            }
        }
        count as f64 / self.pairs.len().max(1) as f64
    }
}

/// Width of the buckets the candidate lists' entries are sorted into, m, for
/// lists of slack `slack` (m): shared by their making and their edges.
fn bucket_width(slack: f64) -> f64 {
    slack * FLOOR_BUCKET_WIDTH
}

/// Calls `f` for every face whose box, grown by `grow` (m), holds `p`, except the
/// faces in `skip`: depth-first through the hierarchy `tree` (leaves index
/// `order`), or over every box when there is no tree. Returns the nodes visited.
fn faces_near(
    tree: &[Node],
    order: &[u32],
    boxes: &[(DVec3, DVec3)],
    p: DVec3,
    grow: f64,
    skip: &[u32],
    mut f: impl FnMut(u32),
) -> u64 {
    let grow = DVec3::splat(grow);
    let holds = |(lo, hi): (DVec3, DVec3)| p.cmpge(lo - grow).all() && p.cmple(hi + grow).all();
    if tree.is_empty() {
        for (face, &b) in boxes.iter().enumerate() {
            if holds(b) && !skip.contains(&(face as u32)) {
                f(face as u32);
            }
        }
        return 0;
    }
    // The stack never holds more than the tree's depth plus one.
    let mut stack = [0u32; 64];
    let (mut top, mut visits) = (1, 0);
    while top > 0 {
        top -= 1;
        visits += 1;
        let node = tree[stack[top] as usize];
        if !holds((node.lo, node.hi)) {
            continue;
        }
        if node.count > 0 {
            for &face in &order[node.start as usize..(node.start + node.count) as usize] {
                if holds(boxes[face as usize]) && !skip.contains(&face) {
                    f(face);
                }
            }
        } else if top + 2 <= stack.len() {
            stack[top] = node.right;
            stack[top + 1] = node.start;
            top += 2;
        }
    }
    visits
}

/// Surface area of the box [lo, hi].
fn box_area(lo: DVec3, hi: DVec3) -> f64 {
    let d = hi - lo;
    2.0 * (d.x * d.y + d.y * d.z + d.z * d.x)
}

/// Distinct vertices of a stored face (a segment repeats its second end).
fn unique(f: &[u32; 3], planar: bool) -> &[u32] {
    if planar { &f[..2] } else { &f[..] }
}

/// Which part of a triangle a closest point lies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Feature {
    /// The interior.
    Face,
    /// Edge k, from vertex k to vertex k + 1 (mod 3).
    Edge(usize),
    /// Vertex k.
    Vertex(usize),
}

/// Barycentric weights of the point of triangle abc closest to p, and its feature
/// (Ericson, Real-Time Collision Detection §5.1.5: Voronoi regions in turn).
fn closest_barycentric(p: DVec3, a: DVec3, b: DVec3, c: DVec3) -> ([f64; 3], Feature) {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return ([1.0, 0.0, 0.0], Feature::Vertex(0));
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return ([0.0, 1.0, 0.0], Feature::Vertex(1));
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let s = d1 / (d1 - d3);
        return ([1.0 - s, s, 0.0], Feature::Edge(0));
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return ([0.0, 0.0, 1.0], Feature::Vertex(2));
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let s = d2 / (d2 - d6);
        return ([1.0 - s, 0.0, s], Feature::Edge(2));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let s = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return ([0.0, 1.0 - s, s], Feature::Edge(1));
    }
    let denom = va + vb + vc;
    if denom.abs() < f64::MIN_POSITIVE {
        // A degenerate (zero-area) face: its vertex a stands in.
        return ([1.0, 0.0, 0.0], Feature::Vertex(0));
    }
    let (v, w) = (vb / denom, vc / denom);
    ([1.0 - v - w, v, w], Feature::Face)
}

impl Constraint for Containment {
    fn name(&self) -> &str {
        &self.name
    }

    fn project(&mut self, ctx: &ConstraintContext<'_>, state: &mut State) {
        let w = &ctx.particles.inv_mass;
        let (mut corrections, mut worst, mut tests, mut visits, mut entries) = (0, f64::NEG_INFINITY, 0, 0, 0);
        let built = self.tree_builds;
        let list_visits = self.prepare(state);
        self.hint.resize(self.pairs.len(), u32::MAX);
        for k in 0..self.pairs.len() {
            let (c, feat, t, n, e) = self.violation_counted(state, k, true);
            self.hint[k] = feat.face;
            entries += e;
            tests += t;
            visits += n;
            worst = worst.max(c);
            if c <= 0.0 || feat.normal == DVec3::ZERO {
                continue;
            }
            let inner = self.pairs[k].0 as usize;
            let global = |v: u32| self.verts[v as usize] as usize;
            let globals = [global(feat.verts[0]), global(feat.verts[1]), global(feat.verts[2])];
            let wi = w[inner];
            let denom = wi + (0..3).map(|s| feat.weights[s] * feat.weights[s] * w[globals[s]]).sum::<f64>();
            if denom == 0.0 {
                continue;
            }
            corrections += 1;
            let n = feat.normal;
            let lambda = c / denom;
            state.x.add(inner, -wi * lambda * n);
            for s in 0..3 {
                if feat.weights[s] != 0.0 {
                    state.x.add(globals[s], feat.weights[s] * w[globals[s]] * lambda * n);
                    // Keep the surface's own copy current, and its faces' planes.
                    let v = feat.verts[s] as usize;
                    self.at[v] = state.x.get(globals[s]);
                    // (A loose vertex bounds no list entry's distance.)
                    if self.lists_live && !self.list.is_empty() && !self.loose_vertex[v] {
                        self.surface_drift = self.surface_drift.max(self.vertex_drift(v));
                    }
                    for k in self.fan_start[v] as usize..self.fan_start[v + 1] as usize {
                        let f = self.fan[k] as usize;
                        self.cross[f] = self.plane(f);
                    }
                }
            }
            let surface_v: DVec3 = (0..3).map(|s| feat.weights[s] * state.v.get(globals[s])).sum();
            let u = (state.v.get(inner) - surface_v).dot(n);
            if u > 0.0 {
                let j = u / denom;
                state.v.add(inner, -wi * j * n);
                for s in 0..3 {
                    if feat.weights[s] != 0.0 {
                        state.v.add(globals[s], feat.weights[s] * w[globals[s]] * j * n);
                    }
                }
            }
        }
        self.corrections = corrections;
        self.worst = worst;
        self.face_tests = tests;
        self.list_visits = entries;
        // The search's cost right after a build is the yardstick for the refitted
        // tree: past VISIT_LIMIT × that many node visits the next list making
        // builds anew. (The searches of a projection go through the lists, which
        // hold the faces found through the tree when they were made.)
        let visits = list_visits.map_or(visits, |v| v + visits);
        if self.tree_builds != built {
            self.built_visits = visits;
        } else if list_visits.is_some() && visits as f64 > VISIT_LIMIT * self.built_visits as f64 {
            self.built_area = 0.0;
        }
    }

    /// Corrections and the largest violation (m) found in the last projection.
    fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("corrections", self.corrections as f64),
            ("worst_violation", self.worst),
            ("face_tests", self.face_tests as f64),
            ("tree_nodes", self.tree.len() as f64),
            ("tree_builds", self.tree_builds as f64),
            ("list_builds", self.list_builds as f64),
            ("list_visits", self.list_visits as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::sphere::SphereMesh;
    use crate::constraint::ConstraintContext;
    use crate::model::Vec3s;

    /// The closest candidate feature by testing every face: the partner's fan and
    /// every face whose inflated box holds the particle, in face order.
    fn brute_force(c: &Containment, state: &State, k: usize) -> f64 {
        let (inner, partner, m) = c.pairs[k];
        let p = state.x.get(inner as usize);
        let fan = &c.fan[c.fan_start[partner as usize] as usize..c.fan_start[partner as usize + 1] as usize];
        let mut best: Option<Closest> = None;
        for f in 0..c.faces.len() {
            let (lo, hi) = c.face_box(f);
            if fan.contains(&(f as u32)) || (p.cmpge(lo).all() && p.cmple(hi).all()) {
                let cand = c.closest_on_face(f, p);
                if best.is_none_or(|b| cand.dist2 < b.dist2 || (cand.dist2 == b.dist2 && cand.face < b.face)) {
                    best = Some(cand);
                }
            }
        }
        let b = best.unwrap();
        let normal = if b.at_vertex { c.compute_vertex_normal(b.verts[0]) } else { b.normal };
        (p - b.point).dot(normal) + m
    }

    /// A level-3 unit sphere (258 vertices, 512 faces) with an inner layer at 0.8
    /// of the radius (every margin 0.02 m): the unit sphere's vertices, its faces,
    /// the rest positions (outer layer first) and the constraint.
    fn level3_body() -> (Vec<DVec3>, usize, Vec<DVec3>, Containment) {
        let (unit, tris) = SphereMesh::Uniform { level: 3 }.generate();
        let faces = tris.len();
        let n = unit.len();
        let mut pts: Vec<DVec3> = unit.clone();
        pts.extend(unit.iter().map(|u| *u * 0.8));
        let rest = Vec3s::from_vecs(&pts);
        let pairs: Vec<(usize, usize)> = (0..n).map(|i| (n + i, i)).collect();
        let c = Containment::new("c", &ClosedSurface::Triangles(tris), &pairs, 0.1, &rest).unwrap();
        (unit, faces, pts, c)
    }

    #[test]
    fn the_hierarchy_and_the_skips_find_exactly_what_testing_every_face_finds() {
        // The level-3 body crumpled at random by up to 40 % of the radius: far
        // more faces near each inner particle than on the round body.
        let (unit, _, pts, mut c) = level3_body();
        let n = unit.len();
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        for round in 0..3 {
            let mut state = State::default();
            for (i, p) in pts.iter().enumerate() {
                let squash = DVec3::new(1.0, 0.15 + 0.3 * round as f64, 1.0);
                let jitter = DVec3::new(next(), next(), next()) * 0.4;
                state.push(*p * squash + jitter * if i < n { 0.3 } else { 1.0 }, DVec3::ZERO);
            }
            c.rebuild_cells(&state);
            assert!(!c.tree.is_empty(), "the body is large enough for the hierarchy");
            // Without a hint, with the right one (the search then skips most
            // faces), and with stale ones, for every pair.
            c.hint.clear();
            let mut tests = [0u64; 3];
            for (pass, count) in tests.iter_mut().enumerate() {
                for k in 0..c.pairs.len() {
                    let (v, feat, t, _) = c.violation(&state, k, true);
                    *count += t;
                    assert_eq!(v.to_bits(), brute_force(&c, &state, k).to_bits(), "round {round} pass {pass} pair {k}");
                    if pass == 0 {
                        c.hint.resize(c.pairs.len(), u32::MAX);
                        c.hint[k] = feat.face;
                    }
                }
                if pass == 1 {
                    // Stale hints from other pairs must not change anything either.
                    c.hint.rotate_left(1);
                }
            }
            assert!(tests[1] < tests[0], "the hint saves closest-point searches: {tests:?}");
            // A small move refits the same tree (no new build); the search still
            // finds exactly what testing every face finds.
            let builds = c.tree_builds;
            for i in 0..state.len() {
                let p = state.x.get(i);
                state.x.set(i, p + DVec3::new(next(), next(), next()) * 0.01);
            }
            c.rebuild_cells(&state);
            assert_eq!(c.tree_builds, builds, "round {round}: a small move refits");
            for k in 0..c.pairs.len() {
                let v = c.violation(&state, k, true).0;
                assert_eq!(v.to_bits(), brute_force(&c, &state, k).to_bits(), "round {round} refitted, pair {k}");
            }
        }
        // The candidate lists of a projection: the same answers, bit for bit, kept
        // over small moves and a move of the whole body, made anew after a large
        // one; with entries bounded by plane and box distances (lists made after
        // short-lived ones), and by the faces' distances themselves.
        let mut state = State::default();
        for (i, p) in pts.iter().enumerate() {
            let jitter = DVec3::new(next(), next(), next()) * 0.3;
            state.push(*p * DVec3::new(1.0, 0.2, 1.0) + jitter * if i < n { 0.3 } else { 1.0 }, DVec3::ZERO);
        }
        let mut read = [0u64; 2];
        for round in 0..12 {
            let (exact, round) = (round >= 6, round % 6);
            let made = c.list_builds;
            // The life of the lists so far, which forecasts the next lists'.
            c.list_uses = if exact { EXACT_FLOOR_LIFE } else { 0 };
            if round == 0 {
                c.list_anchor.clear();
            }
            c.prepare(&state);
            let expected = if round == 0 || round == 5 { made + 1 } else { made };
            assert_eq!(c.list_builds, expected, "round {round}: lists made anew only when they no longer hold");
            let mut entries = 0;
            for k in 0..c.pairs.len() {
                let (v, _, _, _, e) = c.violation_counted(&state, k, true);
                entries += e;
                assert_eq!(v.to_bits(), brute_force(&c, &state, k).to_bits(), "lists, round {round}, pair {k}");
            }
            // The searches stop early in the lists sorted by distance bounds.
            assert!(
                entries < c.list.len() as u64 * 3 / 4,
                "round {round}: {entries} of {} list entries visited",
                c.list.len()
            );
            read[usize::from(exact)] += entries;
            // Rounds 1–3: moves well inside the slack; 4: the whole body carried
            // away; 5: a move past the slack.
            let (step, shift) = match round {
                3 => (0.0, DVec3::new(3.0, -1.0, 2.0)),
                4 => (2.0 * c.slack, DVec3::ZERO),
                _ => (0.1 * c.slack, DVec3::ZERO),
            };
            for i in 0..state.len() {
                let p = state.x.get(i);
                state.x.set(i, p + shift + DVec3::new(next(), next(), next()) * step);
            }
        }
        assert!(read[1] < read[0], "distances for bounds: fewer entries read, {read:?}");
        // Loose faces and particles: one inner particle carried next to a far
        // surface vertex, or far surface vertices carried next to an inner
        // particle, keep the lists (the particle's search, or the vertices'
        // faces, are then tested in full: its list, or the lists, lack the faces
        // now nearest); many vertices shoved past the slack make them anew.
        // Answers identical to testing every face throughout.
        let far_from = |state: &State, i: usize| {
            (0..n).max_by(|&a, &b| {
                state.x.get(a).distance(state.x.get(i)).total_cmp(&state.x.get(b).distance(state.x.get(i)))
            })
        };
        for round in 0..3 {
            // Lists made at this state (a cleared anchor forces it).
            c.list_anchor.clear();
            c.prepare(&state);
            let made = c.list_builds;
            let (inner, partner_side) = (c.pairs[5].0 as usize, 0.01 * DVec3::ONE);
            let far = far_from(&state, inner).unwrap();
            match round {
                0 => state.x.set(inner, state.x.get(far) * 1.005),
                1 => {
                    for v in [far, (far + 1) % n] {
                        state.x.set(v, state.x.get(inner) + partner_side);
                    }
                }
                _ => {
                    for v in 0..60 {
                        state.x.set(v, state.x.get(v) + DVec3::new(1.5, -1.0, 0.5) * c.slack);
                    }
                }
            }
            c.prepare(&state);
            let (vertices, pairs) = (c.loose_vertices.len(), c.loose_pairs.len());
            if round < 2 {
                assert_eq!(c.list_builds, made, "loose round {round}: lists kept");
                assert_eq!(vertices, if round == 1 { 2 } else { 0 }, "loose round {round}: vertices");
                assert_eq!(pairs, usize::from(round == 0), "loose round {round}: pairs");
            } else {
                assert_eq!(c.list_builds, made + 1, "many loose vertices: lists made anew");
            }
            for k in 0..c.pairs.len() {
                let v = c.violation(&state, k, true).0;
                assert_eq!(v.to_bits(), brute_force(&c, &state, k).to_bits(), "loose round {round}, pair {k}");
            }
        }
        // Whole projections, corrections included (they move faces, whose planes
        // are then taken again): with the lists and through the hierarchy, the
        // same states bit for bit, projection after projection. The first
        // projections move particles by more than the slack (the lists are made
        // anew each time); the lists serve once the corrections have settled.
        let mut particles = crate::model::Particles::default();
        for i in 0..pts.len() {
            particles.push(if i < n { 1.0 } else { 2.0 }, 0.0);
        }
        let ctx = ConstraintContext { particles: &particles, t: 0.0, h: 1e-3 };
        let mut state = State::default();
        for (i, p) in pts.iter().enumerate() {
            let jitter = DVec3::new(next(), next(), next()) * 0.3;
            state.push(*p * DVec3::new(1.0, 0.2, 1.0) + jitter * if i < n { 0.3 } else { 1.0 }, DVec3::ZERO);
        }
        let mut tree = c.clone();
        tree.use_lists = false;
        let (mut listed, made) = (state.clone(), c.list_builds);
        let mut reused_with_corrections = 0;
        for round in 0..40 {
            let before = c.list_builds;
            c.project(&ctx, &mut listed);
            tree.project(&ctx, &mut state);
            if round == 0 {
                assert!(c.corrections > 0, "the crumpled body needs corrections");
            }
            if c.list_builds == before && c.corrections > 0 {
                reused_with_corrections += 1;
            }
            for i in 0..state.len() {
                assert_eq!(listed.x.get(i).to_array().map(f64::to_bits), state.x.get(i).to_array().map(f64::to_bits));
                assert_eq!(listed.v.get(i).to_array().map(f64::to_bits), state.v.get(i).to_array().map(f64::to_bits));
            }
            for i in 0..state.len() {
                let d = DVec3::new(next(), next(), next()) * 0.05 * c.slack;
                listed.x.set(i, listed.x.get(i) + d);
                state.x.set(i, state.x.get(i) + d);
            }
        }
        assert!(c.list_builds < made + 40, "the lists served several projections: {} made", c.list_builds - made);
        assert!(reused_with_corrections > 0, "some projection corrected particles through kept lists");
        // Scrambling the particles over a larger ball spreads each refitted node
        // over faces far apart: the tree is built anew. (A smooth deformation,
        // even a sphere squashed flat, keeps neighbouring faces together and the
        // refitted tree as good as a new one.)
        let mut state = State::default();
        for _ in &pts {
            state.push(DVec3::new(next(), next(), next()) * 2.0, DVec3::ZERO);
        }
        let builds = c.tree_builds;
        c.rebuild_cells(&state);
        assert_eq!(c.tree_builds, builds + 1, "a scrambled body rebuilds the hierarchy");
        for k in 0..c.pairs.len() {
            let v = c.violation(&state, k, true).0;
            assert_eq!(v.to_bits(), brute_force(&c, &state, k).to_bits(), "scrambled, pair {k}");
        }
    }

    #[test]
    fn the_skin_density_counts_the_faces_within_reach() {
        // The level-3 body: every margin is 0.02 m.
        let (unit, faces, pts, c) = level3_body();
        let n = unit.len();
        let at = |inner: &dyn Fn(usize) -> DVec3| {
            let mut state = State::default();
            for (i, p) in pts.iter().enumerate() {
                state.push(if i < n { *p } else { inner(i - n) }, DVec3::ZERO);
            }
            state
        };
        // Every inner particle at the centre: each face's plane lies between the
        // polyhedron's inradius (above 0.97) and 1 from it.
        let centre = at(&|_| DVec3::ZERO);
        assert_eq!(c.mean_faces_within(&centre, 0.9 / 0.02), 0.0);
        assert_eq!(c.mean_faces_within(&centre, 1.01 / 0.02), faces as f64);
        // Every inner particle on its partner: within a hundredth of a margin lie
        // exactly the faces around that vertex, 3 × 512 / 258 on average.
        let on = at(&|i| unit[i]);
        let fans = 3.0 * faces as f64 / n as f64;
        assert!((c.mean_faces_within(&on, 0.01) - fans).abs() < 1e-12, "{}", c.mean_faces_within(&on, 0.01));
        // At rest (0.2 from the surface, ten margins) none lies within the margin.
        let rest_state = at(&|i| pts[n + i]);
        assert_eq!(c.mean_faces_within(&rest_state, 1.0), 0.0);
    }
}
