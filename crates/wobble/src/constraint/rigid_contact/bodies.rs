//! Rigid bodies against the scene's colliders and against each other.
//!
//! # Contact points
//! A ball is tested by its centre with its radius as margin (exact against every
//! collider). A box meets a plane by its eight corners, a ball collider by the
//! ball's centre against the box (so a box lying on a large ball rests on its face,
//! not on its corners), a box collider by the separating-axis test of the two boxes
//! (below), and a mesh collider by its corners against the mesh and by the mesh's
//! vertices and edges near it against the box (an edge inside the box is clipped
//! to the side slabs of the face nearest its deepest point, so a ridge along a face
//! holds it at two points, along a line).
//!
//! Each pair of bodies whose bounding spheres come within the speculative margin
//! is tested exactly: two balls by their centres' distance, a ball and a box by the
//! ball's centre against the box, two boxes by their fifteen separating axes with a
//! clipped contact manifold ([`crate::contact::box_box`]: up to eight points where
//! faces meet, one where edges cross, as two ridges crossing mid-span do with no
//! corner of either inside the other).
//!
//! Features closer than the speculative margin ([`SPECULATIVE`] × the smaller
//! body's smallest half-extent) count as contacts too, with a negative depth (the
//! gap). Each contact is a point, a unit normal n towards the body (side a) and a
//! depth, the point fixed in both sides' frames so that it moves with them.
//!
//! # Resolution
//! All these contacts of a projection are resolved together, after the
//! particle contacts:
//! 1. *Position* (nonlinear Gauss–Seidel, [`POSITION_PASSES`] passes): each
//!    contact's separation s is measured at the sides' current poses; where the
//!    overlap −s exceeds the slop ([`POSITION_SLOP`] × the smaller body's smallest
//!    half-extent), a correction λ = (−s − slop) / k along n, with k = w_a + w_b +
//!    Σ (I⁻¹ (r × n)) · (r × n) the contact's inverse effective mass, moves each
//!    side's centre by w λ n and turns it by I⁻¹ (r × λ n), in opposite senses.
//!    Turning as well as moving takes a tilted box's overlap out where it is, and
//!    the slop keeps a resting contact touching from step to step (without it,
//!    stacks rock as each step lifts them clear and they land again). The mass
//!    centre of every pair stays put; velocities are not changed.
//! 2. *Velocity* (sequential impulses, [`RIGID_PASSES`] passes over all contacts):
//!    each contact accumulates a non-negative normal impulse towards its target
//!    normal speed and a friction impulse inside the Coulomb disc μ J of its
//!    accumulated normal impulse. A contact a gap g ≥ 0 ahead whose approach speed
//!    before any impulse, −u_n, would close it within the step (−u_n h > g)
//!    targets −ε u_n − (1 − ε) g / h: a full bounce for restitution ε = 1 (a step
//!    early, from the gap), an arrival exactly touching for ε = 0; any other
//!    targets −g / h (it may close the gap within the step, no more). Impacts
//!    slower than [`RESTITUTION_THRESHOLD`] take ε = 0, so resting bodies rest. An accumulated impulse may shrink again
//!    (never below zero), so a point pushed too hard early on is eased later, and a
//!    stack's contacts pass its weight down within the step.
//! 3. *Warm start*: a contact found again in the next projection (the same sides
//!    and features, its point within 2 % of the smaller body's smallest half-extent
//!    in side a's frame) starts from the impulses it ended with, so a resting stack
//!    begins each step near its solution.
//!
//! Every impulse is given to one side and taken from the other at the same point,
//! so linear and angular momentum change only by the position correction's moves
//! (Σ Δxᵢ × mᵢ vᵢ + Σ ΔIᵢ ωᵢ about the origin; linear momentum not at all). Four
//! boxes stacked off-centre on the floor settle and stay, level and at rest
//! (`tests/box_box.rs`).

use glam::{DMat3, DQuat, DVec3};

