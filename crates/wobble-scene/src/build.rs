//! From a [`Scene`] to a [`World`]: builder calls, selections, and builder errors
//! reported at the line that caused them.

use std::ops::Range;

use wobble::build::cloth::ClothHandle;
use wobble::build::grid::GridHandle;
use wobble::build::lattice::LatticeHandle;
use wobble::build::mesh::MeshBody;
use wobble::build::{BuildError, WorldBuilder, obj};
use wobble::constraint::{Collider, Sticks, StretchLimit};
use wobble::force::{AirDrag, DragSpringParams, Gravity};
use wobble::interact::{PickTarget, ScriptedDrag};
use wobble::world::{SimParams, World};

use crate::error::SceneError;
use crate::spec::{BodyShape, BodySpec, ColliderShape, DragPick, Scene, Selection};

/// What a built body looks like, for selections and reports.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltBody {
    /// Its name.
    pub name: String,
    /// Its particles.
    pub particles: Range<usize>,
    /// Grid layout, if it has one.
    pub grid: Grid,
    /// Inner-layer particles of a two-layer body (empty otherwise): colliders skip
    /// them (004 §4.6).
    pub inner: Range<usize>,
    /// The values a pressure body built from material values resolved to.
    pub material: Option<wobble::build::twolayer::ResolvedMaterial>,
}

/// The grid layout of a body, for `grid` selections and named edges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grid {
    /// An elastic grid (002), possibly with points left out.
    Elastic(GridHandle),
    /// No grid.
    None,
    /// A cloth.
    Cloth(ClothHandle),
    /// A lattice.
    Lattice(LatticeHandle),
    /// A chain.
    Chain,
}

impl BuiltBody {
    /// The bottom-middle particle of a cloth (i = nx/2, j = ny − 1), the benchmark's
    /// probe.
    #[must_use]
    pub fn bottom_middle(&self) -> Option<usize> {
        match &self.grid {
            Grid::Cloth(h) => Some(h.particle(h.nx / 2, h.ny - 1)),
            _ => None,
        }
    }
}

/// A world built from a scene, with what the scene's bodies became.
#[derive(Debug)]
pub struct Built {
    /// The world.
    pub world: World,
    /// One entry per `[[body]]`, in file order.
    pub bodies: Vec<BuiltBody>,
}

