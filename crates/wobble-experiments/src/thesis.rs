//! Shared setups of the two-layer experiments (004): the thesis's 2D ring and 3D
//! sphere with its default parameters, dropped in a room, and measurements of
//! layers (centres of mass, volume, roundness).

use std::ops::Range;

use glam::DVec3;
use wobble::World;
use wobble::WorldBuilder;
use wobble::build::ring::Ring;
use wobble::build::sphere::SphereMesh;
use wobble::build::twolayer::{DEFAULT_INNER_RATIO, DEFAULT_RADIUS, PressureSphere, TwoLayerHandle, TwoLayerParams};
use wobble::constraint::Collider;
use wobble::constraint::collider::Surface;
use wobble::force::Gravity;
use wobble::integrate::IntegratorKind;
use wobble::world::SimParams;

/// Height of the body's lowest point above the floor at release, m.
pub const DROP_HEIGHT: f64 = 0.5;

/// The thesis's objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Object {
    /// The 2D ring: 10 particles per layer (004 §7.1.2).
    Ring,
    /// The 3D uniform sphere, octahedron subdivided once (004 §7.1.3).
    Sphere,
}

impl Object {
    /// Both, in table order.
    pub const BOTH: [Object; 2] = [Object::Ring, Object::Sphere];

    /// Label for tables.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Object::Ring => "2D ring",
            Object::Sphere => "3D sphere",
        }
    }
}

/// A world with `object` (one or two layers, `params`) whose lowest point is
/// [`DROP_HEIGHT`] above the floor of a 4 × 3 × 4 m room; gravity on; colliders on
/// outer particles only.
pub fn drop_world(
    object: Object,
    two_layers: bool,
    params: TwoLayerParams,
    kind: IntegratorKind,
    dt: f64,
) -> Result<(World, TwoLayerHandle), String> {
    drop_world_scaled(object, two_layers, params, kind, dt, 1.0)
}

/// [`drop_world`] with the object's radius and drop height scaled by `scale` (the
/// thesis gives no units, so its 0.5 m radius is our choice of scale).
pub fn drop_world_scaled(
    object: Object,
    two_layers: bool,
    params: TwoLayerParams,
    kind: IntegratorKind,
    dt: f64,
    scale: f64,
) -> Result<(World, TwoLayerHandle), String> {
    let mut b = WorldBuilder::new();
    let radius = scale * DEFAULT_RADIUS;
    let center = DVec3::new(0.0, radius + scale * DROP_HEIGHT, 0.0);
    let inner_radius = two_layers.then_some(DEFAULT_INNER_RATIO * radius);
    let h = match object {
        Object::Ring => Ring { center, radius, inner_radius, params, ..Ring::default() }.build(&mut b, "ring"),
        Object::Sphere => {
            PressureSphere { center, radius, inner_radius, mesh: SphereMesh::Uniform { level: 1 }, params }
                .build(&mut b, "sphere")
        }
    }
    .map_err(|e| e.to_string())?;
    b.add_force(Gravity::default());
    let mask = h.outer_mask(b.particle_count());
    for mut c in Collider::room(DVec3::new(-2.0, 0.0, -2.0), DVec3::new(2.0, 3.0, 2.0), Surface::default()) {
        c.only = Some(mask.clone());
        b.add_constraint(c);
    }
    let w = b.build(SimParams { dt, integrator: kind, ..SimParams::default() }).map_err(|e| e.to_string())?;
    Ok((w, h))
}

/// Centre of mass of particles `r`, m.
#[must_use]
pub fn com(w: &World, r: Range<usize>) -> DVec3 {
    let (mut m, mut s) = (0.0, DVec3::ZERO);
    for i in r {
        m += w.particles.mass[i];
        s += w.particles.mass[i] * w.state.x.get(i);
    }
    s / m
}

/// Roundness error of the outer layer: RMS over its particles of (d_i − d̄)/d̄,
/// d_i the distance from the layer's centroid (0 for any sphere or circle the
/// particles lie on; the thesis's meshes start with every vertex on the sphere).
#[must_use]
pub fn shape_error(w: &World, outer: Range<usize>) -> f64 {
    let n = outer.len() as f64;
    let c: DVec3 = outer.clone().map(|i| w.state.x.get(i)).sum::<DVec3>() / n;
    let d: Vec<f64> = outer.map(|i| w.state.x.get(i).distance(c)).collect();
    let mean = d.iter().sum::<f64>() / n;
    (d.iter().map(|x| (x / mean - 1.0).powi(2)).sum::<f64>() / n).sqrt()
}

/// Rounds `h` down to 1, 2 or 5 times a power of ten.
#[must_use]
pub fn round_down(h: f64) -> f64 {
    let p = 10f64.powf(h.log10().floor());
    [5.0, 2.0, 1.0].into_iter().map(|m| m * p).find(|&s| s <= h * (1.0 + 1e-12)).unwrap_or(p)
}

/// The methods the thesis compares (its "midpoint" is Heun's method; both are
/// run).
pub const METHODS: [IntegratorKind; 4] =
    [IntegratorKind::ExplicitEuler, IntegratorKind::Heun, IntegratorKind::Midpoint, IntegratorKind::Rk4];

/// The base step: the largest step of the form 1, 2 or 5 × 10ᵏ s at or below the
/// stability estimate (`World::stability`) of every method in [`METHODS`] for both
/// thesis objects at release, and that estimate.
pub fn base_step() -> Result<(f64, f64), String> {
    let mut lowest = f64::INFINITY;
    for object in Object::BOTH {
        let (w, _) = drop_world(object, true, TwoLayerParams::default(), IntegratorKind::Rk4, 1e-3)?;
        let s = w.stability();
        for kind in METHODS {
            lowest = lowest.min(s.dt_for(kind).unwrap_or(0.0));
        }
    }
    if !(lowest.is_finite() && lowest > 0.0) {
        return Err(format!("no stable step estimated ({lowest})"));
    }
    Ok((round_down(lowest), lowest))
}
