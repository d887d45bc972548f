//! Scene keys of rigid bodies (000's heavy ball and cube) and of `[[attach]]`
//! springs that tie a rigid body to particles of another body. Reading maps keys to
//! [`RigidBody`] and [`AttachSpec`]; building adds one [`RigidContact`] per rigid
//! body (particles of other bodies and the scene's colliders) and one
//! [`Attachment`] force term per `[[attach]]`. The format is in `scenes/README.md`.

use glam::{DQuat, DVec3};
use wobble::build::WorldBuilder;
use wobble::build::rigid::RigidBody;
use wobble::constraint::collider::Surface;
use wobble::constraint::rigid_contact::{DEFAULT_RIGID_FRICTION, DEFAULT_RIGID_RESTITUTION};
use wobble::constraint::{Collider, RigidContact};
use wobble::force::attachment::{Attachment, Link};
use wobble::force::{SpringLaw, SpringParams};
use wobble::model::RigidShape;

use crate::build::BuiltBody;
use crate::doc::Table;
use crate::error::{SceneError, nearest};
use crate::fields::{read_body_ref, read_selection, read_spring};
pub use crate::spec::{AttachSpec, RigidSpec};
use crate::spec::{BodyShape, BodySpec, Scene};

/// Rigid shapes a scene can name.
pub const SHAPES: [&str; 2] = ["sphere", "box"];

/// Default attachment spring: 1000 N/m, 1 N s/m, linear.
pub const DEFAULT_ATTACH_SPRING: SpringParams =
    SpringParams { stiffness: 1000.0, damping: 1.0, law: SpringLaw::Linear };

/// Reads the keys of a `type = "rigid"` body; `position` defaults to the common
/// `origin`, `mass` is the common key.
pub(crate) fn read(t: &Table<'_, '_>, origin: DVec3, mass: f64) -> Result<BodyShape, SceneError> {
    // A rigid body's shape is its contact surface: no thickness, and it cannot
    // touch itself.
    for key in ["particle_radius", "sticks", "stretch_limit", "springs", "thickness", "self_collide"] {
        if t.has(key) {
            return Err(t
                .error(t.span_of(key), format!("a rigid body has no `{key}`"))
                .with_help("rigid keys: shape, radius (sphere), size (box), mass, inertia, position, velocity, orientation, angular_velocity, restitution, friction, collide, pin"));
        }
    }
    let shape = match t.str("shape")? {
        None => return Err(t.missing("shape", "\"sphere\" or \"box\"")),
        Some("sphere") => {
            if t.has("size") {
                return Err(t
                    .error(t.span_of("size"), "a sphere has no `size`")
                    .with_help("give its `radius` (m), or set `shape = \"box\"`"));
            }
            RigidShape::Sphere { radius: t.positive("radius", None, "m")? }
        }
        Some("box") => {
            if t.has("radius") {
                return Err(t
                    .error(t.span_of("radius"), "a box has no `radius`")
                    .with_help("give its edge lengths: `size = [x, y, z]` (m) or `size = a` for a cube"));
            }
            let size = crate::fields::read_box_size(t)?;
            RigidShape::Box { half: size * 0.5 }
        }
        Some(other) => {
            let err = t.error(t.span_of("shape"), format!("unknown rigid shape `{other}`"));
            return Err(match nearest(other, SHAPES) {
                Some(s) => err.with_help(format!("did you mean `{s}`? shapes: sphere, box")),
                None => err.with_help("shapes: sphere, box"),
            });
        }
    };
    let inertia = match t.vec3("inertia")? {
        Some(i) if i.is_finite() && i.min_element() > 0.0 => Some(i),
        Some(i) => {
            return Err(
                t.error(t.span_of("inertia"), format!("every moment in `inertia` = {i} must be positive (kg m²)"))
            );
        }
        None => None,
    };
    let orientation = match t.table("orientation")? {
        None => DQuat::IDENTITY,
        Some(o) => {
            let axis = o.vec3("axis")?.ok_or_else(|| o.missing("axis", "[x, y, z], the rotation axis"))?;
            if !(axis.is_finite() && axis.length() > 0.0) {
                return Err(o.error(o.span_of("axis"), "`axis` must be a non-zero vector"));
            }
            let angle = o.f64("angle")?.ok_or_else(|| o.missing("angle", "the rotation angle in radians"))?;
            if !angle.is_finite() {
                return Err(o.error(o.span_of("angle"), "`angle` must be finite (rad)"));
            }
            o.finish()?;
            DQuat::from_axis_angle(axis.normalize(), angle)
        }
    };
    let restitution = t.f64_or("restitution", DEFAULT_RIGID_RESTITUTION)?;
    if !(0.0..=1.0).contains(&restitution) {
        return Err(t.error(t.span_of("restitution"), format!("`restitution` = {restitution} must lie in [0, 1]")));
    }
    let friction = t.non_negative("friction", DEFAULT_RIGID_FRICTION, "")?;
    let body = RigidBody {
        shape,
        mass,
        inertia,
        position: t.vec3_or("position", origin)?,
        velocity: DVec3::ZERO,
        orientation,
        angular_velocity: t.vec3_or("angular_velocity", DVec3::ZERO)?,
    };
    Ok(BodyShape::Rigid(RigidSpec { body, contact: Surface { restitution, friction } }))
}