impl Scene {
    /// Builds the world this scene describes.
    pub fn build(&self) -> Result<Built, SceneError> {
        let sim = &self.simulation;
        let mut b = WorldBuilder::new();
        b.contact_settings = self.contact;
        let mut bodies = Vec::new();
        // Body constraints are projected after the drivers (which place particles the
        // sticks must follow) and before the colliders (which have the last word).
        let mut body_constraints: Vec<Box<dyn wobble::constraint::Constraint>> = Vec::new();
        for spec in &self.bodies {
            let built = self.build_body(&mut b, spec)?;
            let group = b.springs.group(&spec.name);
            if let Some(limit) = &spec.stretch_limit {
                let springs = b.springs.select(group, &limit.kinds);
                let name = format!("{}-stretch-limit", spec.name);
                body_constraints.push(Box::new(StretchLimit::new(&name, springs, limit.tau, limit.iterations)));
            }
            if !spec.sticks.is_empty() {
                let sticks = b.springs.take(group, &spec.sticks);
                body_constraints.push(Box::new(Sticks::new(&format!("{}-sticks", spec.name), sticks)));
            }
            b.set_velocity(built.particles.clone(), spec.velocity);
            if spec.contact != wobble::contact::ContactOptions::default() {
                b.set_contact(&spec.name, spec.contact);
            }
            if let Some(sel) = &spec.pin {
                for i in self.resolve(sel, &built, &b)? {
                    b.pin(i);
                }
            }
            bodies.push(built);
        }
        for d in &self.drivers {
            let body = bodies.iter().find(|x| x.name == d.body).expect("driver body checked on read");
            let particles = self.resolve(&d.select, body, &b)?;
            b.drive(&d.name, particles, d.motion).map_err(|e| self.err(d.span.clone(), &e))?;
        }
        b.constraints.extend(body_constraints);
        // Colliders act on every particle but inner layers (004 §4.6); rigid bodies
        // meet them through their own contact (below).
        let outer_only = bodies.iter().any(|x| !x.inner.is_empty()).then(|| {
            let mut mask = vec![true; b.particle_count()];
            for x in &bodies {
                mask[x.inner.clone()].fill(false);
            }
            mask
        });
        let collider_mask = (!b.topology.rigids.is_empty()).then(|| {
            let mut mask = outer_only.clone().unwrap_or_else(|| vec![true; b.particle_count()]);
            for r in &b.topology.rigids {
                mask[r.particle] = false;
            }
            mask
        });
        let mut all_colliders = Vec::new();
        for c in &self.colliders {
            let list = match &c.shape {
                ColliderShape::Single(shape) => vec![Collider::new(&c.name, shape.clone(), c.surface)],
                ColliderShape::Mesh { file, scale, offset, thickness, file_span } => {
                    let mesh = self.load_collider_mesh(file, *scale, *offset, *thickness, file_span)?;
                    vec![Collider::new(&c.name, wobble::constraint::collider::Shape::Mesh(mesh), c.surface)]
                }
                ColliderShape::Room { min, max } => {
                    let mut walls = Collider::room(*min, *max, c.surface);
                    for w in &mut walls {
                        w.name = format!("{}-{}", c.name, w.name);
                    }
                    walls
                }
            };
            for mut collider in list {
                collider.motion = c.motion;
                collider.only = collider_mask.clone().or_else(|| outer_only.clone());
                all_colliders.push(collider.clone());
                b.add_constraint(collider);
            }
        }
        self.add_rigid_contacts(&mut b, &bodies, outer_only.as_ref(), &all_colliders);
        self.add_attachments(&mut b, &bodies)?;
        if sim.gravity != glam::DVec3::ZERO {
            b.add_force(Gravity { g: sim.gravity });
        }
        if sim.air_drag > 0.0 {
            b.add_force(AirDrag { rate: sim.air_drag });
        }
        let params = SimParams {
            dt: sim.dt,
            integrator: sim.integrator,
            verlet_drag: sim.verlet_drag,
            constraint_iterations: sim.constraint_iterations,
        };
        let mut world = b.build(params).map_err(|e| {
            // Contact errors point at the body's `thickness` (or the body).
            let span = match &e {
                BuildError::Contact(
                    wobble::contact::SurfaceError::BadThickness { body, .. }
                    | wobble::contact::SurfaceError::ThicknessTooLarge { body, .. },
                ) => self
                    .bodies
                    .iter()
                    .find(|s| &s.name == body)
                    .map(|s| s.key_spans.get("thickness").cloned().unwrap_or(s.span.clone())),
                _ => None,
            };
            self.err(span.unwrap_or(0..0), &e)
        })?;
        world.set_solver_settings(sim.solver);
        for d in &self.drags {
            let pick = match &d.pick {
                DragPick::Near(p) => PickTarget::Point(*p),
                DragPick::Particle { body, index } => {
                    let built = bodies.iter().find(|x| &x.name == body).expect("drag body checked on read");
                    if *index >= built.particles.len() {
                        return Err(SceneError::new(
                            &self.source,
                            d.span.clone(),
                            format!(
                                "body `{body}` has {} particles; particle {index} does not exist",
                                built.particles.len()
                            ),
                        ));
                    }
                    if built.inner.contains(&(built.particles.start + index)) {
                        return Err(SceneError::new(
                            &self.source,
                            d.span.clone(),
                            format!("particle {index} of body `{body}` is on its inner layer; drags take outer particles (004 §4.4)"),
                        )
                        .with_help(format!("outer particles are 0..{}", built.inner.start - built.particles.start)));
                    }
                    PickTarget::Particle(built.particles.start + index)
                }
            };
            let params = DragSpringParams { stiffness: d.stiffness, damping: d.damping };
            world.scripts.push(ScriptedDrag::new(d.start, d.end, pick, d.target, d.ramp, params));
        }
        self.check_frequencies(&world, &bodies)?;
        world.warnings.extend(shape_warnings(&world, &bodies, sim.gravity));
        Ok(Built { world, bodies })
    }

