//! The cloth benchmark scene (foundation issue; `../shared/bench-ref/cloth_ref.c`):
//! N × N particles in the vertical x-y plane, particle (i, j) at (0.01 i, −0.01 j, 0)
//! with j = 0 the top row; total mass 1 kg; the two top corners pinned; structural,
//! shear and bend linear springs with k = 1000 N/m and damping c = 0.5 (32/N)² N s/m
//! (keeping c/m fixed); gravity −9.81 y; symplectic Euler with h = 1e-4 s.

use glam::DVec3;

use super::cloth::{Cloth, ClothHandle};
use super::{BuildError, WorldBuilder};
use crate::force::{Gravity, SpringParams};
use crate::integrate::IntegratorKind;
use crate::world::{SimParams, World};

/// Spring stiffness of the benchmark cloth, N/m.
pub const BENCH_STIFFNESS: f64 = 1000.0;
/// Time step of the benchmark, s.
pub const BENCH_DT: f64 = 1e-4;

/// Damping of the N × N benchmark cloth, N s/m: 0.5 (32/N)².
#[must_use]
pub fn bench_damping(n: usize) -> f64 {
    0.5 * (32.0 / n as f64).powi(2)
}

/// The benchmark cloth's parameters.
#[must_use]
pub fn bench_cloth(n: usize) -> Cloth {
    let s = SpringParams::linear(BENCH_STIFFNESS, bench_damping(n));
    Cloth {
        nx: n,
        ny: n,
        spacing: 0.01,
        origin: DVec3::ZERO,
        u: DVec3::X,
        v: -DVec3::Y,
        mass: 1.0,
        structural: s,
        shear: Some(s),
        bend: Some(s),
        radius: 0.0,
        membrane: None,
    }
}

/// Builds the N × N benchmark world; returns it with the cloth's handle.
pub fn bench_world(n: usize) -> Result<(World, ClothHandle), BuildError> {
    let mut b = WorldBuilder::new();
    let h = bench_cloth(n).build(&mut b, "cloth")?;
    b.pin(h.particle(0, 0));
    b.pin(h.particle(n - 1, 0));
    b.add_force(Gravity::default());
    // The reference loop has no collisions.
    b.set_contact("cloth", crate::contact::ContactOptions { collide: Some(false), ..Default::default() });
    let world =
        b.build(SimParams { dt: BENCH_DT, integrator: IntegratorKind::SymplecticEuler, ..SimParams::default() })?;
    Ok((world, h))
}