/// Reads one `[[attach]]`; `bodies` are the scene's bodies, read before.
pub(crate) fn read_attach(t: &Table<'_, '_>, bodies: &[BodySpec], index: usize) -> Result<AttachSpec, SceneError> {
    let names: Vec<&str> = bodies.iter().map(|b| b.name.as_str()).collect();
    let is_rigid = |name: &str| bodies.iter().any(|b| b.name == name && matches!(b.shape, BodyShape::Rigid(_)));
    let rigid = t.str("rigid")?.ok_or_else(|| t.missing("rigid", "the name of a rigid body"))?.to_owned();
    if !is_rigid(&rigid) {
        let rigids: Vec<&str> = names.iter().copied().filter(|n| is_rigid(n)).collect();
        let what = if names.contains(&rigid.as_str()) { "is not a rigid body" } else { "is not a body" };
        return Err(t.error(t.span_of("rigid"), format!("`{rigid}` {what}")).with_help(if rigids.is_empty() {
            "add a [[body]] with type = \"rigid\"".to_owned()
        } else {
            format!("rigid bodies: {}", rigids.join(", "))
        }));
    }
    let body = read_body_ref(t, &names)?;
    if is_rigid(&body) {
        return Err(t
            .error(
                t.span_of("body"),
                format!("`{body}` is a rigid body; attachments tie a rigid body to particles of a deformable one"),
            )
            .with_help("name a cloth, chain, lattice, mesh, ... as `body`"));
    }
    let select =
        t.table("select")?.ok_or_else(|| t.missing("select", "a particle selection, e.g. { edge = [\"bottom\"] }"))?;
    let select = read_selection(&select)?;
    let offsets = match t.array("offsets")? {
        None => None,
        Some(items) => Some(
            items
                .iter()
                .map(|v| {
                    crate::doc::vec3(v)
                        .filter(|p| p.is_finite())
                        .ok_or_else(|| t.error(v.span(), "each offset must be [x, y, z] (m, body frame)"))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let rest = match t.f64("rest")? {
        Some(r) if r.is_finite() && r >= 0.0 => Some(r),
        Some(r) => return Err(t.error(t.span_of("rest"), format!("`rest` = {r} must be finite and ≥ 0 (m)"))),
        None => None,
    };
    let spring = match t.table("spring")? {
        Some(s) => read_spring(&s, DEFAULT_ATTACH_SPRING)?,
        None => DEFAULT_ATTACH_SPRING,
    };
    let name = match t.str("name")? {
        Some(n) => crate::fields::checked_name(t, "name", n.to_owned())?,
        None => format!("attach-{}", index + 1),
    };
    t.finish()?;
    Ok(AttachSpec { name, rigid, body, select, offsets, rest, spring, span: t.span() })
}

impl Scene {
    /// Adds a [`RigidContact`] per rigid body: against every particle in `touch`
    /// (`None`: all) and against `colliders`.
    pub(crate) fn add_rigid_contacts(
        &self,
        b: &mut WorldBuilder,
        bodies: &[BuiltBody],
        touch: Option<&Vec<bool>>,
        colliders: &[Collider],
    ) {
        // A body's own contact never sees another body's centre particle as a point
        // to push out; bodies meet each other through one shared contact below.
        // Bodies with `collide = false` touch no rigid body (colliders still act).
        let n = b.state.len();
        let mut mask = touch.cloned().unwrap_or_else(|| vec![true; n]);
        mask.resize(n, true);
        let collides = |spec: &BodySpec| spec.contact.collide != Some(false);
        for (spec, built) in self.bodies.iter().zip(bodies) {
            if !collides(spec) {
                mask[built.particles.clone()].fill(false);
            }
        }
        for r in &b.topology.rigids {
            mask[r.particle] = false;
        }
        // Deformable surfaces' triangles whose particles the bodies touch.
        let touchable: Vec<[u32; 3]> =
            b.topology.triangles.iter().filter(|t| t.iter().all(|&i| mask[i as usize])).copied().collect();
        // Rigid bodies that collide, when two or more: they meet each other and the
        // colliders in one shared contact (below), so that a stack's contacts with
        // the floor and between its bodies are solved together.
        let colliding_rigids = self
            .bodies
            .iter()
            .zip(bodies)
            .filter(|(spec, built)| {
                collides(spec)
                    && matches!(spec.shape, BodyShape::Rigid(_))
                    && b.topology.rigid_of(built.particles.start).is_some()
            })
            .count();
        let shared = colliding_rigids >= 2;
        for (spec, built) in self.bodies.iter().zip(bodies) {
            let BodyShape::Rigid(r) = &spec.shape else { continue };
            let Some(rigid) = b.topology.rigid_of(built.particles.start).copied() else { continue };
            let own_colliders = if shared && collides(spec) { Vec::new() } else { colliders.to_vec() };
            let mut contact =
                RigidContact::new(&format!("{}-contact", spec.name), vec![rigid], r.contact, own_colliders);
            if collides(spec) {
                contact.only = Some(mask.clone());
                contact.triangles = touchable.clone();
            } else {
                contact.only = Some(vec![false; n]);
            }
            b.add_constraint(contact);
        }
        // Rigid bodies against each other and the colliders: one contact over all
        // of them that collide (no particles), with their mean restitution and
        // friction between bodies and each collider's own against it.
        let (rigid, surfaces): (Vec<_>, Vec<_>) = self
            .bodies
            .iter()
            .zip(bodies)
            .filter(|(spec, _)| collides(spec))
            .filter_map(|(spec, built)| match &spec.shape {
                BodyShape::Rigid(r) => Some((*b.topology.rigid_of(built.particles.start)?, r.contact)),
                _ => None,
            })
            .unzip();
        if rigid.len() >= 2 {
            let k = surfaces.len().max(1) as f64;
            let surface = wobble::constraint::collider::Surface {
                restitution: surfaces.iter().map(|s| s.restitution).sum::<f64>() / k,
                friction: surfaces.iter().map(|s| s.friction).sum::<f64>() / k,
            };
            let mut contact = RigidContact::new("rigid-bodies", rigid, surface, colliders.to_vec());
            contact.only = Some(vec![false; n]);
            b.add_constraint(contact);
        }
    }

    /// Adds one [`Attachment`] per `[[attach]]`.
    pub(crate) fn add_attachments(&self, b: &mut WorldBuilder, bodies: &[BuiltBody]) -> Result<(), SceneError> {
        for a in &self.attachments {
            let find = |name: &str| bodies.iter().find(|x| x.name == name).expect("attachment bodies checked on read");
            let holder = find(&a.rigid);
            let rigid = b.topology.rigid_of(holder.particles.start).copied().expect("a rigid body has a shape");
            let particles = self.resolve(&a.select, find(&a.body), b)?;
            let fail = |msg: String| SceneError::new(&self.source, a.span.clone(), msg);
            if let Some(offsets) = &a.offsets
                && offsets.len() != particles.len()
            {
                return Err(fail(format!(
                    "`offsets` has {} points but the selection picks {} particles; give one body-frame point per particle (in particle order) or leave `offsets` out",
                    offsets.len(),
                    particles.len()
                )));
            }
            let (xb, q) = (b.state.x.get(rigid.particle), b.state.q[rigid.particle]);
            let mut links = Vec::with_capacity(particles.len());
            for (k, &p) in particles.iter().enumerate() {
                let local = q.inverse() * (b.state.x.get(p) - xb);
                let offset = match &a.offsets {
                    Some(o) => o[k],
                    None => {
                        let (d, n) = rigid.shape.distance(local);
                        local - d * n
                    }
                };
                let rest = a.rest.unwrap_or_else(|| (xb + q * offset).distance(b.state.x.get(p)));
                if rest == 0.0 && a.spring.law != SpringLaw::Linear {
                    return Err(fail(format!(
                        "particle {} sits on its anchor (rest length 0), which the {} law cannot have",
                        p - find(&a.body).particles.start,
                        a.spring.law.name()
                    ))
                    .with_help("move the rigid body off the particles, or give `rest` > 0"));
                }
                links.push(Link { particle: p, body: rigid.particle, offset, rest });
            }
            b.add_force(Attachment::new(&a.name, links, a.spring));
        }
        Ok(())
    }
}
