//! Two-way contact between rigid bodies and particles, and between rigid bodies and
//! the scene's colliders (000's heavy ball on cloth, heavy cube on a soft cube).
//!
//! # Particles against a body
//! A particle of radius r whose centre lies at signed distance d < r from a body's
//! surface (outward normal n, nearest surface point c, lever arm ρ = c − x_b from
//! the body's centre) is in contact with penetration δ = r − d.
//!
//! *Position.* Both are moved apart along n in proportion to their inverse masses:
//! with w = w_p + w_b, the particle moves by (w_p/w) δ n and the body by
//! −(w_b/w) δ n. The correction is translational only (the body does not turn),
//! so the mass-weighted centre of the pair stays put; velocities are not changed by it.
//!
//! *Velocity.* If the particle approaches the surface point, u_n = (v_p − v_c) · n < 0
//! with v_c = v_b + ω × ρ, an impulse P = J n − J_t t is exchanged, J = −(1 + ε) u_n /
//! k_n with the effective inverse mass k_n = w_p + w_b + n · ((I⁻¹ (ρ × n)) × ρ); the
//! friction part J_t = min(|u_t| / k_t, μ J) along the sliding direction t opposes
//! sliding (Coulomb). The particle gets v_p += w_p P, the body v_b −= w_b P and
//! ω −= I⁻¹ (ρ × P): the linear impulses are equal and opposite, so the total linear
//! momentum is unchanged by a projection to round-off.
//!
//! # Inside an implicit solve
//! Projected after the step, a particle pushes back on a body only with the
//! momentum it has: at implicit Euler's steps, where h² k / m ≫ 1 for the springs
//! behind it, the body then meets a layer of loose masses, not the stiff body they
//! belong to, and a heavy one sinks through (000's 5 kg cube on the 9³ lattice at
//! h = 5 ms went through the lattice and crushed it). So implicit Euler also asks
//! for every particle–body contact present at the start of the step as a stiff
//! spring inside its solve ([`Constraint::add_coupled_forces`]): energy
//! ½ k δ² in the penetration δ = r − d, force k δ n on the particle and −k δ n at
//! the contact point on the body (with its torque), and the translational Jacobian
//! ∂f_p/∂x_p = −k n nᵀ + k δ ∂n/∂x (the second part is a ball's curvature,
//! (I − n nᵀ)/|x_p − x_b|, left out when a definite matrix is asked for; a box's
//! faces have none, and at a box's edges and corners it is left out, so the
//! matrix stays definite). The stiffness is k = κ m_r / h² with m_r the pair's
//! reduced mass and κ = [`super::COUPLED_STIFFNESS`]: the spring holds a load F at
//! δ = F h² / (κ m_r). In the same step the projection corrects only the
//! penetration beyond [`COUPLED_SLOP`] r, for every particle (the spring carries
//! the load with that penetration in the next solve; a heavy body landing on many
//! particles at once would otherwise be stopped by their masses alone, as before
//! the coupling, and crush the layer under it), and takes back the
//! separating speed a spring gave in pushing a starting penetration out.
//!
//! # Bodies against triangles
//! Particles alone let a body slip between them when it is small against the mesh
//! spacing, so each body's support points (a ball's centre with its radius as
//! margin; a box's corners, edge midpoints and face centres) are also tested against the
//! deformable surfaces' triangles (`triangles`), thickened by the mean radius r of
//! their three particles. A point s whose nearest triangle point x_t = Σ wᵢ xᵢ lies
//! closer than margin + r, at an edge or inside (a vertex is the particle test's),
//! is a contact with normal n from s to x_t; a point that has passed through the
//! face while the body's centre has not is a contact of depth (distance + margin +
//! r) along the face normal, pointing away from the centre. The triangle point moves like a
//! particle of inverse mass w_t = Σ wᵢ² / mᵢ: the position correction λ = δ / (w_t +
//! w_b) moves particle i by wᵢ λ n / mᵢ and the body by −w_b λ n; an impulse P at the
//! point changes vᵢ by wᵢ P / mᵢ (so Σ mᵢ Δvᵢ = P) and the body by −P, with
//! restitution and Coulomb friction as for particles.
//!
//! A box also meets the surfaces along its edges and theirs, where no support
//! point or particle lies:
//! - *a surface edge across the box*: the point of each edge (i, j) deepest in the
//!   box, or nearest to it (the signed distance is convex along a line, so a
//!   golden-section search finds it), at parameter t strictly inside the edge and
//!   closer than its contact distance, is a contact along the box's normal there,
//!   moving like a particle of weights (1 − t, t);
//! - *a box edge through a triangle*: the part of each box edge over the triangle
//!   (clipped to the prism its face sweeps along its normal) whose lower end, on
//!   the side of the box's centre, lies closer to the face than the contact
//!   distance or past it is a contact along the face normal, away from the centre.
//!
//! Edges come after triangles: a box edge's push moves a triangle along its
//! normal, which can leave one of its edges across the box.
//!
//! *Contact distance.* A particle keeps its radius from a body's surface, or half
//! its deformable surface's `thickness` where that is more
//! ([`Constraint::prepare`]): a rigid body counts as a surface of thickness 0, and
//! two surfaces keep the mean of their thicknesses apart, as in the contact
//! stage. With a positive distance, a cloth resting on a box is apart from it
//! rather than touching it exactly, where round-off would put it on either side.
//!
//! # Bodies against colliders and each other
//! See [`bodies`]: the contacts of the bodies with the scene's colliders and with
//! each other, found exactly for every pair of shapes and solved together.