use super::{
    ColliderScratch, POSITION_PASSES, POSITION_SLOP, RESTITUTION_THRESHOLD, RIGID_PASSES, RigidContact, SPECULATIVE,
    apply_body,
};
use crate::constraint::collider::{Collider, Shape, Surface};
use crate::contact::box_box::{Cuboid, Feature, box_box_within};
use crate::model::{Particles, Rigid, RigidShape, State};

impl RigidContact {
    /// Gathers body `k`'s contacts with every collider, those within the
    /// speculative margin included, into `body_contacts` (see the module docs).
    pub(super) fn colliders_against(&mut self, k: usize, particles: &Particles, state: &mut State, t: f64) {
        let body = self.bodies[k];
        let b = body.particle;
        if particles.inv_mass[b] == 0.0 {
            return;
        }
        let spec = SPECULATIVE * body.shape.smallest_half_extent();
        let mut scratch = std::mem::take(&mut self.scratch);
        let (xb, q) = (state.x.get(b), state.q[b]);
        for (ci, c) in self.colliders.iter().enumerate() {
            collider_contacts(body.shape, xb, q, c, t, spec, &mut scratch);
            let u = c.motion.velocity(t);
            let key = contact_key(k, self.bodies.len() + ci, 0);
            for &(arm, n, depth) in &scratch.found {
                let mut contact = BodyContact::new(key, k, None, xb + arm, n, depth, c.surface);
                contact.u = u;
                contact.local_a = q.inverse() * arm;
                self.body_contacts.push(contact);
            }
        }
        self.scratch = scratch;
    }
}

impl RigidContact {
    /// Gathers the contacts of bodies `a` and `b`, those within the speculative
    /// margin included, into `body_contacts` (see the module docs).
    pub(super) fn bodies_against(&mut self, a: usize, b: usize, particles: &Particles, state: &mut State) {
        let (ba, bb) = (self.bodies[a], self.bodies[b]);
        let (pa, pb) = (ba.particle, bb.particle);
        let (wa, wb) = (particles.inv_mass[pa], particles.inv_mass[pb]);
        if wa == 0.0 && wb == 0.0 {
            return;
        }
        let spec = SPECULATIVE * ba.shape.smallest_half_extent().min(bb.shape.smallest_half_extent());
        let reach = ba.shape.bounding_radius() + bb.shape.bounding_radius() + spec;
        if (state.x.get(pa) - state.x.get(pb)).length_squared() > reach * reach {
            return;
        }
        let pose = |body: &Rigid| (body.shape, state.x.get(body.particle), state.q[body.particle]);
        let Some(overlap) = shapes_overlap(pose(&ba), pose(&bb), spec) else { return };
        let key = contact_key(a, b, overlap.feature);
        let (xa, qa, xb, qb) = (state.x.get(pa), state.q[pa], state.x.get(pb), state.q[pb]);
        for j in 0..overlap.count {
            let c = overlap.points[j];
            let mut contact = BodyContact::new(key, a, Some(b), c, overlap.normal, overlap.depths[j], self.surface);
            contact.local_a = qa.inverse() * (c - xa);
            contact.local_b = qb.inverse() * (c - xb);
            self.body_contacts.push(contact);
        }
    }

