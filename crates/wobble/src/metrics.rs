//! Measurements of a world: energies, momenta, strain, bounds, enclosed volume.
//! Outputs only read these; nothing here changes the world.

use glam::DVec3;

use crate::contact::ContactReport;
use crate::force::{DragSpring, ForceContext, ForceTerm, StrainStats};
use crate::integrate::StepReport;
use crate::model::{Particles, State, Topology, Vec3s};

/// One row of the metrics table.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Metrics {
    /// Simulation time, s.
    pub time: f64,
    /// Steps taken.
    pub step: u64,
    /// Kinetic energy, translational + rotational, J.
    pub kinetic: f64,
    /// Potential energy of every force term (gravity, springs, drag spring, ...), J.
    pub potential: f64,
    /// kinetic + potential, J.
    pub total: f64,
    /// Linear momentum Σ m v, kg m/s.
    pub momentum: DVec3,
    /// Angular momentum about the origin, Σ m x × v + Σ I ω, kg m²/s.
    pub angular_momentum: DVec3,
    /// Spring strain (r − L)/L over every spring.
    pub strain_mean: f64,
    /// Largest spring strain.
    pub strain_max: f64,
    /// Minimum corner of the bounding box, m.
    pub bbox_min: DVec3,
    /// Maximum corner of the bounding box, m.
    pub bbox_max: DVec3,
    /// Total volume enclosed by closed bodies, m³ (area, m², for closed 2D loops);
    /// `None` when no body is closed.
    pub volume: Option<f64>,
    /// Linear-solver iterations in the last step.
    pub iterations: u32,
    /// Linear-solver relative residual in the last step.
    pub residual: f64,
    /// Relative residual of the non-linear implicit system after the last step's
    /// Newton iterations (`newton_iterations` > 1; 0 when not computed).
    pub newton_residual: f64,
    /// Order of the extrapolation implicit Euler's solve started from in the last
    /// step (see [`crate::solve::CgSettings::warm_start_order`]).
    pub warm_start_order: u8,
    /// Pairs closer than their contact distance at the end of the last step.
    pub contact_proximity: usize,
    /// Collisions found by continuous detection in the last step.
    pub ccd_hits: usize,
    /// Rigid impact-zone rounds in the last step (the first fail-safe).
    pub impact_zone_rounds: usize,
    /// Particles frozen in the last step (the last resort).
    pub frozen_particles: usize,
    /// Steps since the start in which a fail-safe (impact zones or freezing) fired.
    pub failsafe_steps: u64,
}

/// Axis-aligned bounds of `x` (zero box when empty).
#[must_use]
pub fn bounding_box(x: &Vec3s) -> (DVec3, DVec3) {
    if x.is_empty() {
        return (DVec3::ZERO, DVec3::ZERO);
    }
    x.iter().fold((DVec3::INFINITY, DVec3::NEG_INFINITY), |(lo, hi), p| (lo.min(p), hi.max(p)))
}

/// True when every position is finite and every particle's kinetic energy
/// ½ m |v|² is finite and at most `limit` (J), and, when `rotational`, every
/// orientation is finite and every particle's rotational energy, bounded by
/// ½ I_max |ω|² (I_max its largest principal moment), is finite and at most
/// `limit` too. Order-independent, so the verdict does not depend on the thread
/// count. The loops have no early exit and no branch, so they vectorise: about a
/// nanosecond per particle, cheap enough for every step.
#[must_use]
pub fn healthy(particles: &Particles, state: &State, limit: f64, rotational: bool) -> bool {
    let block = |m: &[f64], v: [&[f64]; 3], x: [&[f64]; 3]| -> bool {
        let n = m.len().min(v[0].len()).min(v[1].len()).min(v[2].len()).min(x[0].len()).min(x[1].len()).min(x[2].len());
        let mut bad = false;
        for i in 0..n {
            let ke = 0.5 * m[i] * (v[0][i] * v[0][i] + v[1][i] * v[1][i] + v[2][i] * v[2][i]);
            let s = x[0][i] + x[1][i] + x[2][i];
            // A NaN energy fails `ke <= limit`; a NaN or infinite coordinate makes
            // the sum non-finite. `&` and `|` on booleans keep the loop branch-free.
            bad |= !((ke <= limit) & s.is_finite());
        }
        !bad
    };
    let turning = |r: std::ops::Range<usize>| -> bool {
        let w = state.w.components().map(|c| &c[r.clone()]);
        let (inertia, q) = (&particles.inertia[r.clone()], &state.q[r]);
        let mut bad = false;
        for (k, (i, q)) in inertia.iter().zip(q).enumerate() {
            let ke = 0.5 * i.max_element() * (w[0][k] * w[0][k] + w[1][k] * w[1][k] + w[2][k] * w[2][k]);
            bad |= !((ke <= limit) & (q.x + q.y + q.z + q.w).is_finite());
        }
        !bad
    };
    let (m, v, x) = (&particles.mass, state.v.components(), state.x.components());
    let healthy = std::sync::atomic::AtomicBool::new(true);
    crate::par::for_ranges(m.len(), |r| {
        let fine =
            block(&m[r.clone()], v.map(|c| &c[r.clone()]), x.map(|c| &c[r.clone()])) && (!rotational || turning(r));
        if !fine {
            healthy.store(false, std::sync::atomic::Ordering::Relaxed);
        }
    });
    healthy.into_inner()
}

