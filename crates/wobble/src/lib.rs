//! # wobble — particle-based soft-body simulation
//!
//! Data flows one way:
//!
//! ```text
//! scene ──► build ──► model ──► force terms + constraints ──► integrate ──► outputs
//! ```
//!
//! * [`model`]: [`model::State`] (positions, velocities, orientations, angular
//!   velocities — structure of arrays), [`model::Particles`] (masses, pins, inertia)
//!   and [`model::Topology`] (bodies, surfaces).
//! * [`build`]: builders for chains, cloths, lattices, meshes and spheres, collected
//!   by [`build::WorldBuilder`].
//! * [`force`]: force terms (gravity, springs of every law, drag, ...), each able to
//!   report energy and Jacobian blocks.
//! * [`constraint`]: projections after a step (colliders, drivers).
//! * [`contact`]: bodies touching each other and themselves (broad phase, narrow
//!   phase with continuous detection, response, fail-safes).
//! * [`integrate`]: explicit Euler, symplectic Euler, Heun, midpoint, RK4, Verlet,
//!   implicit Euler, Terzopoulos's semi-implicit scheme — all through one
//!   [`integrate::System`] interface.
//! * [`solve`]: 3×3-block sparse matrices and preconditioned conjugate gradients
//!   for implicit steps.
//! * [`world`]: [`world::World`] ties them together; [`world::World::step`] lists
//!   the stages of a step.
//! * [`metrics`], [`stability`], [`interact`]: measuring, the stable time-step
//!   estimate, picking and dragging.
//!
//! SI units throughout: metres, kilograms, seconds, newtons. The engine does no file
//! or network I/O; scene files live in `wobble-scene`, outputs in `wobble-io`, the
//! command-line tool in `wobble-cli`, the Python bindings in `wobble-py`.
//!
//! A world built in code: a 20 × 20 cloth hung by two corners. A [`WorldBuilder`]
//! adds no force of its own — not even gravity — so the example adds
//! [`force::Gravity`] (−9.81 m/s² along y by default). Vectors are glam's
//! [`DVec3`], re-exported here so callers need no glam of their own.
//!
//! ```
//! use wobble::build::cloth::Cloth;
//! use wobble::force::{Gravity, SpringParams};
//! use wobble::integrate::IntegratorKind;
//! use wobble::{DVec3, SimParams, WorldBuilder};
//!
//! let mut b = WorldBuilder::new();
//! let springs = SpringParams::linear(500.0, 0.2); // stiffness N/m, damping N s/m
//! let cloth = Cloth {
//!     nx: 20,
//!     ny: 20,
//!     spacing: 0.02, // m
//!     mass: 0.1,     // kg, the whole cloth
//!     structural: springs,
//!     shear: Some(springs),
//!     bend: Some(springs),
//!     ..Cloth::default()
//! }
//! .build(&mut b, "cloth")
//! .unwrap();
//! b.pin(cloth.particle(0, 0));
//! b.pin(cloth.particle(19, 0));
//! b.add_force(Gravity::default());
//! let mut world = b
//!     .build(SimParams { dt: 1e-3, integrator: IntegratorKind::ImplicitEuler, ..SimParams::default() })
//!     .unwrap();
//! let corner = cloth.particle(19, 19);
//! let start: DVec3 = world.state.x.get(corner);
//! world.run(500).unwrap(); // 0.5 s
//! let end = world.state.x.get(corner);
//! assert!(end.y < start.y, "the free corner fell: {start} -> {end}");
//! assert!(world.time() > 0.499);
//! ```

pub mod build;
pub mod checkpoint;
pub mod constraint;
pub mod contact;
pub mod force;
pub mod integrate;
pub mod interact;
pub mod metrics;
pub mod model;
pub mod par;
pub mod solve;
pub mod stability;
pub mod world;

pub use build::WorldBuilder;
/// glam, whose vectors the engine's API takes and returns.
pub use glam;
pub use glam::DVec3;
pub use world::{SimParams, StepError, World};
