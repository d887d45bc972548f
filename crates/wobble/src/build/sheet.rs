//! A thin sheet of oriented particles joined along its grid edges by generalized
//! springs, whose rest shape may hold a crease (001 §4): the bend references come
//! from the creased shape, so a sheet started flat folds along the crease and keeps
//! it.

use glam::{DQuat, DVec3};

use super::cloth::{Cloth, ClothHandle};
use super::oriented::generalize_springs;
use super::{BuildError, WorldBuilder, check};
use crate::force::{GeneralizedParams, SpringParams};
use crate::model::{OffsetSurface, State};

/// Sheet parameters. The sheet lies in the x–z plane (y up) from `origin`, with
/// `nx` particles along x and `nz` along z. Units: m, kg, rad.
#[derive(Clone, Debug, PartialEq)]
pub struct Sheet {
    /// Particles along x (≥ 2).
    pub nx: usize,
    /// Particles along z (≥ 2).
    pub nz: usize,
    /// Grid spacing, m.
    pub spacing: f64,
    /// Position of particle (0, 0), m.
    pub origin: DVec3,
    /// Total mass, kg.
    pub mass: f64,
    /// Particle radius, m (> 0): collision radius and inertia 2/5 m r².
    pub radius: f64,
    /// The edge springs.
    pub springs: GeneralizedParams,
    /// Column (0 < crease < nx − 1) of the crease line, parallel to z.
    pub crease: usize,
    /// Fold angle of the rest shape at the crease, rad: the part beyond the crease
    /// column is turned up by this angle about the crease line (0: a flat rest
    /// shape).
    pub crease_angle: f64,
    /// Start flat (true) or in the creased rest shape (false).
    pub start_flat: bool,
    /// Thickness drawn by offsetting (001 §4.3), m; 0 for none.
    pub thickness: f64,
}

impl Default for Sheet {
    fn default() -> Self {
        Self {
            nx: 9,
            nz: 5,
            spacing: 0.05,
            origin: DVec3::ZERO,
            mass: 0.2,
            radius: 0.025,
            springs: GeneralizedParams::new(2000.0, 0.5, 0.05, 0.05).with_angular_damping(3e-3, 3e-3),
            crease: 4,
            crease_angle: std::f64::consts::FRAC_PI_2,
            start_flat: true,
            thickness: 0.0,
        }
    }
}

impl Sheet {
    /// The rest position of a point `p` of the flat sheet: points beyond the crease
    /// line x = x_c turned up about it by the crease angle.
    fn creased(&self, p: DVec3) -> DVec3 {
        let xc = self.origin.x + self.spacing * self.crease as f64;
        if p.x <= xc {
            return p;
        }
        let pivot = DVec3::new(xc, self.origin.y, p.z);
        pivot + DQuat::from_rotation_z(self.crease_angle) * (p - pivot)
    }

    /// Adds the sheet as body `name` with its own generalized-spring term.
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<ClothHandle, BuildError> {
        check(self.radius.is_finite() && self.radius > 0.0, name, "radius", self.radius, "must be positive (m)")?;
        check(
            self.crease_angle.is_finite() && self.crease_angle.abs() < 3.0,
            name,
            "crease_angle",
            self.crease_angle,
            "must be finite and |angle| < 3 rad",
        )?;
        check(
            self.nx >= 3 && self.crease >= 1 && self.crease + 1 < self.nx,
            name,
            "crease",
            self.crease,
            "must be a column strictly inside the sheet (1 ≤ crease ≤ nx − 2)",
        )?;
        check(
            self.thickness.is_finite() && self.thickness >= 0.0,
            name,
            "thickness",
            self.thickness,
            "must be ≥ 0 (m)",
        )?;
        let cloth = Cloth {
            nx: self.nx,
            ny: self.nz,
            spacing: self.spacing,
            origin: self.origin,
            u: DVec3::X,
            v: DVec3::Z,
            mass: self.mass,
            structural: SpringParams::linear(self.springs.stretch, self.springs.damping),
            shear: None,
            bend: None,
            radius: self.radius,
            membrane: None,
        };
        let handle = cloth.build(b, name)?;
        let range = handle.first..b.particle_count();
        b.make_oriented(name, range.clone(), None)?;
        let mut rest: State = b.state.clone();
        for i in range.clone() {
            rest.x.set(i, self.creased(rest.x.get(i)));
        }
        // Twist references and the bend axis: the sheet's normal side (+y of the flat
        // sheet, turned with the creased part), so a fold toward +y is one sign.
        let term = generalize_springs(b, name, self.springs, &rest, |u| {
            if u.x.abs() > 0.5 || u.y.abs() > 0.5 { DVec3::Z } else { DVec3::Y }
        })?;
        b.add_force(term);
        if !self.start_flat {
            for i in range {
                b.state.x.set(i, rest.x.get(i));
            }
        }
        if self.thickness > 0.0 {
            let tris = &b.topology.triangles[b.topology.bodies[handle.body].triangles.clone()];
            b.topology.offsets.push(thick_sheet(name, tris, &rest, self.thickness));
        }
        b.topology.bodies[handle.body].kind = "sheet".to_owned();
        Ok(handle)
    }
}

/// A sheet of thickness `thickness` (m) drawn around the triangles `tris` (particle
/// indices) of the rest shape `rest`: a vertex half the thickness above and one below
/// each particle along its rest normal, the top surface, the bottom one reversed.
#[must_use]
pub fn thick_sheet(body: &str, tris: &[[u32; 3]], rest: &State, thickness: f64) -> OffsetSurface {
    let mut normals: std::collections::BTreeMap<u32, DVec3> = std::collections::BTreeMap::new();
    for t in tris {
        let n = crate::model::triangle_normal(*t, &rest.x);
        for &p in t {
            *normals.entry(p).or_insert(DVec3::ZERO) += n;
        }
    }
    let mut s = OffsetSurface::new(body);
    let mut top = std::collections::BTreeMap::new();
    let mut bottom = std::collections::BTreeMap::new();
    for (&p, &n) in &normals {
        let n = n.normalize_or_zero() * (0.5 * thickness);
        let q = rest.q[p as usize];
        top.insert(p, s.push(p as usize, n, q));
        bottom.insert(p, s.push(p as usize, -n, q));
    }
    for t in tris {
        s.triangles.push(t.map(|p| top[&p]));
        s.triangles.push([bottom[&t[0]], bottom[&t[2]], bottom[&t[1]]]);
    }
    s
}
