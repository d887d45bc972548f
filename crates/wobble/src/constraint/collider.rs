//! Colliders: half-spaces (floor, walls, ceiling), spheres, oriented boxes and
//! triangle meshes ([`super::trimesh`]), static or moving, with restitution and
//! Coulomb friction (physics notes §9).
//!
//! A free particle of radius r that ends a step inside the collider is moved back
//! to its surface along the normal n. If it was approaching (relative normal
//! velocity v_n < 0), the normal velocity is reflected and scaled by the restitution
//! ε, and the tangential velocity v_t is reduced by μ times the normal velocity
//! change, (1 + ε)|v_n|, down to zero (Coulomb friction as an impulse). Velocities are
//! taken relative to the collider's own velocity, so moving colliders push.
//!
//! Inside an implicit solve (see [`super`]'s "Constraints inside an implicit
//! solve") a particle that starts the step within its radius of the surface is also
//! held by a spring of stiffness k = κ m / h² ([`super::coupled_stiffness`]):
//! energy ½ k δ² in the penetration δ = r − d, force k δ n, Jacobian
//! −k n nᵀ + k δ ∂n/∂x. The second part is a sphere's curvature
//! (I − n nᵀ)/|x − c|, left out when a definite matrix is asked for; planes have
//! none, and for boxes and meshes it is left out. So a stiff body resting on the
//! floor is carried by the floor within the solve, not only by the projection's
//! reset of its lowest layer (which at h² k / m ≫ 1 let a lattice sag under its own
//! weight). Friction is a damper −c (v − u)_t on the tangential velocity relative
//! to the collider, c from [`super::coupled_friction`] (∂f/∂v = −c (I − n nᵀ)). The
//! projection after that step leaves those particles where the solve put them up
//! to [`super::COUPLED_SLOP`] r inside (at rest they are inside by the load's
//! F h² / (κ m), which the next solve's spring carries).

use std::sync::Arc;

use glam::{DMat3, DQuat, DVec3};

use super::{
    COUPLED_SLOP, COUPLED_STIFFNESS, Constraint, ConstraintContext, Motion, TriMesh, coupled_friction,
    coupled_push_speed, coupled_stiffness, coupled_touches, outer,
};
use crate::force::{Loads, Parameter, ParameterError};
use crate::model::RigidShape;
use crate::model::State;
use crate::par::RowsMut;
use crate::solve::JacobianSink;

/// Default coefficient of restitution.
pub const DEFAULT_RESTITUTION: f64 = 0.5;
/// Default coefficient of friction.
pub const DEFAULT_FRICTION: f64 = 0.3;

/// Collider geometry at t = 0.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// Half-space {x : (x − point) · normal ≥ 0} is free; `normal` is unit.
    Plane {
        /// A point on the plane, m.
        point: DVec3,
        /// Unit normal pointing into the free side.
        normal: DVec3,
    },
    /// Ball; particles are kept outside it.
    Sphere {
        /// Centre, m.
        center: DVec3,
        /// Radius, m (> 0).
        radius: f64,
    },
    /// Solid oriented box; particles are kept outside it.
    Box {
        /// Centre, m.
        center: DVec3,
        /// Half the edge lengths along the box's own axes, m (each > 0).
        half: DVec3,
        /// Orientation (box frame to world).
        rotation: DQuat,
    },
    /// Triangle mesh: a closed mesh keeps particles outside, an open one is a
    /// two-sided shell of its thickness.
    Mesh(Arc<TriMesh>),
}

/// The surface of a box or mesh collider as placed at t = 0: vertices (m) and
/// outward-wound triangles, for drawing (planes and spheres give none).
#[must_use]
pub fn surface_of(shape: &Shape) -> (Vec<DVec3>, Vec<[u32; 3]>) {
    match shape {
        Shape::Box { center, half, rotation } => {
            let corners = (0..8)
                .map(|k| {
                    let s = DVec3::new(
                        if k & 1 == 0 { -1.0 } else { 1.0 },
                        if k & 2 == 0 { -1.0 } else { 1.0 },
                        if k & 4 == 0 { -1.0 } else { 1.0 },
                    );
                    *center + *rotation * (s * *half)
                })
                .collect();
            // Two triangles per face, wound outward (corner k has bit 0 = +x, 1 = +y, 2 = +z).
            let faces = [[0, 4, 6, 2], [1, 3, 7, 5], [0, 1, 5, 4], [2, 6, 7, 3], [0, 2, 3, 1], [4, 5, 7, 6]];
            let triangles = faces.iter().flat_map(|f| [[f[0], f[1], f[2]], [f[0], f[2], f[3]]]).collect();
            (corners, triangles)
        }
        Shape::Mesh(m) => (m.vertices.clone(), m.triangles.clone()),
        Shape::Plane { .. } | Shape::Sphere { .. } => (Vec::new(), Vec::new()),
    }
}

