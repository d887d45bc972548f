//! Touching the simulation: picking particles and scripted drags.
//!
//! A user grabs a particle with the drag spring ([`crate::force::DragSpring`]) and
//! moves a cursor; a scene file can script the same gesture as a [`ScriptedDrag`]
//! with a time window.

use glam::DVec3;

use crate::force::pointer::Grab;
use crate::force::{DragSpring, DragSpringParams};
use crate::model::{State, Topology, Vec3s};

/// The particle with `mask[i]` nearest to `point`.
#[must_use]
pub fn nearest_particle(x: &Vec3s, mask: &[bool], point: DVec3) -> Option<usize> {
    (0..x.len())
        .filter(|&i| mask[i])
        .min_by(|&a, &b| x.get(a).distance_squared(point).total_cmp(&x.get(b).distance_squared(point)))
}

/// Ray–triangle intersection (Möller–Trumbore): the ray parameter of the hit.
fn ray_triangle(o: DVec3, d: DVec3, a: DVec3, b: DVec3, c: DVec3) -> Option<f64> {
    let (e1, e2) = (b - a, c - a);
    let p = d.cross(e2);
    let det = e1.dot(p);
    if det.abs() < 1e-18 {
        return None;
    }
    let inv = 1.0 / det;
    let s = o - a;
    let u = s.dot(p) * inv;
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let q = s.cross(e1);
    let v = d.dot(q) * inv;
    if v < 0.0 || u + v > 1.0 {
        return None;
    }
    let t = e2.dot(q) * inv;
    (t > 0.0).then_some(t)
}

/// The grabbable particle under a ray: the vertex nearest the first triangle hit,
/// else the grabbable particle closest to the ray (in front of its origin) within
/// `tolerance` m.
#[must_use]
pub fn pick_ray(
    topology: &Topology,
    x: &Vec3s,
    mask: &[bool],
    origin: DVec3,
    dir: DVec3,
    tolerance: f64,
) -> Option<usize> {
    let d = dir.normalize_or_zero();
    if d == DVec3::ZERO {
        return None;
    }
    let mut best: Option<(f64, [u32; 3])> = None;
    for t in &topology.triangles {
        if !t.iter().all(|&i| mask[i as usize]) {
            continue;
        }
        let [a, b, c] = x.gather(t);
        if let Some(s) = ray_triangle(origin, d, a, b, c)
            && best.is_none_or(|(bs, _)| s < bs)
        {
            best = Some((s, *t));
        }
    }
    if let Some((s, tri)) = best {
        let hit = origin + d * s;
        return tri
            .iter()
            .map(|&i| i as usize)
            .min_by(|&p, &q| x.get(p).distance_squared(hit).total_cmp(&x.get(q).distance_squared(hit)));
    }
    (0..x.len())
        .filter(|&i| mask[i])
        .filter_map(|i| {
            let rel = x.get(i) - origin;
            let along = rel.dot(d);
            let off = (rel - d * along).length();
            (along > 0.0 && off <= tolerance).then_some((i, off, along))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.2.total_cmp(&b.2)))
        .map(|(i, _, _)| i)
}

/// Which particle a scripted drag takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PickTarget {
    /// The grabbable particle nearest to this point when the drag starts, m.
    Point(DVec3),
    /// This particle.
    Particle(usize),
}

/// Where a scripted drag takes the cursor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CursorTarget {
    /// To this point, m.
    To(DVec3),
    /// By this offset from where the particle was when grabbed, m.
    By(DVec3),
}

/// A drag performed by the scene: grab at `start`, move the cursor from the
/// particle to the target over `ramp` seconds, hold, release at `end`.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedDrag {
    /// When to grab, s.
    pub start: f64,
    /// When to release, s.
    pub end: f64,
    /// What to grab.
    pub pick: PickTarget,
    /// Where to pull.
    pub target: CursorTarget,
    /// Seconds the cursor takes to reach the target (0: at once).
    pub ramp: f64,
    /// Drag spring constants for this gesture.
    pub params: DragSpringParams,
    /// (particle, cursor start) once grabbed.
    pub grabbed: Option<(usize, DVec3)>,
    /// True once released.
    pub done: bool,
}

impl ScriptedDrag {
    /// A drag that has not started yet.
    #[must_use]
    pub fn new(
        start: f64,
        end: f64,
        pick: PickTarget,
        target: CursorTarget,
        ramp: f64,
        params: DragSpringParams,
    ) -> Self {
        Self { start, end, pick, target, ramp, params, grabbed: None, done: false }
    }

    /// Cursor position and velocity at time `t` (s) for a grab that began at `from`.
    #[must_use]
    pub fn cursor(&self, from: DVec3, t: f64) -> (DVec3, DVec3) {
        let to = match self.target {
            CursorTarget::To(p) => p,
            CursorTarget::By(d) => from + d,
        };
        if self.ramp <= 0.0 {
            return (to, DVec3::ZERO);
        }
        let s = ((t - self.start) / self.ramp).clamp(0.0, 1.0);
        let v = if s < 1.0 { (to - from) / self.ramp } else { DVec3::ZERO };
        (from.lerp(to, s), v)
    }
}

/// Stage 1 of `World::step`: scripted drags grab (the grabbable particle, flagged
/// in `pickable`, nearest to their point), move or release the drag spring at time
/// `t`.
pub(crate) fn apply_scripts(
    scripts: &mut [ScriptedDrag],
    drag: &mut DragSpring,
    state: &State,
    pickable: &[bool],
    t: f64,
) {
    for script in scripts.iter_mut() {
        if script.done || t < script.start {
            continue;
        }
        if t >= script.end {
            if script.grabbed.is_some() {
                drag.grab = None;
            }
            script.done = true;
            continue;
        }
        let (particle, from) = match script.grabbed {
            Some(g) => g,
            None => {
                let picked = match script.pick {
                    PickTarget::Point(p) => nearest_particle(&state.x, pickable, p),
                    PickTarget::Particle(i) => (i < state.len()).then_some(i),
                };
                let Some(i) = picked else {
                    script.done = true;
                    continue;
                };
                let from = state.x.get(i);
                script.grabbed = Some((i, from));
                (i, from)
            }
        };
        let (cursor, cursor_velocity) = script.cursor(from, t);
        drag.params = script.params;
        drag.grab = Some(Grab { particle, cursor, cursor_velocity });
    }
}