use glam::{DMat3, DVec3};

use super::collider::{Collider, Surface};
use super::{
    COUPLED_SLOP, COUPLED_STIFFNESS, Constraint, ConstraintContext, coupled_friction, coupled_push_speed,
    coupled_stiffness, outer,
};
use crate::checkpoint::{RestoreError, StateReader, StateWriter};
use crate::contact::narrow::point_triangle;

pub mod bodies;
use crate::force::{Loads, Parameter, ParameterError};
use crate::model::{Particles, Rigid, RigidShape, State};
use crate::solve::JacobianSink;
use bodies::{BodyContact, shapes_overlap};

/// Default restitution between particles and rigid bodies: none (a heavy body
/// sinks into cloth without bouncing its particles off).
pub const DEFAULT_RIGID_RESTITUTION: f64 = 0.0;
/// Default Coulomb friction between particles and rigid bodies.
pub const DEFAULT_RIGID_FRICTION: f64 = 0.3;

/// Sequential-impulse passes over all the bodies' contacts with the colliders and
/// with each other in a projection.
pub const RIGID_PASSES: usize = 20;

/// Speculative margin of the bodies' contacts with colliders and each other, as a
/// fraction of the smaller body's smallest half-extent (a ball's radius): features
/// that close apart count as contacts, which keeps a resting contact from
/// switching off and on between steps.
pub const SPECULATIVE: f64 = 0.1;

/// Approach speed (m/s) below which a body contact's restitution is not applied
/// (PhysX's default bounce threshold): a body resting on the floor or another,
/// approached each step at the speed gravity gives in one step, would otherwise be
/// bounced a little each step and never rest.
pub const RESTITUTION_THRESHOLD: f64 = 0.2;

/// Nonlinear Gauss–Seidel passes of the position correction over the bodies'
/// contacts in a projection.
pub const POSITION_PASSES: usize = 4;

/// Overlap the position correction leaves in a body contact, as a fraction of the
/// smaller body's smallest half-extent: a resting contact stays touching from step
/// to step instead of being lifted clear and landing again, which would rock a
/// stack.
pub const POSITION_SLOP: f64 = 1e-3;

/// One particle–body contact as a spring inside an implicit solve.
struct CoupledSpring {
    /// The body's index in [`RigidContact::bodies`].
    body: usize,
    /// The particle.
    i: usize,
    /// The body's particle.
    b: usize,
    /// Outward normal of the body at the contact (world frame).
    n: DVec3,
    /// Penetration r − d, m (> 0).
    depth: f64,
    /// Stiffness, N/m.
    k: f64,
    /// Contact point on the body's surface less the body's centre, m.
    arm: DVec3,
    /// Curvature of the distance across the normal, 1/m (a ball's 1/|x_p − x_b|;
    /// 0 for a box).
    curvature: f64,
    /// Tangential velocity of the particle relative to the body's contact point, m/s.
    slip: DVec3,
    /// Friction damping on that velocity, N s/m ([`coupled_friction`]).
    c: f64,
}