/// A particle inside its radius of a collider, as a coupled contact spring.
struct Touch {
    /// The particle.
    i: usize,
    /// Outward normal of the surface.
    n: DVec3,
    /// Penetration r − d, m (> 0).
    depth: f64,
    /// Stiffness, N/m.
    k: f64,
    /// Curvature of the distance across the normal, 1/m (a sphere's 1/|x − c|, else 0).
    curvature: f64,
    /// Tangential velocity relative to the collider, m/s.
    slip: DVec3,
    /// Friction damping on it, N s/m.
    c: f64,
}

/// Contact response coefficients.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Surface {
    /// Restitution ε in [0, 1]: the fraction of normal speed kept after a bounce.
    pub restitution: f64,
    /// Coulomb friction μ ≥ 0.
    pub friction: f64,
}

impl Default for Surface {
    fn default() -> Self {
        Self { restitution: DEFAULT_RESTITUTION, friction: DEFAULT_FRICTION }
    }
}

impl Surface {
    /// `restitution` and `friction` as live parameters.
    #[must_use]
    pub fn parameters(&self) -> Vec<Parameter> {
        vec![
            Parameter { key: "restitution".into(), value: self.restitution, unit: "", min: 0.0, max: 1.0 },
            Parameter { key: "friction".into(), value: self.friction, unit: "", min: 0.0, max: 2.0 },
        ]
    }

    /// Sets `restitution` (in [0, 1]) or `friction` (finite, ≥ 0).
    pub fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        let bad = |why: &str| ParameterError::Invalid { key: key.into(), value, why: why.into() };
        match key {
            "restitution" if (0.0..=1.0).contains(&value) => self.restitution = value,
            "restitution" => return Err(bad("must lie in [0, 1]")),
            "friction" if value.is_finite() && value >= 0.0 => self.friction = value,
            "friction" => return Err(bad("must be finite and ≥ 0")),
            _ => return Err(ParameterError::Unknown { key: key.into(), known: "restitution, friction".into() }),
        }
        Ok(())
    }
}

/// A static or moving collider.
#[derive(Clone, Debug, PartialEq)]
pub struct Collider {
    /// Name for reports and parameter keys.
    pub name: String,
    /// Geometry at t = 0.
    pub shape: Shape,
    /// Rigid translation over time.
    pub motion: Motion,
    /// Restitution and friction.
    pub surface: Surface,
    /// Particles it acts on (`None`: all).
    pub only: Option<Vec<bool>>,
    /// Number of contacts resolved in the last projection.
    pub contacts: usize,
    /// End time of the last step whose implicit solve held this collider's
    /// contacts as springs: its projections leave those particles to them. Used only within that step (no part of a checkpoint).
    coupled_until: Option<f64>,
    /// The particles the last implicit solve held, with their starting penetration.
    coupled_depths: Vec<(u32, f64)>,
    /// Scratch: per particle, whether the solve of the step being projected held it.
    held: Vec<bool>,
}

impl Collider {
    /// A static collider acting on every particle.
    #[must_use]
    pub fn new(name: &str, shape: Shape, surface: Surface) -> Self {
        Self {
            name: name.to_owned(),
            shape,
            motion: Motion::Static,
            surface,
            only: None,
            contacts: 0,
            coupled_until: None,
            coupled_depths: Vec::new(),
            held: Vec::new(),
        }
    }

    /// Six inward-facing planes bounding the box [min, max]: floor, ceiling and four
    /// walls.
    #[must_use]
    pub fn room(min: DVec3, max: DVec3, surface: Surface) -> Vec<Collider> {
        let planes = [
            ("floor", min, DVec3::Y),
            ("ceiling", max, -DVec3::Y),
            ("wall-x-min", min, DVec3::X),
            ("wall-x-max", max, -DVec3::X),
            ("wall-z-min", min, DVec3::Z),
            ("wall-z-max", max, -DVec3::Z),
        ];
        planes
            .into_iter()
            .map(|(name, point, normal)| Collider::new(name, Shape::Plane { point, normal }, surface))
            .collect()
    }

