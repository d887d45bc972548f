//! The model: [`State`] (what changes each step), [`Particles`] (per-particle
//! properties) and [`Topology`] (bodies and surfaces). Force terms keep their own
//! element data and parameters; see [`crate::force`].

mod drawn;
mod offsets;
pub mod rigid;
mod state;
mod topology;
mod vec3s;

pub use drawn::DrawnSurfaces;
pub use offsets::OffsetSurface;
pub use rigid::{Rigid, RigidShape};
pub use state::{Particles, State};
pub use topology::{Body, Topology, closed_surface_volume, edges, flipped_triangles, loop_area_xy, triangle_normal};
pub use vec3s::Vec3s;