    /// Refuses a world whose stiffest mode is so fast (ω above
    /// [`MAX_OMEGA`](crate::input::MAX_OMEGA), or not finite) that the stable time
    /// step underflows: a stiffness too large or a mass too small for any run.
    fn check_frequencies(&self, world: &World, bodies: &[BuiltBody]) -> Result<(), SceneError> {
        let max = crate::input::MAX_OMEGA;
        let stab = world.stability();
        let bad = stab
            .lambda
            .iter()
            .zip(&stab.gamma)
            .position(|(&l, &g)| !(l.is_finite() && l.sqrt() <= max && g.is_finite() && g <= max));
        let Some(i) = bad else {
            return Ok(());
        };
        let (l, g) = (stab.lambda[i], stab.gamma[i]);
        let body = bodies.iter().position(|b| b.particles.contains(&i));
        let (span, name) = match body {
            Some(k) => {
                let spec = &self.bodies[k];
                let key = ["mass", "stiffness", "springs"].into_iter().find(|k| spec.key_spans.contains_key(*k));
                (key.and_then(|k| spec.key_spans.get(k).cloned()).unwrap_or(spec.span.clone()), spec.name.as_str())
            }
            None => (self.bodies.first().map_or(0..0, |b| b.span.clone()), "?"),
        };
        let what = if l.is_finite() && l.sqrt() <= max {
            format!("damping rate {g:.3e} 1/s")
        } else {
            format!("angular frequency ω = {:.3e} rad/s", l.sqrt())
        };
        Err(SceneError::new(
            &self.source,
            span,
            format!(
                "body `{name}`: particle {i} has an {what}, above the limit of {max:e}: the stable time step \
                 underflows (below {:.1e} s)",
                2.0 / max
            ),
        )
        .with_help("the stiffness is too large or the mass too small; check their units (N/m, kg)"))
    }

    /// Reads a mesh collider's OBJ file (relative to the scene), scaled and moved.
    fn load_collider_mesh(
        &self,
        file: &str,
        scale: f64,
        offset: glam::DVec3,
        thickness: f64,
        span: &Range<usize>,
    ) -> Result<std::sync::Arc<wobble::constraint::TriMesh>, SceneError> {
        let path = self.base_dir.join(file);
        let fail = |msg: String| SceneError::new(&self.source, span.clone(), msg);
        let mesh = self.load_mesh(file, span.clone())?;
        let vertices = mesh.vertices.iter().map(|v| *v * scale + offset).collect();
        wobble::constraint::TriMesh::new(vertices, mesh.triangles, thickness)
            .map(std::sync::Arc::new)
            .map_err(|e| fail(format!("mesh file `{}`: {e}", path.display())))
    }

    /// Reads the OBJ file `file` (relative to the scene) for the key at `span`: a
    /// regular UTF-8 file of at most [`MAX_MESH_BYTES`](crate::input::MAX_MESH_BYTES).
    pub(crate) fn load_mesh(&self, file: &str, span: Range<usize>) -> Result<obj::ObjMesh, SceneError> {
        let path = self.base_dir.join(file);
        let shown = crate::input::printable(&path.display().to_string());
        let text = crate::input::read_text(&path, crate::input::MAX_MESH_BYTES).map_err(|e| {
            SceneError::new(&self.source, span.clone(), format!("cannot read mesh file `{shown}`: {e}"))
                .with_help("mesh paths are relative to the scene file's directory; a mesh is a Wavefront OBJ text file")
        })?;
        obj::parse(&text).map_err(|e| SceneError::new(&self.source, span, format!("mesh file `{shown}`: {e}")))
    }

    /// A body's mesh file, welded with `weld` (file units) when given.
    pub(crate) fn load_body_mesh(
        &self,
        spec: &BodySpec,
        file: &str,
        weld: Option<f64>,
    ) -> Result<obj::ObjMesh, SceneError> {
        let span = |key: &str| spec.key_spans.get(key).cloned().unwrap_or(spec.span.clone());
        let mut mesh = self.load_mesh(file, span("file"))?;
        if let Some(tolerance) = weld {
            wobble::build::mesh_check::weld(&mut mesh, tolerance)
                .map_err(|e| SceneError::new(&self.source, span("weld"), format!("body `{}`: {e}", spec.name)))?;
        }
        Ok(mesh)
    }