/// Contact between rigid bodies and particles, and between rigid bodies and
/// colliders. See the module docs.
#[derive(Clone, Debug)]
pub struct RigidContact {
    /// Name for reports and parameter keys.
    pub name: String,
    /// The rigid bodies.
    pub bodies: Vec<Rigid>,
    /// Particles that touch the bodies (`None`: every particle that is not a rigid
    /// body).
    pub only: Option<Vec<bool>>,
    /// Restitution and friction between particles and bodies.
    pub surface: Surface,
    /// The scene's colliders, which the bodies bounce off (each with its own
    /// surface and motion).
    pub colliders: Vec<Collider>,
    /// Triangles of deformable surfaces the bodies touch (particle indices).
    pub triangles: Vec<[u32; 3]>,
    /// Contacts resolved in the last projection.
    pub contacts: usize,
    /// End time of the last step whose implicit solve held the particle contacts
    /// as springs (set by [`Constraint::add_coupled_forces`]): the projections
    /// ending at that time leave those particles to them. Used only within that
    /// step, so it is no part of a checkpoint.
    coupled_until: Option<f64>,
    /// Whether the projection under way follows such a solve.
    coupled: bool,
    /// The particle–body contacts the last implicit solve held: (particle, body
    /// index, starting penetration).
    coupled_depths: Vec<(u32, u32, f64)>,
    /// Scratch: per body, the coupled springs' torque and rotational stiffness.
    coupled_turn: Vec<(DVec3, DMat3, DMat3)>,
    /// Impulse each body received from particles since the world began, N s.
    pub particle_impulse: Vec<DVec3>,
    /// Impulse each body received from colliders since the world began, N s.
    pub collider_impulse: Vec<DVec3>,
    is_body: Vec<bool>,
    /// Contact distance of each particle from a body's surface, m: its radius, or
    /// half its surface's thickness where that is more (a rigid body is a surface
    /// of thickness 0, and two surfaces keep the mean of their thicknesses apart);
    /// set by [`Constraint::prepare`], the radius until then.
    reach: Vec<f64>,
    /// The edges of `triangles`, each once (built on first use).
    edges: Vec<[u32; 2]>,
    /// How many triangles `edges` was built from.
    edges_from: usize,
    /// Scratch of the collider contacts, kept between steps.
    scratch: ColliderScratch,
    /// The bodies' contacts with colliders and each other, gathered in a
    /// projection (kept for its storage).
    body_contacts: Vec<BodyContact>,
    /// The last projection's body contacts (key, contact point in a's body frame,
    /// normal impulse, friction impulse), sorted by key: the warm start of the next.
    warm: Vec<(u64, DVec3, f64, DVec3)>,
}

/// Reused storage of a body's contacts with one collider.
#[derive(Clone, Debug, Default)]
struct ColliderScratch {
    /// (lever arm of the contact point, unit normal from the collider, depth).
    found: Vec<(DVec3, DVec3, f64)>,
    /// A mesh collider's vertices and edges near a box.
    vertices: Vec<u32>,
    edges: Vec<[u32; 2]>,
}

impl RigidContact {
    /// Contact for `bodies` with particle–body surface `surface` and the colliders
    /// `colliders` (for the bodies only).
    #[must_use]
    pub fn new(name: &str, bodies: Vec<Rigid>, surface: Surface, colliders: Vec<Collider>) -> Self {
        let n = bodies.len();
        Self {
            name: name.to_owned(),
            bodies,
            only: None,
            surface,
            colliders,
            triangles: Vec::new(),
            contacts: 0,
            coupled_until: None,
            coupled: false,
            coupled_turn: Vec::new(),
            coupled_depths: Vec::new(),
            particle_impulse: vec![DVec3::ZERO; n],
            collider_impulse: vec![DVec3::ZERO; n],
            is_body: Vec::new(),
            reach: Vec::new(),
            edges: Vec::new(),
            edges_from: 0,
            scratch: ColliderScratch::default(),
            body_contacts: Vec::new(),
            warm: Vec::new(),
        }
    }

    /// Marks which particles are rigid bodies (on first use, or when the count
    /// changed).
    fn ensure_body_mask(&mut self, particles: &Particles, n: usize) {
        if self.is_body.len() != n {
            self.is_body = vec![false; n];
            for body in &self.bodies {
                self.is_body[body.particle] = true;
            }
        }
        if self.reach.len() != n {
            self.reach = particles.radius.clone();
            self.reach.resize(n, 0.0);
        }
        if self.edges_from != self.triangles.len() || (self.edges.is_empty() && !self.triangles.is_empty()) {
            self.edges = self
                .triangles
                .iter()
                .flat_map(|t| [[t[0], t[1]], [t[1], t[2]], [t[2], t[0]]])
                .map(|[a, b]| [a.min(b), a.max(b)])
                .collect();
            self.edges.sort_unstable();
            self.edges.dedup();
            self.edges_from = self.triangles.len();
        }
    }

    /// Calls `each` for every particle–body contact at `state`, as a spring of a
    /// step of length `h` (see the module docs).
    fn coupled_springs(&self, particles: &Particles, state: &State, h: f64, mut each: impl FnMut(CoupledSpring)) {
        for (index, body) in self.bodies.iter().enumerate() {
            let b = body.particle;
            let wb = particles.inv_mass[b];
            let bound = body.shape.bounding_radius();
            let (xb, q) = (state.x.get(b), state.q[b]);
            let q_inv = q.inverse();
            for i in 0..state.len() {
                if self.is_body[i] || self.only.as_ref().is_some_and(|o| !o[i]) {
                    continue;
                }
                let w = particles.inv_mass[i] + wb;
                let r_p = self.reach[i];
                let x = state.x.get(i);
                if w == 0.0 || (x - xb).length_squared() > (bound + r_p) * (bound + r_p) {
                    continue;
                }
                let (d, n_local) = body.shape.distance(q_inv * (x - xb));
                let depth = r_p - d;
                if depth <= 0.0 {
                    continue;
                }
                let depth = depth.max(0.0);
                let n = q * n_local;
                let curvature = match body.shape {
                    RigidShape::Sphere { .. } => 1.0 / (x - xb).length(),
                    RigidShape::Box { .. } => 0.0,
                };
                let k = coupled_stiffness(COUPLED_STIFFNESS, w, h);
                let arm = x - d * n - xb;
                let rel = state.v.get(i) - state.v.get(b) - state.w.get(b).cross(arm);
                let slip = rel - rel.dot(n) * n;
                let c = coupled_friction(COUPLED_STIFFNESS, w, h, self.surface.friction, k * depth, slip.length());
                each(CoupledSpring { body: index, i, b, n, depth, k, arm, curvature, slip, c });
            }
        }
    }

