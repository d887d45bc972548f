//! The contact stage's contacts held as springs inside an implicit solve (see
//! [`super`], "Inside an implicit solve"): their forces and Jacobian blocks for
//! the solve, and the split impulse that takes back the separating speed their
//! push gave once the step is done.

use glam::{DMat3, DVec3};

use super::narrow;
use super::stencil::{apply, effective_inverse_mass, gather, outer, relative};
use super::{CONTACT_COUPLED_STIFFNESS, Contacts, Pair, coupled};
use crate::force::Loads;
use crate::model::{Particles, State};
use crate::solve::JacobianSink;

impl Contacts {
    /// Calls `each(index, pair, spring)` for every contact of the last proximity pass
    /// still within its contact distance at `state`, as a spring of a step of `h`
    /// (see the module docs, "Inside an implicit solve").
    fn coupled_springs(
        &self,
        particles: &Particles,
        state: &State,
        h: f64,
        mut each: impl FnMut(usize, &Pair, Spring),
    ) {
        for (index, pair) in self.coupled.iter().enumerate() {
            let prox = narrow::proximity(pair.kind, &gather(&state.x, pair.p), DVec3::Y);
            let depth = pair.distance - prox.distance;
            let w = effective_inverse_mass(&particles.inv_mass, pair, &prox);
            // The response leaves a pair at its distance to 1e-9 of it.
            if !coupled::coupled_touches(depth, 2.0 * pair.distance) || w <= 0.0 {
                continue;
            }
            let depth = depth.max(0.0);
            let k = coupled::coupled_stiffness(CONTACT_COUPLED_STIFFNESS, w, h);
            let rel = relative(&state.v, pair, &prox);
            let slip = rel - rel.dot(prox.n) * prox.n;
            let c = coupled::coupled_friction(
                CONTACT_COUPLED_STIFFNESS,
                w,
                h,
                self.settings.friction,
                k * depth,
                slip.length(),
            );
            each(index, pair, Spring { prox, depth, k, c, slip });
        }
    }

    /// Adds the forces of the contact springs an implicit solve of a step of `h`
    /// from `state` holds (see the module docs): on stencil particle a,
    /// w_a (k δ n − c v_t).
    pub fn add_coupled_forces(&mut self, particles: &Particles, state: &State, h: f64, out: &mut Loads) {
        let mut depths = std::mem::take(&mut self.coupled_depth);
        depths.clear();
        self.coupled_springs(particles, state, h, |index, pair, s| {
            let f = s.prox.n * (s.k * s.depth) - s.slip * s.c;
            for (a, &p) in pair.p.iter().enumerate() {
                if s.prox.w[a] != 0.0 {
                    out.f.add(p as usize, f * s.prox.w[a]);
                }
            }
            depths.push((index as u32, s.depth));
        });
        self.coupled_depth = depths;
        self.coupled_now = true;
    }

    /// Adds the Jacobian blocks of those springs: ∂f_a/∂x_b = −k w_a w_b n nᵀ (the
    /// weights and normal held, as in the response) and
    /// ∂f_a/∂v_b = −c w_a w_b (I − n nᵀ).
    pub fn add_coupled_jacobian(&self, particles: &Particles, state: &State, h: f64, sink: &mut dyn JacobianSink) {
        self.coupled_springs(particles, state, h, |_, pair, s| {
            let nn = outer(s.prox.n, s.prox.n);
            let tangent = DMat3::IDENTITY - nn;
            sink.add_stencil(pair.p, s.prox.w, nn * -s.k, tangent * -s.c);
        });
    }

    /// After a step solved with the contact springs: takes back the separating
    /// speed they gave in pushing each starting penetration out (a split impulse,
    /// as the colliders do), so that position errors do not become velocities.
    pub(super) fn release_coupled(&mut self, particles: &Particles, state: &mut State, h: f64) {
        if !std::mem::take(&mut self.coupled_now) {
            return;
        }
        for &(index, depth) in &self.coupled_depth {
            let pair = &self.coupled[index as usize];
            let prox = narrow::proximity(pair.kind, &gather(&state.x, pair.p), DVec3::Y);
            let w = effective_inverse_mass(&particles.inv_mass, pair, &prox);
            let vn = relative(&state.v, pair, &prox).dot(prox.n);
            if vn > 0.0 && w > 0.0 {
                let cut = vn.min(coupled::coupled_push_speed(CONTACT_COUPLED_STIFFNESS, depth, h));
                apply(&mut state.v, &particles.inv_mass, pair, &prox, prox.n * (-cut / w));
            }
        }
    }
}

/// A contact held as a spring inside an implicit solve.
struct Spring {
    /// Closest points, weights and normal at the step's start.
    prox: narrow::Proximity,
    /// Penetration into the contact distance, m (> 0).
    depth: f64,
    /// Stiffness, N/m.
    k: f64,
    /// Friction damping, N s/m.
    c: f64,
    /// Tangential relative velocity, m/s.
    slip: DVec3,
}