    fn err(&self, span: Range<usize>, e: &BuildError) -> SceneError {
        SceneError::new(&self.source, span, e.to_string())
    }

    fn build_body(&self, b: &mut WorldBuilder, spec: &BodySpec) -> Result<BuiltBody, SceneError> {
        // Point builder errors at the key they name, else at the body.
        let at = |e: BuildError| {
            let key = match &e {
                BuildError::Invalid { what, .. } => Some(*what),
                BuildError::Mesh { .. } => Some("file"),
                BuildError::Thickness { .. } => Some("thickness"),
                _ => None,
            };
            let span = key.and_then(|k| spec.key_spans.get(k).cloned()).unwrap_or(spec.span.clone());
            let message = match &e {
                BuildError::Invalid { .. } | BuildError::Mesh { .. } | BuildError::Thickness { .. } => e.to_string(),
                _ => format!("body `{}`: {e}", spec.name),
            };
            SceneError::new(&self.source, span, message)
        };
        let first = b.particle_count();
        let (mut inner, mut material) = (first..first, None);
        let grid = match &spec.shape {
            BodyShape::Chain(c) => {
                c.build(b, &spec.name).map_err(at)?;
                Grid::Chain
            }
            BodyShape::Cloth(c) => Grid::Cloth(c.build(b, &spec.name).map_err(at)?),
            BodyShape::Lattice(l) => Grid::Lattice(l.build(b, &spec.name).map_err(at)?),
            BodyShape::Grid(grid) => Grid::Elastic(grid.build(b, &spec.name).map_err(at)?),
            BodyShape::Pair(_) | BodyShape::Ring(_) | BodyShape::PressureSphere(_) | BodyShape::PressureMesh(_) => {
                (inner, material) = crate::twolayer::build(self, b, spec, &at)?;
                Grid::None
            }
            BodyShape::Oriented(o) => {
                crate::oriented::build(self, b, spec, &at)?;
                if matches!(o, crate::oriented::OrientedSpec::Rod(_)) { Grid::Chain } else { Grid::None }
            }
            BodyShape::Rigid(r) => {
                r.body.build(b, &spec.name).map_err(at)?;
                Grid::None
            }
            BodyShape::Ball(ball) => {
                ball.build(b, &spec.name).map_err(at)?;
                Grid::None
            }
            BodyShape::Mesh { file, scale, translate, mass, structural, radius, weld } => {
                let mesh = self.load_body_mesh(spec, file, *weld)?;
                let body = MeshBody {
                    mesh,
                    scale: *scale,
                    translate: *translate,
                    mass: *mass,
                    structural: *structural,
                    radius: *radius,
                };
                body.build(b, &spec.name).map_err(at)?;
                Grid::None
            }
        };
        Ok(BuiltBody { name: spec.name.clone(), particles: first..b.particle_count(), grid, inner, material })
    }