    /// Resolves every particle against body `k`.
    fn particles_against(&mut self, k: usize, particles: &Particles, state: &mut State) -> usize {
        let body = self.bodies[k];
        let b = body.particle;
        let wb = particles.inv_mass[b];
        let bound = body.shape.bounding_radius();
        let mut contacts = 0;
        for i in 0..state.len() {
            if self.is_body[i] || self.only.as_ref().is_some_and(|o| !o[i]) {
                continue;
            }
            let wp = particles.inv_mass[i];
            if wp == 0.0 && wb == 0.0 {
                continue;
            }
            let r_p = self.reach[i];
            let (xb, q) = (state.x.get(b), state.q[b]);
            let x = state.x.get(i);
            if (x - xb).length_squared() > (bound + r_p) * (bound + r_p) {
                continue;
            }
            let (d, n_local) = body.shape.distance(q.inverse() * (x - xb));
            let depth = r_p - d;
            if depth <= 0.0 {
                continue;
            }
            contacts += 1;
            let n = q * n_local;
            let rho = x - d * n - xb;
            // Position: translational, split by inverse mass; after an implicit
            // solve that held the contact as a spring, only beyond the slop.
            let w = wp + wb;
            let correct = if self.coupled { depth - COUPLED_SLOP * r_p } else { depth };
            if correct > 0.0 {
                state.x.set(i, x + (wp / w * correct) * n);
                state.x.set(b, xb - (wb / w * correct) * n);
            }
            // Velocity: impulse at the contact point.
            let inv_i = particles.world_inv_inertia(b, q);
            let (vp, vb, omega) = (state.v.get(i), state.v.get(b), state.w.get(b));
            let rel = vp - (vb + omega.cross(rho));
            let Some(impulse) = contact_impulse(rel, n, w, &inv_i, rho, self.surface) else {
                continue;
            };
            apply(state, i, wp, impulse);
            apply_body(state, b, wb, &inv_i, rho, -impulse);
            self.particle_impulse[k] -= impulse;
        }
        contacts
    }

    /// Resolves body `k`'s support points against every triangle of
    /// `triangles` (see the module docs).
    fn triangles_against(&mut self, k: usize, particles: &Particles, state: &mut State) -> usize {
        let body = self.bodies[k];
        let b = body.particle;
        let wb = particles.inv_mass[b];
        let (points, used, margin) = body_points(&body.shape);
        let bound = body.shape.bounding_radius();
        let mut contacts = 0;
        for t in 0..self.triangles.len() {
            let ids = self.triangles[t].map(|i| i as usize);
            let inv = ids.map(|i| particles.inv_mass[i]);
            if wb == 0.0 && inv.iter().all(|&w| w == 0.0) {
                continue;
            }
            let r = ids.iter().map(|&i| self.reach[i]).sum::<f64>() / 3.0;
            let reach = margin + r;
            let (xb, q) = (state.x.get(b), state.q[b]);
            let corner = ids.map(|i| state.x.get(i));
            let lo = corner[0].min(corner[1]).min(corner[2]);
            let hi = corner[0].max(corner[1]).max(corner[2]);
            let far = DVec3::splat(bound + r);
            if (xb + far).cmplt(lo).any() || (xb - far).cmpgt(hi).any() {
                continue;
            }
            for &p in &points[..used] {
                let x = ids.map(|i| state.x.get(i));
                let (xb, q) = (state.x.get(b), q);
                let s = xb + q * p;
                let (d2, w) = point_triangle(s, x[0], x[1], x[2]);
                // At a vertex the particle test acts.
                if w.iter().any(|&wi| wi > 1.0 - 1e-9) {
                    continue;
                }
                let xt = w[0] * x[0] + w[1] * x[1] + w[2] * x[2];
                let mut dist = d2.sqrt();
                // A support point through the triangle's face while the body's
                // centre is not: the body overlaps the triangle by dist + reach.
                let face = (x[1] - x[0]).cross(x[2] - x[0]).normalize_or_zero();
                let (side_s, side_c) = ((s - x[0]).dot(face), (xb - x[0]).dot(face));
                let through = side_s * side_c < 0.0 && w.iter().all(|&wi| wi > 0.0);
                let n = if through {
                    dist = -dist;
                    -side_c.signum() * face
                } else if dist >= reach || dist < 1e-12 * reach {
                    continue;
                } else {
                    (xt - s) / dist
                };
                let rho = s + margin * n - xb;
                if self.resolve_weighted(k, particles, state, &ids, &w, n, reach - dist, rho) {
                    contacts += 1;
                }
            }
        }
        contacts
    }