    /// Resolves the gathered contacts of the bodies with the colliders and with
    /// each other together, by sequential impulses over all of them
    /// ([`RIGID_PASSES`] passes): each contact accumulates a non-negative normal
    /// impulse towards its target normal speed and a friction impulse inside the
    /// Coulomb disc μ J of its accumulated normal impulse. A touching contact's
    /// target is −ε u_n for an approach speed u_n < 0 before any impulse (0
    /// otherwise); a speculative one, a gap g ahead, lets the two approach by at most
    /// g / h in the step. Because an accumulated impulse may shrink again (never
    /// below zero), a point pushed too hard early on is eased later, and no
    /// separating speed is left that the contacts did not need; a stack's contacts
    /// pass its weight down within the step. Each impulse is given to one side and
    /// taken from the other at the same point. Returns the number of contacts that
    /// overlapped when found.
    pub(super) fn resolve_body_contacts(&mut self, particles: &Particles, state: &mut State, h: f64) -> usize {
        let bodies = &self.bodies;
        let particle = |k: usize| bodies[k].particle;
        let mut contacts = std::mem::take(&mut self.body_contacts);
        for c in &mut contacts {
            c.w_a = particles.inv_mass[particle(c.a)];
            c.size = bodies[c.a].shape.smallest_half_extent();
            if let Some(b) = c.b {
                c.size = c.size.min(bodies[b].shape.smallest_half_extent());
                c.w_b = particles.inv_mass[particle(b)];
            }
        }
        // Position: nonlinear Gauss–Seidel over the overlapping contacts, each
        // moving and turning both sides at its point along its normal.
        for _ in 0..POSITION_PASSES {
            for c in &contacts {
                let (s, arm, arm_b) = c.separation(state, bodies);
                // Overlap beyond the slop is taken out.
                let s = s + POSITION_SLOP * c.size;
                if s >= 0.0 {
                    continue;
                }
                let pa = particle(c.a);
                let inv_a = particles.world_inv_inertia(pa, state.q[pa]);
                let turn = |inv: &DMat3, r: DVec3| (*inv * r.cross(c.n)).dot(r.cross(c.n));
                let mut k = c.w_a + turn(&inv_a, arm);
                let other = c.b.map(|b| {
                    let pb = particle(b);
                    let inv_b = particles.world_inv_inertia(pb, state.q[pb]);
                    k += c.w_b + turn(&inv_b, arm_b);
                    (pb, inv_b)
                });
                let p = (-s / k) * c.n;
                shift_body(state, pa, c.w_a, &inv_a, arm, p);
                if let Some((pb, inv_b)) = other {
                    shift_body(state, pb, c.w_b, &inv_b, arm_b, -p);
                }
            }
        }
        for c in &mut contacts {
            let pa = particle(c.a);
            let (s, arm, arm_b) = c.separation(state, bodies);
            (c.gap, c.arm, c.arm_b) = (s.max(0.0), arm, arm_b);
            c.inv_a = particles.world_inv_inertia(pa, state.q[pa]);
            if let Some(b) = c.b {
                let pb = particle(b);
                c.inv_b = particles.world_inv_inertia(pb, state.q[pb]);
            }
            let un = c.relative_velocity(state, bodies).dot(c.n);
            // Slow impacts are inelastic: a resting contact, approached each step
            // at the speed gravity gives in one step, would bounce forever.
            let e = if -un > RESTITUTION_THRESHOLD { c.surface.restitution } else { 0.0 };
            c.target = if -un * h > c.gap {
                // It closes within the step: a bounce of restitution ε from the
                // gap's far side (ε = 1) to arriving exactly touching (ε = 0).
                -e * un - (1.0 - e) * c.gap / h
            } else {
                -c.gap / h
            };
        }
        // Warm start: a contact that was there in the last projection begins with
        // the impulses it ended with (the friction part turned into the new
        // tangent plane), so a resting stack starts each step near its solution.
        for c in &mut contacts {
            // The last projection's contact of the same sides and features whose
            // point, in a's body frame, is nearest this one's (within 2 % of the
            // bodies' smallest half-extent).
            let local = state.q[particle(c.a)].inverse() * c.arm;
            let first = self.warm.partition_point(|w| w.0 < c.key);
            let near = self.warm[first..]
                .iter()
                .take_while(|w| w.0 == c.key)
                .map(|w| ((w.1 - local).length_squared(), w))
                .min_by(|x, y| x.0.total_cmp(&y.0));
            let Some((d2, &(_, _, jn, jt))) = near else { continue };
            if d2 > (0.02 * c.size) * (0.02 * c.size) {
                continue;
            }
            c.jn = jn;
            c.jt = jt - jt.dot(c.n) * c.n;
            let start = jn * c.n + c.jt;
            c.give(state, bodies, start, &mut self.collider_impulse);
        }
        for _ in 0..RIGID_PASSES {
            for c in &mut contacts {
                let un = c.relative_velocity(state, bodies).dot(c.n);
                let new = (c.jn + (c.target - un) / c.inverse_mass(c.n)).max(0.0);
                let dj = (new - c.jn) * c.n;
                c.jn = new;
                c.give(state, bodies, dj, &mut self.collider_impulse);
                // Friction: cancel the sliding velocity within the Coulomb disc.
                let rel = c.relative_velocity(state, bodies);
                let slip = rel - rel.dot(c.n) * c.n;
                let slip_len = slip.length();
                if slip_len > 0.0 {
                    let dir = slip / slip_len;
                    let mut acc = c.jt - (slip_len / c.inverse_mass(dir)) * dir;
                    let limit = c.surface.friction * c.jn;
                    if acc.length() > limit {
                        acc *= limit / acc.length();
                    }
                    let dt = acc - c.jt;
                    c.jt = acc;
                    c.give(state, bodies, dt, &mut self.collider_impulse);
                }
            }
        }
        let touching = contacts.iter().filter(|c| c.depth > 0.0).count();
        self.warm.clear();
        self.warm.extend(contacts.iter().map(|c| (c.key, state.q[particle(c.a)].inverse() * c.arm, c.jn, c.jt)));
        self.warm.sort_by_key(|w| w.0);
        contacts.clear();
        self.body_contacts = contacts;
        touching
    }
}