    /// Signed distance of a point from the surface at time `t` (positive outside)
    /// and the outward normal there.
    #[must_use]
    pub fn distance(&self, p: DVec3, t: f64) -> (f64, DVec3) {
        self.distance_within(p, t, 0.0)
    }

    /// As [`Collider::distance`], for a caller that only cares within `reach` (m)
    /// of the surface: a mesh may then answer +∞ for points farther away.
    #[must_use]
    pub fn distance_within(&self, p: DVec3, t: f64, reach: f64) -> (f64, DVec3) {
        self.shape_distance(p - self.motion.offset(t), reach)
    }

    /// As [`Collider::distance_within`] for a point `p` given relative to the
    /// collider's rest placement (the point less the motion's offset).
    fn shape_distance(&self, p: DVec3, reach: f64) -> (f64, DVec3) {
        match &self.shape {
            Shape::Plane { point, normal } => ((p - *point).dot(*normal), *normal),
            Shape::Sphere { center, radius } => {
                let rel = p - *center;
                let len = rel.length();
                let n = if len > 0.0 { rel / len } else { DVec3::Y };
                (len - radius, n)
            }
            Shape::Box { center, half, rotation } => {
                let local = rotation.inverse() * (p - *center);
                let (dist, n) = RigidShape::Box { half: *half }.distance(local);
                (dist, *rotation * n)
            }
            Shape::Mesh(mesh) => mesh.distance(p, reach.max(1e-9)).unwrap_or((f64::INFINITY, DVec3::Y)),
        }
    }

    /// Calls `each` for every particle within its radius of the surface at `state`
    /// (time `ctx.t`): the coupled springs of a step of `ctx.h` (see the module
    /// docs).
    fn coupled_springs(&self, ctx: &ConstraintContext<'_>, state: &State, mut each: impl FnMut(Touch)) {
        let offset = self.motion.offset(ctx.t);
        let u = self.motion.velocity(ctx.t);
        for i in 0..state.len() {
            let w = ctx.particles.inv_mass[i];
            if w == 0.0 || self.only.as_ref().is_some_and(|o| !o[i]) {
                continue;
            }
            let x = state.x.get(i);
            let radius = ctx.particles.radius[i];
            let (dist, n) = self.shape_distance(x - offset, radius);
            let depth = radius - dist;
            if !coupled_touches(depth, radius.max(x.abs().max_element())) {
                continue;
            }
            let depth = depth.max(0.0);
            let curvature = match &self.shape {
                Shape::Sphere { center, .. } => 1.0 / (x - offset - *center).length(),
                _ => 0.0,
            };
            let k = coupled_stiffness(COUPLED_STIFFNESS, w, ctx.h);
            let rel = state.v.get(i) - u;
            let slip = rel - rel.dot(n) * n;
            let c = coupled_friction(COUPLED_STIFFNESS, w, ctx.h, self.surface.friction, k * depth, slip.length());
            each(Touch { i, n, depth, k, curvature, slip, c });
        }
    }