    /// Resolves a contact between body `k` and the point Σ wᵢ xᵢ of a deformable
    /// surface (particles `ids`, weights `w`): normal `n` from the body towards
    /// the surface, penetration `depth` > 0, lever arm `rho` from the body's centre
    /// to the contact point on its surface (see the module docs). False when
    /// neither side can move.
    #[allow(clippy::too_many_arguments)]
    fn resolve_weighted(
        &mut self,
        k: usize,
        particles: &Particles,
        state: &mut State,
        ids: &[usize],
        w: &[f64],
        n: DVec3,
        depth: f64,
        rho: DVec3,
    ) -> bool {
        let b = self.bodies[k].particle;
        let wb = particles.inv_mass[b];
        let wt: f64 = ids.iter().zip(w).map(|(&i, &wi)| wi * wi * particles.inv_mass[i]).sum();
        let total = wt + wb;
        if total == 0.0 {
            return false;
        }
        // Position: translational, split by inverse mass.
        let lambda = depth / total;
        for (&i, &wi) in ids.iter().zip(w) {
            state.x.set(i, state.x.get(i) + (wi * particles.inv_mass[i] * lambda) * n);
        }
        state.x.set(b, state.x.get(b) - (wb * lambda) * n);
        // Velocity: impulse at the contact point on the body's surface.
        let inv_i = particles.world_inv_inertia(b, state.q[b]);
        let vt: DVec3 = ids.iter().zip(w).map(|(&i, &wi)| wi * state.v.get(i)).sum();
        let rel = vt - (state.v.get(b) + state.w.get(b).cross(rho));
        if let Some(impulse) = contact_impulse(rel, n, total, &inv_i, rho, self.surface) {
            for (&i, &wi) in ids.iter().zip(w) {
                apply(state, i, wi * particles.inv_mass[i], impulse);
            }
            apply_body(state, b, wb, &inv_i, rho, -impulse);
            self.particle_impulse[k] -= impulse;
        }
        true
    }

    /// Resolves box `k` against the deformable surfaces' edges: the point of each
    /// edge deepest in the box, or nearest to it, closer than its contact
    /// distance (interpolated between the edge's particles) is a contact along the
    /// box's normal there. Catches an edge that crosses the box's edge or face
    /// between its particles, which stay outside.
    fn edges_against(&mut self, k: usize, particles: &Particles, state: &mut State) -> usize {
        let body = self.bodies[k];
        if body.shape.edges().is_empty() {
            return 0;
        }
        let b = body.particle;
        let bound = body.shape.bounding_radius();
        let mut contacts = 0;
        for e in 0..self.edges.len() {
            let [i, j] = self.edges[e].map(|i| i as usize);
            let (xb, q) = (state.x.get(b), state.q[b]);
            let (xi, xj) = (state.x.get(i), state.x.get(j));
            let reach = self.reach[i].max(self.reach[j]);
            // The segment's nearest point to the centre must be within reach.
            let d = xj - xi;
            let t0 =
                if d.length_squared() > 0.0 { ((xb - xi).dot(d) / d.length_squared()).clamp(0.0, 1.0) } else { 0.0 };
            if (xi + t0 * d - xb).length_squared() > (bound + reach) * (bound + reach) {
                continue;
            }
            let q_inv = q.inverse();
            let (t, dist) = body.shape.deepest_on_segment(q_inv * (xi - xb), q_inv * (xj - xb));
            // At a particle the particle test acts.
            if t <= 1e-9 || t >= 1.0 - 1e-9 {
                continue;
            }
            let reach = (1.0 - t) * self.reach[i] + t * self.reach[j];
            if dist >= reach {
                continue;
            }
            let point = xi + t * d;
            let n = q * body.shape.distance(q_inv * (point - xb)).1;
            let rho = point - dist * n - xb;
            if self.resolve_weighted(k, particles, state, &[i, j], &[1.0 - t, t], n, reach - dist, rho) {
                contacts += 1;
            }
        }
        contacts
    }

