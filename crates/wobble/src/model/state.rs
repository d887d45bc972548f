//! [`State`]: what changes every step. [`Particles`]: what each particle is.

use glam::{DMat3, DQuat, DVec3};

use super::Vec3s;

/// The dynamic state of every particle: position, velocity and, for oriented
/// particles, orientation and angular velocity. SI units throughout.
///
/// Every particle carries rotational state so that oriented particles, rigid bodies
/// and plain mass points share one index space; for plain particles the orientation
/// stays the identity and the angular velocity zero (their inverse inertia is zero).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct State {
    /// Positions, m.
    pub x: Vec3s,
    /// Velocities, m/s.
    pub v: Vec3s,
    /// Orientations (unit quaternions, body to world).
    pub q: Vec<DQuat>,
    /// Angular velocities in the world frame, rad/s.
    pub w: Vec3s,
}

impl State {
    /// Number of particles.
    #[must_use]
    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// True when there are no particles.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// Appends a particle at rest with the identity orientation.
    pub fn push(&mut self, x: DVec3, v: DVec3) {
        self.x.push(x);
        self.v.push(v);
        self.q.push(DQuat::IDENTITY);
        self.w.push(DVec3::ZERO);
    }

    /// Copies `other` into `self`, reusing the allocations when sizes match.
    pub fn copy_from(&mut self, other: &State) {
        self.x.copy_from(&other.x);
        self.v.copy_from(&other.v);
        self.q.clone_from(&other.q);
        self.w.copy_from(&other.w);
    }

    /// Copies what an integrator's stage reads of `other` into `self`: all of it
    /// for a `rotational` system, else positions and velocities only (with no
    /// oriented particle nothing reads the orientations and angular velocities
    /// of a stage's state; they are copied only when their count differs).
    pub fn copy_stage_from(&mut self, other: &State, rotational: bool) {
        if rotational || self.q.len() != other.q.len() || self.w.len() != other.w.len() {
            self.copy_from(other);
        } else {
            self.x.copy_from(&other.x);
            self.v.copy_from(&other.v);
        }
    }

    /// The index and a description of the first non-finite entry, if any.
    #[must_use]
    pub fn first_non_finite(&self) -> Option<(usize, &'static str)> {
        (0..self.len()).find_map(|i| {
            if !self.x.get(i).is_finite() {
                Some((i, "position"))
            } else if !self.v.get(i).is_finite() {
                Some((i, "velocity"))
            } else if !self.q[i].is_finite() {
                Some((i, "orientation"))
            } else if !self.w.get(i).is_finite() {
                Some((i, "angular velocity"))
            } else {
                None
            }
        })
    }
}

/// Per-particle properties that do not change while stepping (pins aside, which
/// users toggle between steps).
///
/// Invariants: all vectors have the same length; `inv_mass[i] == 0` exactly when the
/// particle is pinned or driven; `inv_inertia[i]` is zero for particles without
/// rotational degrees of freedom and for pinned ones.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Particles {
    /// Mass, kg (> 0).
    pub mass: Vec<f64>,
    /// 1 / mass, or 0 for pinned and driven particles, 1/kg.
    pub inv_mass: Vec<f64>,
    /// Held in place (position and orientation) by a pin or a driver.
    pub pinned: Vec<bool>,
    /// Collision radius, m (0 for a point).
    pub radius: Vec<f64>,
    /// Principal moments of inertia in the body frame, kg m² (0: no rotation).
    pub inertia: Vec<DVec3>,
    /// Inverse principal moments, 1/(kg m²); 0 where the particle does not rotate.
    pub inv_inertia: Vec<DVec3>,
}

impl Particles {
    /// Number of particles.
    #[must_use]
    pub fn len(&self) -> usize {
        self.mass.len()
    }

    /// True when there are no particles.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.mass.is_empty()
    }

    /// Appends a free point particle of mass `mass` (kg, must be positive) and
    /// collision radius `radius` (m).
    pub fn push(&mut self, mass: f64, radius: f64) {
        debug_assert!(mass > 0.0, "particle mass must be positive");
        self.mass.push(mass);
        self.inv_mass.push(1.0 / mass);
        self.pinned.push(false);
        self.radius.push(radius);
        self.inertia.push(DVec3::ZERO);
        self.inv_inertia.push(DVec3::ZERO);
    }

    /// Gives particle `i` rotational degrees of freedom with principal moments
    /// `inertia` (kg m², each positive).
    pub fn set_inertia(&mut self, i: usize, inertia: DVec3) {
        self.inertia[i] = inertia;
        self.inv_inertia[i] = if self.pinned[i] { DVec3::ZERO } else { inertia.recip() };
    }

    /// Pins (`true`) or frees particle `i`. A pinned particle has zero inverse mass
    /// and inverse inertia, so no integrator moves it; the caller zeroes its velocity.
    pub fn set_pinned(&mut self, i: usize, pinned: bool) {
        self.pinned[i] = pinned;
        if pinned {
            self.inv_mass[i] = 0.0;
            self.inv_inertia[i] = DVec3::ZERO;
        } else {
            self.inv_mass[i] = 1.0 / self.mass[i];
            let inertia = self.inertia[i];
            self.inv_inertia[i] = if inertia.min_element() > 0.0 { inertia.recip() } else { DVec3::ZERO };
        }
    }

    /// True when any particle has rotational degrees of freedom.
    #[must_use]
    pub fn any_rotational(&self) -> bool {
        self.inertia.iter().any(|i| i.max_element() > 0.0)
    }

    /// World-frame inertia tensor of particle `i` at orientation `q`, kg m².
    #[must_use]
    pub fn world_inertia(&self, i: usize, q: DQuat) -> DMat3 {
        let r = DMat3::from_quat(q);
        r * DMat3::from_diagonal(self.inertia[i]) * r.transpose()
    }

    /// World-frame inverse inertia tensor of particle `i` at orientation `q`.
    #[must_use]
    pub fn world_inv_inertia(&self, i: usize, q: DQuat) -> DMat3 {
        let r = DMat3::from_quat(q);
        r * DMat3::from_diagonal(self.inv_inertia[i]) * r.transpose()
    }

    /// Total mass, kg.
    #[must_use]
    pub fn total_mass(&self) -> f64 {
        self.mass.iter().sum()
    }
}