/// A body contact's identity from step to step, less its point: side a's body,
/// the other side (a body, or the bodies' count plus a collider's index) and the
/// features that meet.
fn contact_key(a: usize, other: usize, feature: u16) -> u64 {
    ((a as u64) << 40) | ((other as u64) << 16) | u64::from(feature)
}

/// A contact of a rigid body (side a) with a collider or another body (side b),
/// gathered in a projection and resolved with all the others.
#[derive(Clone, Copy, Debug)]
pub(super) struct BodyContact {
    /// Identity from step to step: the two sides and the features.
    key: u64,
    /// The smaller side's smallest half-extent, m (a collider's: side a's).
    size: f64,
    /// Body index of side a, and of side b (`None`: a collider).
    a: usize,
    b: Option<usize>,
    /// The collider's velocity, m/s (unused for a body).
    u: DVec3,
    /// The contact point when found, m, and where it sits in each body's frame
    /// (it moves with both).
    point: DVec3,
    local_a: DVec3,
    local_b: DVec3,
    /// Depth when found, m (negative: a gap within the speculative margin).
    depth: f64,
    /// Lever arms from a's centre and b's to the contact point, m.
    arm: DVec3,
    arm_b: DVec3,
    /// Unit normal from b towards a.
    n: DVec3,
    /// Gap along n after the position pass, m (0 where the two touch or overlap).
    gap: f64,
    surface: Surface,
    /// Inverse masses and world inverse inertias of the sides.
    w_a: f64,
    w_b: f64,
    inv_a: DMat3,
    inv_b: DMat3,
    /// Target normal speed, m/s, and the accumulated normal (N s) and friction
    /// (N s) impulses.
    target: f64,
    jn: f64,
    jt: DVec3,
}

impl BodyContact {
    fn new(key: u64, a: usize, b: Option<usize>, point: DVec3, n: DVec3, depth: f64, surface: Surface) -> Self {
        BodyContact {
            key,
            size: 0.0,
            a,
            b,
            u: DVec3::ZERO,
            point,
            local_a: DVec3::ZERO,
            local_b: DVec3::ZERO,
            depth,
            arm: DVec3::ZERO,
            arm_b: DVec3::ZERO,
            n,
            gap: 0.0,
            surface,
            w_a: 0.0,
            w_b: 0.0,
            inv_a: DMat3::ZERO,
            inv_b: DMat3::ZERO,
            target: 0.0,
            jn: 0.0,
            jt: DVec3::ZERO,
        }
    }