    /// Resolves box `k`'s edges against the deformable surfaces' triangles: the
    /// part of a box edge over a triangle (inside the prism its face sweeps along
    /// its normal) whose end lies closer to the face than the contact distance on
    /// the side of the box's centre, or past it, is a contact along the face
    /// normal, away from the centre. Catches a box edge that cuts through a
    /// triangle between the box's support points.
    fn box_edges_against(&mut self, k: usize, particles: &Particles, state: &mut State) -> usize {
        let body = self.bodies[k];
        let box_edges = body.shape.edges();
        if box_edges.is_empty() {
            return 0;
        }
        let b = body.particle;
        let mut corners = [DVec3::ZERO; 8];
        let _ = body.shape.support_points(&mut corners);
        let bound = body.shape.bounding_radius();
        let mut contacts = 0;
        for t in 0..self.triangles.len() {
            let ids = self.triangles[t].map(|i| i as usize);
            let r = ids.iter().map(|&i| self.reach[i]).sum::<f64>() / 3.0;
            let x = ids.map(|i| state.x.get(i));
            let xb = state.x.get(b);
            let lo = x[0].min(x[1]).min(x[2]);
            let hi = x[0].max(x[1]).max(x[2]);
            let far = DVec3::splat(bound + r);
            if (xb + far).cmplt(lo).any() || (xb - far).cmpgt(hi).any() {
                continue;
            }
            let face = (x[1] - x[0]).cross(x[2] - x[0]).normalize_or_zero();
            if face == DVec3::ZERO {
                continue;
            }
            // Inward normals of the prism's sides.
            let sides = [0, 1, 2].map(|j| (x[j], face.cross(x[(j + 1) % 3] - x[j])));
            for &(ci, cj) in box_edges {
                let (xb, q) = (state.x.get(b), state.q[b]);
                let x = ids.map(|i| state.x.get(i));
                let (s0, s1) = (xb + q * corners[ci], xb + q * corners[cj]);
                // Clip the box edge to the prism.
                let (mut t0, mut t1) = (0.0f64, 1.0f64);
                for &(a, m) in &sides {
                    let (f0, f1) = ((s0 - a).dot(m), (s1 - a).dot(m));
                    if f0 < 0.0 && f1 < 0.0 {
                        t1 = -1.0;
                        break;
                    }
                    if f0 < 0.0 {
                        t0 = t0.max(f0 / (f0 - f1));
                    } else if f1 < 0.0 {
                        t1 = t1.min(f0 / (f0 - f1));
                    }
                }
                if t0 > t1 {
                    continue;
                }
                // Heights over the face on the centre's side; the lower end decides.
                let side = if (xb - x[0]).dot(face) < 0.0 { -1.0 } else { 1.0 };
                let height = |p: DVec3| side * (p - x[0]).dot(face);
                let (e0, e1) = (s0 + t0 * (s1 - s0), s0 + t1 * (s1 - s0));
                let (s, h) = if height(e0) <= height(e1) { (e0, height(e0)) } else { (e1, height(e1)) };
                if h >= r {
                    continue;
                }
                let (_, w) = point_triangle(s - (s - x[0]).dot(face) * face, x[0], x[1], x[2]);
                if self.resolve_weighted(k, particles, state, &ids, &w, -side * face, r - h, s - xb) {
                    contacts += 1;
                }
            }
        }
        contacts
    }
}

/// Support points of a shape in its body frame (the first `count` of the array)
/// and their margin, tested against the deformable surfaces' triangles: a ball's
/// centre (margin its radius), a box's corners, edge midpoints and face centres
/// (margin 0). The edge midpoints and face centres spread a box's support over
/// a triangle larger than its face; the edges themselves are tested separately.
fn body_points(shape: &crate::model::RigidShape) -> ([DVec3; 26], usize, f64) {
    let mut corners = [DVec3::ZERO; 8];
    let (count, margin) = shape.support_points(&mut corners);
    let mut points = [DVec3::ZERO; 26];
    points[..count].copy_from_slice(&corners[..count]);
    let mut used = count;
    if count == 8 {
        // Edge midpoints: corners differing in one bit.
        for i in 0..8usize {
            for bit in [1usize, 2, 4] {
                if i & bit == 0 {
                    points[used] = 0.5 * (corners[i] + corners[i | bit]);
                    used += 1;
                }
            }
        }
        if let crate::model::RigidShape::Box { half } = *shape {
            for axis in [DVec3::X, DVec3::Y, DVec3::Z] {
                for sign in [-1.0, 1.0] {
                    points[used] = sign * axis * half;
                    used += 1;
                }
            }
        }
    }
    (points, used, margin)
}

/// The impulse on the particle side of a contact whose relative velocity (particle
/// side minus body point) is `rel` along normal `n` (from the body), with the
/// particle side's inverse mass plus the body's `w`, the body's world inverse
/// inertia `inv_i` and lever arm `rho`: restitution and Coulomb friction from
/// `surface`; `None` when the two are not approaching.
fn contact_impulse(rel: DVec3, n: DVec3, w: f64, inv_i: &DMat3, rho: DVec3, surface: Surface) -> Option<DVec3> {
    let un = rel.dot(n);
    if un >= 0.0 {
        return None;
    }
    let kn = w + n.dot((*inv_i * rho.cross(n)).cross(rho));
    let jn = -(1.0 + surface.restitution) * un / kn;
    let mut impulse = jn * n;
    let ut = rel - un * n;
    let ut_len = ut.length();
    if ut_len > 0.0 && surface.friction > 0.0 {
        let t = ut / ut_len;
        let kt = w + t.dot((*inv_i * rho.cross(t)).cross(rho));
        impulse -= (ut_len / kt).min(surface.friction * jn) * t;
    }
    Some(impulse)
}