    /// The particles `sel` picks out of `body`.
    pub(crate) fn resolve(
        &self,
        sel: &Selection,
        body: &BuiltBody,
        b: &WorldBuilder,
    ) -> Result<Vec<usize>, SceneError> {
        let r = body.particles.clone();
        let fail = |msg: String| Err(SceneError::new(&self.source, sel.span.clone(), msg));
        let mut out = Vec::new();
        if sel.all {
            out.extend(r.clone());
        }
        for &i in &sel.indices {
            if i >= r.len() {
                return fail(format!("body `{}` has {} particles; index {i} does not exist", body.name, r.len()));
            }
            out.push(r.start + i);
        }
        for g in &sel.grid {
            match (&body.grid, g.as_slice()) {
                (Grid::Cloth(h), &[i, j]) if i < h.nx && j < h.ny => out.push(h.particle(i, j)),
                (Grid::Lattice(h), &[i, j, k]) if i < h.n[0] && j < h.n[1] && k < h.n[2] => {
                    out.push(h.particle(i, j, k))
                }
                (Grid::Cloth(h), _) => {
                    return fail(format!(
                        "grid {g:?} is not a particle of cloth `{}` ({} × {}; use [i, j])",
                        body.name, h.nx, h.ny
                    ));
                }
                (Grid::Elastic(h), &[i, j, k]) if h.particle(i, j, k).is_some() => out.extend(h.particle(i, j, k)),
                (Grid::Elastic(h), &[i, j]) if h.particle(i, j, 0).is_some() => out.extend(h.particle(i, j, 0)),
                (Grid::Elastic(h), _) => {
                    return fail(format!(
                        "grid {g:?} is not a point of grid body `{}` ({:?}; use [l, m, n], or [l, m] for a surface; ellipsoids leave out their corners)",
                        body.name, h.n
                    ));
                }
                (Grid::Lattice(h), _) => {
                    return fail(format!(
                        "grid {g:?} is not a particle of lattice `{}` ({:?}; use [i, j, k])",
                        body.name, h.n
                    ));
                }
                _ => {
                    return fail(format!("body `{}` is not a grid; use `indices`, `near` or `box`", body.name));
                }
            }
        }
        for p in &sel.near {
            let nearest = r.clone().min_by(|&a, &c| {
                b.state.x.get(a).distance_squared(*p).total_cmp(&b.state.x.get(c).distance_squared(*p))
            });
            out.extend(nearest);
        }
        for (lo, hi) in &sel.boxes {
            let before = out.len();
            out.extend(r.clone().filter(|&i| {
                let x = b.state.x.get(i);
                x.cmpge(*lo).all() && x.cmple(*hi).all()
            }));
            if out.len() == before {
                return fail(format!("no particle of body `{}` lies in the box {lo} .. {hi}", body.name));
            }
        }
        for e in &sel.edges {
            match (&body.grid, e.as_str()) {
                (Grid::Cloth(h), "top") => out.extend((0..h.nx).map(|i| h.particle(i, 0))),
                (Grid::Cloth(h), "bottom") => out.extend((0..h.nx).map(|i| h.particle(i, h.ny - 1))),
                (Grid::Cloth(h), "left") => out.extend((0..h.ny).map(|j| h.particle(0, j))),
                (Grid::Cloth(h), "right") => out.extend((0..h.ny).map(|j| h.particle(h.nx - 1, j))),
                (Grid::Chain, "first") => out.push(r.start),
                (Grid::Chain, "last") => out.push(r.end - 1),
                _ => return fail(format!("body `{}` has no edge `{e}`", body.name)),
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}

/// Warnings for one-layer pressure bodies whose gas cannot carry their weight:
/// the gas's over-pressure p = nRT / V pushing on the cross-section π R² of the
/// sphere of the body's volume, against the body's weight m |g|. Two-layer bodies
/// are held by their lining as well and get no warning.
fn shape_warnings(world: &World, bodies: &[BuiltBody], gravity: glam::DVec3) -> Vec<String> {
    let g = gravity.length();
    let mut out = Vec::new();
    if g == 0.0 {
        return out;
    }
    for body in bodies.iter().filter(|b| b.inner.is_empty()) {
        let name = format!("pressure-{}", body.name);
        let Some(term) = world.forces.iter().find(|f| f.name() == name) else { continue };
        let Some(nrt) = term.parameters().iter().find(|p| p.key == "outer").map(|p| p.value) else { continue };
        let Some(topo) = world.topology.bodies.iter().find(|b| b.name == body.name) else { continue };
        let Some(volume) = world.topology.enclosed_volume(topo, &world.state.x).filter(|v| *v > 0.0) else {
            continue;
        };
        let radius = (3.0 * volume / (4.0 * std::f64::consts::PI)).cbrt();
        let support = nrt / volume * std::f64::consts::PI * radius * radius;
        let mass: f64 = body.particles.clone().map(|i| world.particles.mass[i]).sum();
        let weight = mass * g;
        if support < weight {
            let needed = weight / (std::f64::consts::PI * radius * radius);
            let fix = if body.material.is_some() {
                format!("raise `over_pressure` to at least {needed:.3e} Pa")
            } else {
                format!("raise `pressure` (nRT) to at least {:.3e} J", needed * volume)
            };
            out.push(format!(
                "body `{}` has one layer and rests on its gas alone, which pushes with {:.3e} Pa on its cross-section \
                 ({support:.3e} N), less than its weight ({weight:.3e} N): expect it to flatten; {fix}, or give it two layers",
                body.name,
                nrt / volume
            ));
        }
    }
    out
}
