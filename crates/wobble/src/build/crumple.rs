//! The crumple: the self-collision scene of the `contact-self-fold` and
//! `contact-cost` experiments and the `contact` benchmark.
//!
//! An N × N cloth (spacing 1 cm, 0.4 kg, structural 600 N/m, shear 300 N/m, bend
//! 2 N/m) squeezed to [`CRUMPLE_SQUEEZE`] of its size in x and z and rippled (a
//! height field 0.25 + 0.06 sin 9x cos 7z + 0.03 sin(13z + 1) m over the unsqueezed
//! coordinates, so it starts free of intersections), released at rest above a
//! floor (restitution 0, friction 0.6) under gravity and air drag
//! [`CRUMPLE_DRAG`]/s: its compressed springs throw it into folds as it falls, and
//! it lands on itself.

use glam::DVec3;

use super::cloth::Cloth;
use super::{BuildError, WorldBuilder};
use crate::constraint::Collider;
use crate::constraint::collider::{Shape, Surface};
use crate::contact::ContactOptions;
use crate::force::{AirDrag, Gravity, SpringParams};
use crate::integrate::IntegratorKind;
use crate::world::{SimParams, World};

/// The fraction of its size the crumpled cloth starts at.
pub const CRUMPLE_SQUEEZE: f64 = 0.55;
/// Air drag of the crumple, 1/s.
pub const CRUMPLE_DRAG: f64 = 2.0;

/// The N × N crumple stepped by `kind` at `dt` (s), with or without self-collision.
pub fn crumple_world(n: usize, kind: IntegratorKind, dt: f64, self_collide: bool) -> Result<World, BuildError> {
    let half = 0.5 * (n - 1) as f64 * 0.01;
    let cloth = Cloth {
        nx: n,
        ny: n,
        spacing: 0.01,
        origin: DVec3::new(-half, 0.25, -half),
        u: DVec3::X,
        v: DVec3::Z,
        mass: 0.4,
        structural: SpringParams::linear(600.0, 0.3),
        shear: Some(SpringParams::linear(300.0, 0.15)),
        bend: Some(SpringParams::linear(2.0, 0.01)),
        ..Cloth::default()
    };
    let mut b = WorldBuilder::new();
    let h = cloth.build(&mut b, "cloth")?;
    for i in h.first..h.first + n * n {
        let x = b.state.x.get(i);
        let y = 0.25 + 0.06 * (9.0 * x.x).sin() * (7.0 * x.z).cos() + 0.03 * (13.0 * x.z + 1.0).sin();
        b.state.x.set(i, DVec3::new(CRUMPLE_SQUEEZE * x.x, y, CRUMPLE_SQUEEZE * x.z));
    }
    b.set_contact("cloth", ContactOptions { self_collide: Some(self_collide), ..ContactOptions::default() });
    b.add_force(Gravity::default());
    b.add_force(AirDrag { rate: CRUMPLE_DRAG });
    b.add_constraint(Collider::new(
        "floor",
        Shape::Plane { point: DVec3::ZERO, normal: DVec3::Y },
        Surface { restitution: 0.0, friction: 0.6 },
    ));
    b.build(SimParams { dt, integrator: kind, ..SimParams::default() })
}