/// Adds impulse `p` (N s) to particle `i` of inverse mass `w`.
#[inline]
fn apply(state: &mut State, i: usize, w: f64, p: DVec3) {
    state.v.set(i, state.v.get(i) + w * p);
}

/// Adds impulse `p` (N s) at lever arm `arm` to body particle `b`.
#[inline]
fn apply_body(state: &mut State, b: usize, w: f64, inv_i: &DMat3, arm: DVec3, p: DVec3) {
    state.v.set(b, state.v.get(b) + w * p);
    state.w.set(b, state.w.get(b) + *inv_i * arm.cross(p));
}

impl Constraint for RigidContact {
    fn name(&self) -> &str {
        &self.name
    }

    fn prepare(&mut self, particles: &Particles, surfaces: &crate::contact::surface::Surfaces) {
        let mut reach = particles.radius.clone();
        let mut widen = |i: u32, b: u32| {
            let r = &mut reach[i as usize];
            *r = r.max(0.5 * surfaces.thickness_of(b));
        };
        for (e, &b) in surfaces.edges.iter().zip(&surfaces.edge_body) {
            widen(e[0], b);
            widen(e[1], b);
        }
        for (&p, &b) in surfaces.points.iter().zip(&surfaces.point_body) {
            widen(p, b);
        }
        self.reach = reach;
    }

    fn add_coupled_forces(&mut self, ctx: &ConstraintContext<'_>, state: &State, out: &mut Loads) {
        self.ensure_body_mask(ctx.particles, state.len());
        self.coupled_until = Some(ctx.t + ctx.h);
        // Per body: the torque, the rotational stiffness K = Σ k (ρ × n)(ρ × n)ᵀ
        // and the rotational damping D = Σ c [ρ]ₓᵀ P [ρ]ₓ of the friction
        // (P = I − n nᵀ).
        let mut turn = std::mem::take(&mut self.coupled_turn);
        turn.clear();
        turn.resize(self.bodies.len(), (DVec3::ZERO, DMat3::ZERO, DMat3::ZERO));
        let mut depths = std::mem::take(&mut self.coupled_depths);
        depths.clear();
        self.coupled_springs(ctx.particles, state, ctx.h, |s| {
            depths.push((s.i as u32, s.body as u32, s.depth));
            let f = (s.k * s.depth) * s.n - s.c * s.slip;
            out.f.set(s.i, out.f.get(s.i) + f);
            out.f.set(s.b, out.f.get(s.b) - f);
            let t = &mut turn[s.body];
            t.0 -= s.arm.cross(f);
            t.1 += s.k * outer(s.arm.cross(s.n));
            let cross = DMat3::from_cols(
                s.arm.cross(DVec3::X) * -1.0,
                s.arm.cross(DVec3::Y) * -1.0,
                s.arm.cross(DVec3::Z) * -1.0,
            );
            t.2 += s.c * (cross.transpose() * (DMat3::IDENTITY - outer(s.n)) * cross);
        });
        // The body's rotation is advanced explicitly by the integrator; with these
        // torques as they stand, a box resting on the springs rocks with growing
        // amplitude at large steps. So the torque handed on is the one that
        // advances ω by implicit Euler against K and D (particles held):
        // (I + h D + h² K) Δω = h (τ − h K ω), i.e. the torque
        // I (I + h D + h² K)⁻¹ (τ − h K ω).
        let h = ctx.h;
        for (body, (tau, k_rot, d_rot)) in self.bodies.iter().zip(&turn) {
            if *k_rot == DMat3::ZERO && *d_rot == DMat3::ZERO {
                continue;
            }
            let b = body.particle;
            let inertia = ctx.particles.world_inertia(b, state.q[b]);
            let system = inertia + *d_rot * h + *k_rot * (h * h);
            let tau = inertia * system.inverse() * (*tau - *k_rot * state.w.get(b) * h);
            out.tau.set(b, out.tau.get(b) + tau);
        }
        self.coupled_turn = turn;
        self.coupled_depths = depths;
    }

    fn add_coupled_jacobian(&mut self, ctx: &ConstraintContext<'_>, state: &State, sink: &mut dyn JacobianSink) {
        self.ensure_body_mask(ctx.particles, state.len());
        let definite = sink.definite();
        self.coupled_springs(ctx.particles, state, ctx.h, |s| {
            let nn = outer(s.n);
            let mut dfdx = -s.k * nn;
            if !definite && s.curvature > 0.0 {
                dfdx += (s.k * s.depth * s.curvature) * (DMat3::IDENTITY - nn);
            }
            sink.add_pair(s.i, s.b, dfdx, -s.c * (DMat3::IDENTITY - nn));
        });
    }

