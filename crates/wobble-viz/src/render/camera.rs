//! A perspective camera and the default framing.

use glam::DVec3;

/// Default vertical field of view, degrees.
pub const DEFAULT_FOV_DEG: f64 = 40.0;

/// A perspective camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Eye position, m.
    pub position: DVec3,
    /// Point looked at, m.
    pub target: DVec3,
    /// Up direction.
    pub up: DVec3,
    /// Vertical field of view, degrees.
    pub fov_deg: f64,
}

impl Camera {
    /// Frames the box [lo, hi] from a raised three-quarter view so that its bounding
    /// sphere fills about 70 % of the picture's height. Works for flat bodies too (a
    /// cloth in a vertical plane, a ring in x-y): the view direction is never parallel
    /// to a coordinate plane.
    #[must_use]
    pub fn fit(lo: DVec3, hi: DVec3, aspect: f64) -> Camera {
        let centre = 0.5 * (lo + hi);
        let radius = (0.5 * (hi - lo).length()).max(1e-3);
        let fov = DEFAULT_FOV_DEG.to_radians();
        // The sphere's angular radius asin(R/d) is 70 % of the smaller half field of
        // view (vertical, or horizontal for a tall picture).
        let half = (0.5 * fov).min(((0.5 * fov).tan() * aspect).atan());
        let distance = radius / (0.7 * half).sin();
        let dir = DVec3::new(0.55, 0.45, 1.0).normalize();
        Camera { position: centre + dir * distance, target: centre, up: DVec3::Y, fov_deg: DEFAULT_FOV_DEG }
    }

    /// Orthonormal camera basis: right, up, forward (towards the target).
    #[must_use]
    pub fn basis(&self) -> (DVec3, DVec3, DVec3) {
        let forward = (self.target - self.position).normalize();
        // An up direction along the view (or zero) is replaced by a world axis that
        // is not: +y, else +z.
        let up = [self.up, DVec3::Y, DVec3::Z]
            .into_iter()
            .find(|u| forward.cross(*u).length_squared() > 1e-18)
            .unwrap_or(DVec3::X);
        let right = forward.cross(up).normalize();
        (right, right.cross(forward), forward)
    }
}

/// Projects world points to pixels: (x, y) in pixels, depth in [0, 1] (smaller is
/// nearer), or `None` behind the near plane.
#[derive(Clone, Copy, Debug)]
pub struct Projector {
    eye: DVec3,
    right: DVec3,
    up: DVec3,
    forward: DVec3,
    /// Pixels per unit of (lateral offset / distance).
    focal: f64,
    near: f64,
    far: f64,
    width: f64,
    height: f64,
}

impl Projector {
    /// A projector for `camera` onto a `width` × `height` image; near and far planes
    /// from the distance to `scene_radius` around the target.
    #[must_use]
    pub fn new(camera: &Camera, width: usize, height: usize, scene_radius: f64) -> Projector {
        let d = (camera.position - camera.target).length();
        let near = (d - 4.0 * scene_radius).max(1e-3 * d.max(1e-3));
        let far = d + 8.0 * scene_radius + 1.0;
        let (right, up, forward) = camera.basis();
        let focal = 0.5 * height as f64 / (0.5 * camera.fov_deg.to_radians()).tan();
        Projector {
            eye: camera.position,
            right,
            up,
            forward,
            focal,
            near,
            far,
            width: width as f64,
            height: height as f64,
        }
    }

    /// Pixel coordinates and depth of `p`. Depth is (1/near − 1/z)/(1/near − 1/far)
    /// for the distance z along the view axis: it is affine in screen space, so the
    /// rasteriser may interpolate it linearly.
    #[must_use]
    pub fn project(&self, p: DVec3) -> Option<DVec3> {
        let d = p - self.eye;
        let z = d.dot(self.forward);
        if z < self.near || z > self.far {
            return None;
        }
        let x = 0.5 * self.width + self.focal * d.dot(self.right) / z;
        let y = 0.5 * self.height - self.focal * d.dot(self.up) / z;
        let depth = (1.0 / self.near - 1.0 / z) / (1.0 / self.near - 1.0 / self.far);
        Some(DVec3::new(x, y, depth))
    }
}
