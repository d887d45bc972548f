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
//! or network I/O; scene files and outputs live in the `wobble-scene` and
//! `wobble-cli` crates.

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
pub use world::{SimParams, StepError, World};