    /// The separation now (m, negative: overlap) of the points that were at
    /// depth `depth` when found, as the two sides have moved and turned since, and
    /// the lever arms from each side's centre to a's point.
    fn separation(&self, state: &State, bodies: &[Rigid]) -> (f64, DVec3, DVec3) {
        let pa = bodies[self.a].particle;
        let (xa, arm) = (state.x.get(pa), state.q[pa] * self.local_a);
        let on_b = match self.b {
            Some(b) => {
                let pb = bodies[b].particle;
                state.x.get(pb) + state.q[pb] * self.local_b
            }
            None => self.point,
        };
        let xb = self.b.map_or(self.point, |b| state.x.get(bodies[b].particle));
        (self.n.dot(xa + arm - on_b) - self.depth, arm, xa + arm - xb)
    }

    /// Velocity of a's contact point relative to b's (or to the collider).
    fn relative_velocity(&self, state: &State, bodies: &[Rigid]) -> DVec3 {
        let pa = bodies[self.a].particle;
        let va = state.v.get(pa) + state.w.get(pa).cross(self.arm);
        match self.b {
            Some(b) => {
                let pb = bodies[b].particle;
                va - state.v.get(pb) - state.w.get(pb).cross(self.arm_b)
            }
            None => va - self.u,
        }
    }

    /// Inverse effective mass of the contact along unit `d`.
    fn inverse_mass(&self, d: DVec3) -> f64 {
        let turn = |inv: &DMat3, arm: DVec3| d.dot((*inv * arm.cross(d)).cross(arm));
        let mut k = self.w_a + turn(&self.inv_a, self.arm);
        if self.b.is_some() {
            k += self.w_b + turn(&self.inv_b, self.arm_b);
        }
        k
    }

    /// Gives impulse `p` to a at the contact point and −p to b (or, against a
    /// collider, adds it to a's collider impulse).
    fn give(&self, state: &mut State, bodies: &[Rigid], p: DVec3, collider_impulse: &mut [DVec3]) {
        apply_body(state, bodies[self.a].particle, self.w_a, &self.inv_a, self.arm, p);
        match self.b {
            Some(b) => apply_body(state, bodies[b].particle, self.w_b, &self.inv_b, self.arm_b, -p),
            None => collider_impulse[self.a] += p,
        }
    }
}

/// Where two rigid shapes overlap: the unit normal from the first towards the
/// second's outside (from b to a), the overlap along it, and contact points.
pub(super) struct Overlap {
    normal: DVec3,
    pub(super) depth: f64,
    points: [DVec3; 8],
    depths: [f64; 8],
    count: usize,
    /// Which features meet (a box pair's [`Feature`] as a number, 0 otherwise): part
    /// of the contacts' identity from step to step.
    feature: u16,
}

impl Overlap {
    fn single(normal: DVec3, depth: f64, point: DVec3) -> Self {
        let (mut points, mut depths) = ([DVec3::ZERO; 8], [0.0; 8]);
        points[0] = point;
        depths[0] = depth;
        Overlap { normal, depth, points, depths, count: 1, feature: 0 }
    }
}

/// The contacts of a body of `shape` at (`xb`, `q`) with collider `c` at time `t`,
/// written into `scratch.found` as (lever arm of the contact point, unit normal
/// from the collider, depth).
/// A box meets a box collider by their separating axes and a ball collider by
/// the ball's centre against the box (both exact), a mesh collider by its corners
/// against the mesh and by the mesh's vertices and edges near it against the box;
/// otherwise the body's support points are tested (a ball's centre with its
/// radius as margin, exact for every collider; a box's corners, exact against a
/// plane).
fn collider_contacts(
    shape: RigidShape,
    xb: DVec3,
    q: DQuat,
    c: &Collider,
    t: f64,
    spec: f64,
    scratch: &mut ColliderScratch,
) {
    let offset = c.motion.offset(t);
    let found = &mut scratch.found;
    found.clear();
    match (shape, &c.shape) {
        (RigidShape::Box { half }, Shape::Box { center, half: other, rotation }) => {
            let Some(m) = box_box_within(&cuboid(half, xb, q), &cuboid(*other, *center + offset, *rotation), spec)
            else {
                return;
            };
            found.extend(m.contacts().map(|(p, depth)| (p - xb, m.normal, depth)));
            return;
        }
        (RigidShape::Box { .. }, Shape::Sphere { center, radius }) => {
            let centre = *center + offset;
            let (d, n_local) = shape.distance(q.inverse() * (centre - xb));
            let depth = radius - d;
            if depth <= -spec {
                return;
            }
            // The box's surface point nearest the ball's centre; the normal points
            // from the ball into the box.
            let n = -(q * n_local);
            found.push((centre + d * n - xb, n, depth));
            return;
        }
        _ => {}
    }
    let mut local = [DVec3::ZERO; 8];
    let (count, margin) = shape.support_points(&mut local);
    for p in &local[..count] {
        let arm = q * *p;
        let (dist, n) = c.distance_within(xb + arm, t, margin + spec);
        let depth = margin - dist;
        if depth > -spec {
            found.push((arm - margin * n, n, depth));
        }
    }
    if let (RigidShape::Box { half }, Shape::Mesh(mesh)) = (shape, &c.shape) {
        // Placed relative to the mesh's rest placement: lever arms are differences,
        // the same in the world.
        mesh_features_against_box(mesh, half, xb - offset, q, spec, scratch);
    }
}