    fn project(&mut self, ctx: &ConstraintContext<'_>, state: &mut State) {
        self.ensure_body_mask(ctx.particles, state.len());
        self.coupled = self.coupled_until == Some(ctx.t);
        let mut contacts = 0;
        for k in 0..self.bodies.len() {
            contacts += self.particles_against(k, ctx.particles, state);
            contacts += self.triangles_against(k, ctx.particles, state);
            // The box's edges push triangles along their normals, which can leave
            // a triangle's edge across the box: the edge test comes last.
            contacts += self.box_edges_against(k, ctx.particles, state);
            contacts += self.edges_against(k, ctx.particles, state);
            self.colliders_against(k, ctx.particles, state, ctx.t);
        }
        for a in 0..self.bodies.len() {
            for b in a + 1..self.bodies.len() {
                self.bodies_against(a, b, ctx.particles, state);
            }
        }
        contacts += self.resolve_body_contacts(ctx.particles, state, ctx.h);
        if self.coupled {
            // Take back the separating speed the coupled springs gave in pushing the
            // starting penetrations out (once per step), split by inverse mass.
            for (i, k, depth) in std::mem::take(&mut self.coupled_depths) {
                let (i, body) = (i as usize, self.bodies[k as usize]);
                let b = body.particle;
                let (xb, q) = (state.x.get(b), state.q[b]);
                let (d, n_local) = body.shape.distance(q.inverse() * (state.x.get(i) - xb));
                let n = q * n_local;
                let arm = state.x.get(i) - d * n - xb;
                let rel = state.v.get(i) - state.v.get(b) - state.w.get(b).cross(arm);
                let vn = rel.dot(n);
                let (wp, wb) = (ctx.particles.inv_mass[i], ctx.particles.inv_mass[b]);
                if vn > 0.0 {
                    let cut = vn.min(coupled_push_speed(COUPLED_STIFFNESS, depth, ctx.h)) / (wp + wb);
                    state.v.set(i, state.v.get(i) - (wp * cut) * n);
                    state.v.set(b, state.v.get(b) + (wb * cut) * n);
                }
            }
        }
        self.contacts = contacts;
    }

    /// Bodies of this contact that overlap each other (by more than the position
    /// correction's slop), and bodies whose particles lie inside one of them
    /// (deeper than their radius), at the start.
    fn start_overlaps(
        &self,
        particles: &Particles,
        topology: &crate::model::Topology,
        state: &State,
    ) -> Vec<(String, String, f64)> {
        let name = |i: usize| topology.body_of(i).map_or_else(|| format!("particle {i}"), |b| b.name.clone());
        let mut out: Vec<(String, String, f64)> = Vec::new();
        let mut note = |a: String, b: String, depth: f64| match out.iter_mut().find(|e| e.0 == a && e.1 == b) {
            Some(e) => e.2 = e.2.max(depth),
            None => out.push((a, b, depth)),
        };
        let local = |body: &Rigid, p: DVec3| state.q[body.particle].inverse() * (p - state.x.get(body.particle));
        for (k, a) in self.bodies.iter().enumerate() {
            for b in &self.bodies[k + 1..] {
                let pose = |body: &Rigid| (body.shape, state.x.get(body.particle), state.q[body.particle]);
                let depth = shapes_overlap(pose(a), pose(b), 0.0).map_or(0.0, |o| o.depth);
                // Within the slop the contact leaves anyway (round-off of a stack
                // set exactly face to face) is no overlap worth a warning.
                let slop = POSITION_SLOP * a.shape.smallest_half_extent().min(b.shape.smallest_half_extent());
                if depth > slop {
                    note(name(a.particle), name(b.particle), depth);
                }
            }
            let Some(only) = &self.only else { continue };
            for i in (0..state.len()).filter(|&i| only[i]) {
                // The overlap of the particle's own extent, not of the contact
                // distance (a gap the contact keeps).
                let depth = particles.radius[i] - a.shape.distance(local(a, state.x.get(i))).0;
                if depth > 0.0 {
                    note(name(i), name(a.particle), depth);
                }
            }
        }
        out
    }

    fn save_state(&self, out: &mut StateWriter) {
        out.usize(self.warm.len());
        for &(key, local, jn, jt) in &self.warm {
            out.u64(key);
            out.vec3(local);
            out.f64(jn);
            out.vec3(jt);
        }
    }

    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), RestoreError> {
        let mut r = StateReader::new(bytes);
        let count = r.usize("rigid contacts' warm start", bytes.len())?;
        let mut warm = Vec::with_capacity(count);
        for _ in 0..count {
            let what = "a rigid contact's warm start";
            warm.push((r.u64(what)?, r.vec3(what)?, r.f64(what)?, r.vec3(what)?));
        }
        r.finish()?;
        if !warm.is_sorted_by_key(|w| w.0) {
            return Err(RestoreError::Invalid("rigid contacts' warm start (not in key order)"));
        }
        self.warm = warm;
        Ok(())
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![("contacts", self.contacts as f64)]
    }

    fn parameters(&self) -> Vec<Parameter> {
        self.surface.parameters()
    }

    fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        self.surface.set_parameter(key, value)
    }
}