    /// Pushes every particle it applies to out to its radius from the surface
    /// given by `distance` (signed distance and outward normal of a point, within
    /// a reach), with restitution and Coulomb friction on the velocity relative
    /// to the collider; returns the number of contacts. `plane`: the surface is the
    /// plane through this point with this normal (`distance` its signed distance),
    /// so a block of particles none of which touches it is skipped after one
    /// vectorised pass.
    fn resolve(
        &self,
        ctx: &ConstraintContext<'_>,
        state: &mut State,
        plane: Option<(DVec3, DVec3)>,
        distance: impl Fn(DVec3, f64) -> (f64, DVec3) + Sync,
    ) -> usize {
        let u = self.motion.velocity(ctx.t);
        let Surface { restitution, friction } = self.surface;
        let held = if self.coupled_until == Some(ctx.t) { Some(&self.held) } else { None };
        // Each particle on its own: runs of particles in parallel.
        let run = |mut x: RowsMut<'_>, mut v: RowsMut<'_>| {
            if let Some((point, normal)) = plane {
                // The depth test of the loop below, operation for operation
                // (a NaN depth counts as a contact there).
                let [px, py, pz] = x.components();
                let radius = &ctx.particles.radius[x.range()];
                let mut any = false;
                for k in 0..px.len() {
                    let dist =
                        (px[k] - point.x) * normal.x + (py[k] - point.y) * normal.y + (pz[k] - point.z) * normal.z;
                    let depth = radius[k] - dist;
                    any |= depth > 0.0 || depth.is_nan();
                }
                if !any {
                    return 0;
                }
            }
            let mut contacts = 0;
            for i in x.range() {
                if ctx.particles.inv_mass[i] == 0.0 || self.only.as_ref().is_some_and(|o| !o[i]) {
                    continue;
                }
                let p = x.get(i);
                let radius = ctx.particles.radius[i];
                let (dist, n) = distance(p, radius);
                let depth = radius - dist;
                if depth <= 0.0 {
                    continue;
                }
                contacts += 1;
                // A particle the solve held as a spring keeps its penetration up to
                // the slop: the spring carries the load with it in the next solve.
                let correct = if held.is_some_and(|h| h[i]) { depth - COUPLED_SLOP * radius } else { depth };
                if correct > 0.0 {
                    x.set(i, p + correct * n);
                }
                let rel = v.get(i) - u;
                let vn = rel.dot(n);
                if vn >= 0.0 {
                    continue;
                }
                let vt = rel - vn * n;
                let dvn = (1.0 + restitution) * -vn;
                let vt_len = vt.length();
                let vt_new = if vt_len > 0.0 { vt * (1.0 - friction * dvn / vt_len).max(0.0) } else { vt };
                v.set(i, u + vt_new - restitution * vn * n);
            }
            contacts
        };
        let contacts = std::sync::atomic::AtomicUsize::new(0);
        crate::par::for_rows_pair(&mut state.x, &mut state.v, |x, v| {
            contacts.fetch_add(run(x, v), std::sync::atomic::Ordering::Relaxed);
        });
        contacts.into_inner()
    }
}

impl Constraint for Collider {
    fn name(&self) -> &str {
        &self.name
    }

    fn add_coupled_forces(&mut self, ctx: &ConstraintContext<'_>, state: &State, out: &mut Loads) {
        self.coupled_until = Some(ctx.t + ctx.h);
        let mut depths = std::mem::take(&mut self.coupled_depths);
        depths.clear();
        self.coupled_springs(ctx, state, |t| {
            let f = (t.k * t.depth) * t.n - t.c * t.slip;
            out.f.set(t.i, out.f.get(t.i) + f);
            depths.push((t.i as u32, t.depth));
        });
        self.coupled_depths = depths;
    }

    fn add_coupled_jacobian(&mut self, ctx: &ConstraintContext<'_>, state: &State, sink: &mut dyn JacobianSink) {
        let definite = sink.definite();
        self.coupled_springs(ctx, state, |t| {
            let nn = outer(t.n);
            let mut dfdx = -t.k * nn;
            if !definite && t.curvature > 0.0 {
                dfdx += (t.k * t.depth * t.curvature) * (DMat3::IDENTITY - nn);
            }
            sink.add_dfdx(t.i, t.i, dfdx);
            sink.add_dfdv(t.i, t.i, -t.c * (DMat3::IDENTITY - nn));
        });
    }

    fn project(&mut self, ctx: &ConstraintContext<'_>, state: &mut State) {
        // The shape is matched once per pass (planes, the commonest, get a loop of
        // their own), the motion evaluated once.
        let offset = self.motion.offset(ctx.t);
        let coupled = self.coupled_until == Some(ctx.t);
        if coupled {
            self.held.clear();
            self.held.resize(state.len(), false);
            for &(i, _) in &self.coupled_depths {
                self.held[i as usize] = true;
            }
        }
        self.contacts = match self.shape {
            Shape::Plane { point, normal } => {
                let point = point + offset;
                self.resolve(ctx, state, Some((point, normal)), |p, _| ((p - point).dot(normal), normal))
            }
            _ => self.resolve(ctx, state, None, |p, reach| self.shape_distance(p - offset, reach)),
        };
        if coupled {
            // Take back the speed the coupled springs gave in pushing the starting
            // penetrations out (once per step).
            let u = self.motion.velocity(ctx.t);
            for (i, depth) in std::mem::take(&mut self.coupled_depths) {
                let i = i as usize;
                let (_, n) = self.shape_distance(state.x.get(i) - offset, ctx.particles.radius[i]);
                let vn = (state.v.get(i) - u).dot(n);
                if vn > 0.0 {
                    state.v.set(i, state.v.get(i) - vn.min(coupled_push_speed(COUPLED_STIFFNESS, depth, ctx.h)) * n);
                }
            }
        }
    }

    /// Contacts resolved in the last projection.
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