/// A mesh collider's vertices and edges near a box body (centre `xb` relative to
/// the mesh's rest placement, orientation `q`, half-extents `half`) that lie
/// inside it, or within half an open shell's thickness of it, appended to
/// `scratch.found` as contacts. A vertex at signed distance d from the box
/// (outward normal n of the nearest box point) is a contact of depth m − d, m
/// the shell's half-thickness (0 for a closed mesh). An edge whose point deepest
/// in the box ([`RigidShape::deepest_on_segment`]) lies strictly between its ends
/// and inside the box is clipped to the side slabs of the face nearest that point,
/// and its two ends there are contacts at their depth below the face (at most the
/// deepest point's); outside the box (an open shell's margin) the deepest point
/// alone is. The normal −n points from the mesh into the box and the lever arm
/// reaches the box's surface. A mesh ridge or tip pressed into a box's face so
/// holds it, where no corner of the box meets the mesh.
fn mesh_features_against_box(
    mesh: &crate::constraint::trimesh::TriMesh,
    half: DVec3,
    xb: DVec3,
    q: DQuat,
    spec: f64,
    scratch: &mut ColliderScratch,
) {
    let box_shape = RigidShape::Box { half };
    let margin = if mesh.closed { 0.0 } else { 0.5 * mesh.thickness };
    let around = DVec3::splat(half.length() + margin + spec);
    mesh.triangles_near(&crate::contact::broad::Aabb { lo: xb - around, hi: xb + around }, |k| {
        let tri = mesh.triangles[k];
        scratch.vertices.extend(tri);
        for (a, b) in [(tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])] {
            scratch.edges.push([a.min(b), a.max(b)]);
        }
    });
    let inverse = q.inverse();
    let local = |p: DVec3| inverse * (p - xb);
    let mut contact = |p: DVec3| {
        let (d, n_local) = box_shape.distance(local(p));
        let depth = margin - d;
        if depth > -spec {
            let n = q * n_local;
            scratch.found.push((p - d * n - xb, -n, depth));
        }
    };
    scratch.vertices.sort_unstable();
    scratch.vertices.dedup();
    for &v in &scratch.vertices {
        contact(mesh.vertices[v as usize]);
    }
    scratch.edges.sort_unstable();
    scratch.edges.dedup();
    for &[i, j] in &scratch.edges {
        let (a, b) = (local(mesh.vertices[i as usize]), local(mesh.vertices[j as usize]));
        let (t, d) = box_shape.deepest_on_segment(a, b);
        if t <= 1e-9 || t >= 1.0 - 1e-9 || d >= margin + spec {
            continue;
        }
        let deepest = margin - d;
        let (_, n_local) = box_shape.distance(a + t * (b - a));
        if d >= 0.0 {
            // Outside, within an open shell's half-thickness: the deepest point.
            let p = a + t * (b - a) - d * n_local;
            scratch.found.push((q * p, -(q * n_local), deepest));
            continue;
        }
        // Inside: the nearest face (±axis k) is the reference. The edge is clipped
        // to that face's side slabs, and its two ends there are contacts at their
        // depth below the face (at most the deepest point's), so an edge lying
        // along a face holds it along a line, not at one point.
        let k = n_local.abs().max_position();
        let side = n_local[k].signum();
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for u in [(k + 1) % 3, (k + 2) % 3] {
            let (start, step) = (a[u], b[u] - a[u]);
            if step.abs() < 1e-300 {
                continue;
            }
            let (t1, t2) = ((-half[u] - start) / step, (half[u] - start) / step);
            lo = lo.max(t1.min(t2));
            hi = hi.min(t1.max(t2));
        }
        for tau in [lo, hi] {
            let mut e = a + tau * (b - a);
            let depth = (margin - (side * e[k] - half[k])).min(deepest);
            if lo <= hi && depth > -spec {
                e[k] = side * half[k];
                scratch.found.push((q * e, -(q * n_local), depth));
            }
        }
    }
    scratch.vertices.clear();
    scratch.edges.clear();
}