/// Particle `i`'s rotational energy bound ½ I_max |ω|² (J), as [`healthy`] takes it.
#[must_use]
pub fn rotational_energy_bound(particles: &Particles, state: &State, i: usize) -> f64 {
    0.5 * particles.inertia[i].max_element() * state.w.get(i).length_squared()
}

/// What [`measure`] reads: a world's particles, state, topology and forces, and
/// its last step's reports (`World::metrics` fills it in).
#[derive(Clone, Copy)]
pub struct Sources<'a> {
    /// Masses and inertia.
    pub particles: &'a Particles,
    /// The state measured.
    pub state: &'a State,
    /// Bodies, for enclosed volumes.
    pub topology: &'a Topology,
    /// Force terms, for potential energy and strain.
    pub forces: &'a [Box<dyn ForceTerm>],
    /// The user's drag spring, for its potential energy.
    pub drag: &'a DragSpring,
    /// Simulation time, s, and steps taken.
    pub time: f64,
    pub step: u64,
    /// The last step's solver and contact reports, and fail-safe steps so far.
    pub report: StepReport,
    pub contact: ContactReport,
    pub failsafe_steps: u64,
}

/// Measures a world, given as its [`Sources`].
#[must_use]
pub fn measure(world: Sources<'_>) -> Metrics {
    let (p, s) = (world.particles, world.state);
    let mut kinetic = 0.0;
    let mut momentum = DVec3::ZERO;
    let mut angular = DVec3::ZERO;
    for i in 0..s.len() {
        let (x, v, m) = (s.x.get(i), s.v.get(i), p.mass[i]);
        kinetic += 0.5 * m * v.length_squared();
        momentum += m * v;
        angular += m * x.cross(v);
        if p.inertia[i] != DVec3::ZERO {
            let w = s.w.get(i);
            let iw = p.world_inertia(i, s.q[i]) * w;
            kinetic += 0.5 * w.dot(iw);
            angular += iw;
        }
    }
    let ctx = ForceContext { particles: p, state: s, t: world.time };
    let potential: f64 =
        world.forces.iter().map(|t| t.potential_energy(&ctx)).sum::<f64>() + world.drag.potential_energy(&ctx);
    let strain = world.forces.iter().filter_map(|t| t.strain(s)).fold(StrainStats::default(), StrainStats::merge);
    let (bbox_min, bbox_max) = bounding_box(&s.x);
    let volumes: Vec<f64> =
        world.topology.bodies.iter().filter_map(|b| world.topology.enclosed_volume(b, &s.x)).collect();
    let (report, contact) = (world.report, world.contact);
    Metrics {
        time: world.time,
        step: world.step,
        kinetic,
        potential,
        total: kinetic + potential,
        momentum,
        angular_momentum: angular,
        strain_mean: strain.mean(),
        strain_max: if strain.count == 0 { 0.0 } else { strain.max },
        bbox_min,
        bbox_max,
        volume: (!volumes.is_empty()).then(|| volumes.iter().sum()),
        iterations: report.iterations,
        residual: report.residual,
        newton_residual: report.newton_residual,
        warm_start_order: report.warm_start_order,
        contact_proximity: contact.proximity,
        ccd_hits: contact.ccd_hits,
        impact_zone_rounds: contact.zone_rounds,
        frozen_particles: contact.frozen,
        failsafe_steps: world.failsafe_steps,
    }
}
