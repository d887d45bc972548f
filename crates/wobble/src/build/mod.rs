//! Builders: turn shapes into particles, springs and surfaces.
//!
//! A [`WorldBuilder`] collects particles, bodies, springs, force terms and
//! constraints; each builder function in this module adds one body. The library can
//! build any world without a scene file; the scene crate only maps text to these
//! calls.
//!
//! ```
//! use wobble::build::{WorldBuilder, cloth::Cloth};
//! use wobble::force::{Gravity, SpringParams};
//! use wobble::integrate::IntegratorKind;
//! use wobble::world::SimParams;
//!
//! let mut b = WorldBuilder::new();
//! let cloth = Cloth { nx: 8, ny: 8, ..Cloth::default() };
//! let handle = cloth.build(&mut b, "cloth").unwrap();
//! b.pin(handle.particle(0, 0));
//! b.pin(handle.particle(7, 0));
//! b.add_force(Gravity::default());
//! let mut world = b.build(SimParams { dt: 1e-3, ..SimParams::default() }).unwrap();
//! world.step().unwrap();
//! ```

use glam::DVec3;

use crate::constraint::{Constraint, Driver, Motion};
use crate::contact::{ContactOptions, ContactSettings, Contacts, SurfaceError, surface::Surfaces};
use crate::force::{ForceTerm, SpringError, SpringNetwork, SpringSet};
use crate::model::{Body, Particles, State, Topology};
use crate::world::{SimParams, World};

pub mod bench;
pub mod chain;
pub mod cloth;
pub mod crumple;
pub mod gmesh;
pub mod grid;
pub mod jelly;
pub mod lattice;
pub mod mesh;
pub mod mesh_check;
pub mod mobile;
pub mod obj;
pub mod oriented;
pub mod pair;
pub mod rigid;
pub mod ring;
pub mod rod;
pub mod sheet;
pub mod sphere;
pub mod twolayer;