/// A box body placed in the world, for the separating-axis test.
fn cuboid(half: DVec3, x: DVec3, q: DQuat) -> Cuboid {
    Cuboid { centre: x, axes: DMat3::from_quat(q), half }
}

/// The overlap of shape `a` at (x_a, q_a) with shape `b` at (x_b, q_b), exact for
/// every pair: two balls by their centres' distance, a ball and a box by the
/// ball's centre against the box, two boxes by their separating axes
/// ([`box_box_within`]). Shapes up to `spec` (m) apart count, with negative
/// depths; `None` when they are farther apart.
pub(super) fn shapes_overlap(
    a: (RigidShape, DVec3, DQuat),
    b: (RigidShape, DVec3, DQuat),
    spec: f64,
) -> Option<Overlap> {
    match (a.0, b.0) {
        (RigidShape::Sphere { radius: ra }, RigidShape::Sphere { radius: rb }) => {
            let d = a.1 - b.1;
            let len = d.length();
            let depth = ra + rb - len;
            let n = if len > 0.0 { d / len } else { DVec3::Y };
            (depth > -spec).then(|| Overlap::single(n, depth, b.1 + (rb - 0.5 * depth) * n))
        }
        (RigidShape::Sphere { radius }, RigidShape::Box { .. }) => {
            let (d, n_local) = b.0.distance(b.2.inverse() * (a.1 - b.1));
            let n = b.2 * n_local;
            // The contact point: the box's surface point nearest the ball's centre.
            (radius - d > -spec).then(|| Overlap::single(n, radius - d, a.1 - d * n))
        }
        (RigidShape::Box { .. }, RigidShape::Sphere { .. }) => {
            shapes_overlap(b, a, spec).map(|o| Overlap { normal: -o.normal, ..o })
        }
        (RigidShape::Box { half: ha }, RigidShape::Box { half: hb }) => {
            let m = box_box_within(&cuboid(ha, a.1, a.2), &cuboid(hb, b.1, b.2), spec)?;
            let feature = match m.feature {
                Feature::FaceOfA(k) => 1 + k,
                Feature::FaceOfB(k) => 4 + k,
                Feature::Edges(i, j) => 7 + 3 * i + j,
            } as u16;
            Some(Overlap {
                normal: m.normal,
                depth: m.depth,
                points: m.points,
                depths: m.depths,
                count: m.count,
                feature,
            })
        }
    }
}

/// Moves body particle `b` (inverse mass `w`, world inverse inertia `inv_i`) as
/// an impulse `p` (N s) at lever arm `arm` would over unit time: its centre by
/// w p, its orientation by the small turn I⁻¹ (arm × p).
fn shift_body(state: &mut State, b: usize, w: f64, inv_i: &DMat3, arm: DVec3, p: DVec3) {
    state.x.set(b, state.x.get(b) + w * p);
    let turn = *inv_i * arm.cross(p);
    let q = state.q[b];
    state.q[b] = (q + DQuat::from_xyzw(turn.x, turn.y, turn.z, 0.0) * q * 0.5).normalize();
}