/// Why a world could not be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BuildError {
    /// A builder parameter is out of range.
    #[error("body `{body}`: `{what}` = {value} is invalid: {why}")]
    Invalid {
        /// The body being built.
        body: String,
        /// The parameter.
        what: &'static str,
        /// Its value, as text.
        value: String,
        /// What it must be.
        why: &'static str,
    },
    /// Two bodies share a name.
    #[error("two bodies are named `{0}`; body names must be unique")]
    DuplicateBody(String),
    /// A spring is malformed.
    #[error(transparent)]
    Spring(#[from] SpringError),
    /// Generalized springs are malformed.
    #[error(transparent)]
    Generalized(#[from] crate::force::generalized::GeneralizedError),
    /// An OBJ file could not be read.
    #[error(transparent)]
    Obj(#[from] obj::ObjError),
    /// A mesh file's surface cannot make the body (open, non-manifold, not
    /// orientable).
    #[error("body `{body}`: {source}")]
    Mesh {
        /// The body being built.
        body: String,
        /// What is wrong, with OBJ vertex numbers and lines.
        source: mesh_check::MeshError,
    },
    /// A membrane is malformed.
    #[error("body `{body}`: {source}")]
    Membrane {
        /// The body being built.
        body: String,
        /// What is wrong.
        source: crate::force::triangle_stvk::MembraneError,
    },
    /// A two-layer body's inner offset folds its inner layer over.
    #[error(
        "body `{body}`: `thickness` = {thickness} m folds the inner layer over (the offset crosses itself or the centre); {}",
        if *fits > 0.0 { format!("a thickness of {fits} m or less fits this mesh at this scale") } else { "no inward offset fits this mesh: use one layer".to_owned() }
    )]
    Thickness {
        /// The body being built.
        body: String,
        /// The thickness asked for, m.
        thickness: f64,
        /// The largest thickness found to fit, m (0: none).
        fits: f64,
    },
    /// The time step is not positive.
    #[error("time step dt = {0} s is invalid: it must be positive and finite")]
    TimeStep(f64),
    /// A body's contact options are invalid.
    #[error(transparent)]
    Contact(#[from] SurfaceError),
    /// A contact option names a body that does not exist.
    #[error("contact options name body `{0}`, which does not exist")]
    NoBody(String),
    /// A particle index is out of range.
    #[error("particle {index} does not exist (the world has {count})")]
    NoParticle {
        /// The index.
        index: usize,
        /// Number of particles.
        count: usize,
    },
}

/// Returns an [`BuildError::Invalid`] unless `ok`.
pub(crate) fn check(
    ok: bool,
    body: &str,
    what: &'static str,
    value: impl ToString,
    why: &'static str,
) -> Result<(), BuildError> {
    if ok { Ok(()) } else { Err(BuildError::Invalid { body: body.to_owned(), what, value: value.to_string(), why }) }
}

/// Most particles one builder makes (2²⁴ ≈ 16.8 million, about 3 GB of state).
pub const MAX_PARTICLES: usize = 1 << 24;

/// Checks a particle count `n` computed as `factors` multiplied, without overflow.
pub(crate) fn check_count(body: &str, what: &'static str, factors: &[usize]) -> Result<usize, BuildError> {
    let n = factors.iter().try_fold(1usize, |a, &b| a.checked_mul(b)).filter(|&n| n <= MAX_PARTICLES);
    n.ok_or_else(|| BuildError::Invalid {
        body: body.to_owned(),
        what,
        value: format!("{factors:?}"),
        why: "makes more than 16,777,216 particles",
    })
}

/// Checks that a mass (kg) is positive and finite.
pub(crate) fn check_mass(body: &str, what: &'static str, mass: f64) -> Result<(), BuildError> {
    check(mass.is_finite() && mass > 0.0, body, what, mass, "must be positive (kg)")
}

/// Checks spring parameters for a builder (the network checks every spring again).
pub(crate) fn check_spring(body: &str, what: &'static str, p: &crate::force::SpringParams) -> Result<(), BuildError> {
    check(
        p.stiffness.is_finite() && p.stiffness >= 0.0,
        body,
        what,
        p.stiffness,
        "stiffness must be finite and ≥ 0 (N/m)",
    )?;
    check(p.damping.is_finite() && p.damping >= 0.0, body, what, p.damping, "damping must be finite and ≥ 0 (N s/m)")
}

/// Collects everything a [`World`] is made of.
#[derive(Debug, Default)]
pub struct WorldBuilder {
    /// Initial state.
    pub state: State,
    /// Particle properties.
    pub particles: Particles,
    /// Bodies and surfaces.
    pub topology: Topology,
    /// Springs of every body.
    pub springs: SpringSet,
    /// Force terms other than the springs.
    pub forces: Vec<Box<dyn ForceTerm>>,
    /// Constraints, projected in this order.
    pub constraints: Vec<Box<dyn Constraint>>,
    /// Contact options per body name (bodies not listed take the defaults, see
    /// [`ContactOptions`]).
    pub contact_options: Vec<(String, ContactOptions)>,
    /// Settings of the contact stage.
    pub contact_settings: ContactSettings,
}

impl WorldBuilder {
    /// An empty builder.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of particles so far.
    #[must_use]
    pub fn particle_count(&self) -> usize {
        self.state.len()
    }

    /// Adds a free particle at `x` (m) with velocity `v` (m/s), mass `mass` (kg) and
    /// collision radius `radius` (m); returns its index.
    pub fn add_particle(&mut self, x: DVec3, v: DVec3, mass: f64, radius: f64) -> usize {
        self.state.push(x, v);
        self.particles.push(mass, radius);
        self.state.len() - 1
    }

    /// Registers a body over particles `first..` (to the current end), triangles
    /// `tri_first..` and lines `line_first..`. Fails if the name is taken.
    pub fn add_body(
        &mut self,
        name: &str,
        kind: &str,
        first: usize,
        tri_first: usize,
        line_first: usize,
        closed: bool,
    ) -> Result<usize, BuildError> {
        if self.topology.body(name).is_some() {
            return Err(BuildError::DuplicateBody(name.to_owned()));
        }
        self.topology.bodies.push(Body {
            name: name.to_owned(),
            kind: kind.to_owned(),
            particles: first..self.state.len(),
            triangles: tri_first..self.topology.triangles.len(),
            lines: line_first..self.topology.lines.len(),
            closed,
        });
        Ok(self.topology.bodies.len() - 1)
    }

    /// Sets the contact options of body `name` (see [`crate::contact`]).
    pub fn set_contact(&mut self, name: &str, options: ContactOptions) {
        self.contact_options.retain(|(n, _)| n != name);
        self.contact_options.push((name.to_owned(), options));
    }

    /// Pins particle `i`: zero inverse mass, zero velocity.
    pub fn pin(&mut self, i: usize) {
        self.particles.set_pinned(i, true);
        self.state.v.set(i, DVec3::ZERO);
        self.state.w.set(i, DVec3::ZERO);
    }

    /// Sets the initial velocity of particles `range` (m/s).
    pub fn set_velocity(&mut self, range: std::ops::Range<usize>, v: DVec3) {
        for i in range {
            if !self.particles.pinned[i] {
                self.state.v.set(i, v);
            }
        }
    }

    /// Adds a force term.
    pub fn add_force(&mut self, term: impl ForceTerm + 'static) {
        self.forces.push(Box::new(term));
    }

    /// Adds a constraint.
    pub fn add_constraint(&mut self, c: impl Constraint + 'static) {
        self.constraints.push(Box::new(c));
    }

    /// Drives `particles` along `motion` (they are pinned so that only the driver
    /// moves them).
    pub fn drive(&mut self, name: &str, particles: Vec<usize>, motion: Motion) -> Result<(), BuildError> {
        let count = self.particle_count();
        if let Some(&index) = particles.iter().find(|&&i| i >= count) {
            return Err(BuildError::NoParticle { index, count });
        }
        for &i in &particles {
            self.pin(i);
        }
        let driver = Driver::new(name, particles, &self.state, motion);
        driver.place(&mut self.state, 0.0);
        self.add_constraint(driver);
        Ok(())
    }

    /// Finishes the world: sorts the springs into the kernel layout and checks
    /// everything.
    pub fn build(self, params: SimParams) -> Result<World, BuildError> {
        if !(params.dt.is_finite() && params.dt > 0.0) {
            return Err(BuildError::TimeStep(params.dt));
        }
        let network = SpringNetwork::new(&self.springs, self.state.len())?;
        let mut forces: Vec<Box<dyn ForceTerm>> = Vec::with_capacity(self.forces.len() + 1);
        if !network.is_empty() {
            forces.push(Box::new(network));
        }
        forces.extend(self.forces);
        if let Some((name, _)) = self.contact_options.iter().find(|(n, _)| self.topology.body(n).is_none()) {
            return Err(BuildError::NoBody(name.clone()));
        }
        let options: Vec<ContactOptions> = self
            .topology
            .bodies
            .iter()
            .map(|b| self.contact_options.iter().find(|(n, _)| *n == b.name).map(|o| o.1).unwrap_or_default())
            .collect();
        let surfaces = Surfaces::from_topology(&self.topology, &self.state.x, &self.particles.radius, &options)?;
        let contacts = Contacts::new(surfaces, self.contact_settings);
        Ok(World::new(self.particles, self.state, self.topology, forces, self.constraints, contacts, params))
    }
}

/// Spreads a total mass (kg) over `n` particles.
pub(crate) fn per_particle(total: f64, n: usize) -> f64 {
    total / n as f64
}
