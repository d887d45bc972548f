//! Generalized springs between oriented particles (001 §4; physics notes §6).
//!
//! A plain spring only resists a change of length. A generalized spring also
//! remembers, at each end, in that end's own body frame, the direction in which the
//! spring left it at rest (the *bend reference*) and a direction across the spring
//! (the *twist reference*, the same world vector for both ends at rest). When the
//! particles turn or move so that the references no longer line up, the spring
//! pushes them back.
//!
//! With u = (x_B − x_A)/d, d = |x_B − x_A|, and world references R(q) D:
//!
//! * **stretch**: f_A = [k (d − L) + c (v_B − v_A)·u] u, f_B = −f_A.
//! * **bend at A**: θ_A = atan2(|a × u|, a · u) with a = R_A D_bend,A; axis
//!   e_A = (a × u)/|a × u|. Torque on A: τ(θ_A) e_A (it turns a toward u). The
//!   reaction is a force couple on the positions, f_B = (τ/d) w_A, f_A = −f_B, with
//!   w_A the unit part of a perpendicular to u; its moment d u × f_B = −τ e_A cancels
//!   the torque, so angular momentum is conserved (physics notes §6: the couple
//!   scales with the bend constant, not the stretch constant as 001 Listing 1 has
//!   it). Bend at B is the same with u → −u.
//! * **twist**: the twist references projected onto the plane across u and
//!   normalised, X (end A) and Y (end B); θ_t the signed angle from X to Y about u;
//!   torque τ_t(θ_t) u on A and −τ_t(θ_t) u on B. A pure couple: no force.
//! * **damping** (all three conserve linear and angular momentum and only remove
//!   energy): linear damping c along u as in a plain spring; bend damping
//!   −c_b (ω_A − Ω)_⊥ on A, with Ω = u × (v_B − v_A)/d the spring's own angular
//!   velocity and ⊥ the part across u, balanced by the couple f_B = (τ_damp × u)/d
//!   reversed (same for B); twist damping −c_t ((ω_A − ω_B)·u) u on A, the opposite on
//!   B. Each is zero under a rigid motion of the pair.
//!
//! A "3D spring" (Jeong & Lee) is the same with no twist law; a plain spring has
//! neither bend nor twist law, and then the force is computed operation for
//! operation as [`super::SpringNetwork`]'s linear spring.
//!
//! # Angle-dependent and one-sided laws
//! Bend and twist resistance follow an [`AngularLaw`]: torque
//! τ(θ) = J_± θ + J₃ θ³, with J₊ for a positive angle and J₋ for a negative one
//! (001 Fig. 8's bar that bends easily one way). The twist angle is signed by its
//! axis u. The bend angle θ ≥ 0 gets its sign from the spring's *bend axis* h, a
//! world vector across the spring given at build time and stored in both ends'
//! frames: **a bend is positive when, going from A to B, the shape's tangent turns
//! counter-clockwise about h** — at end A that is e_A · h > 0, at end B e_B · h < 0
//! (e_B being defined with −u). A bar along +x with h = +z curving up at both ends
//! (a smile, in the x–y plane) is bent positively.
//!
//! # Energy
//! E = ½ k (d − L)² + Σ_ends (½ J_± θ² + ¼ J₃ θ⁴) + ½ J_t,± θ_t² + ¼ J_t3 θ_t⁴.
//! Stretch and bend loads are exactly its negative gradient for symmetric bend laws,
//! and for one-sided ones whenever the bend stays about ±h (planar bending); when the
//! bend axis sweeps across h with a one-sided law the torque jumps there. The twist
//! is, as in 001, a pure couple about the spring: it is the gradient for rotations
//! about the spring, but the projected references also move when an end tilts
//! across the spring, and that coupling (second order in bend × twist) is left out.
//! So with both bend and twist the elastic loads are not exactly conservative, while
//! linear and angular momentum are conserved exactly in every case.
//!
//! The term loops over its springs serially in index order, so results do not depend
//! on the thread count. Its Jacobian blocks are those of the stretch and linear
//! damping only (`add_jacobian`): implicit integrators treat
//! the bend couples explicitly.

use glam::{DQuat, DVec3};

use super::spring::{spring_blocks, spring_blocks_definite};
use super::{
    ForceContext, ForceTerm, JacobianSink, Loads, Parameter, ParameterError, SpringLaw, StrainStats, known_keys,
    require_non_negative,
};
use crate::model::{Particles, State, Vec3s};

/// Angles below this (rad) count as zero bend: the axis is then undefined and the
/// torque τ(θ) ≈ J θ is below 1e-12 J anyway.
pub const MIN_BEND_ANGLE: f64 = 1e-12;

/// Resistance to a bend or twist angle θ (rad): torque τ(θ) = J θ + J₃ θ³ (N m),
/// with J = `positive` for θ ≥ 0 and `negative` for θ < 0.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct AngularLaw {
    /// J₊, N m/rad, for positive angles.
    pub positive: f64,
    /// J₋, N m/rad, for negative angles.
    pub negative: f64,
    /// J₃, N m/rad³: stiffening (positive) for large angles, both signs.
    pub cubic: f64,
}

impl AngularLaw {
    /// No resistance.
    pub const NONE: AngularLaw = AngularLaw { positive: 0.0, negative: 0.0, cubic: 0.0 };

    /// The same constant `j` (N m/rad) for both signs.
    #[must_use]
    pub fn symmetric(j: f64) -> Self {
        Self { positive: j, negative: j, cubic: 0.0 }
    }

    /// `positive` (N m/rad) for positive angles, `negative` for negative ones.
    #[must_use]
    pub fn one_sided(positive: f64, negative: f64) -> Self {
        Self { positive, negative, cubic: 0.0 }
    }

    /// True when the law never produces a torque.
    #[must_use]
    pub fn is_none(&self) -> bool {
        self.positive == 0.0 && self.negative == 0.0 && self.cubic == 0.0
    }

    /// Torque magnitude τ(θ), N m, signed like θ.
    #[inline]
    #[must_use]
    pub fn torque(&self, theta: f64) -> f64 {
        let j = if theta >= 0.0 { self.positive } else { self.negative };
        j * theta + self.cubic * theta * theta * theta
    }

    /// Energy ∫₀^θ τ, J.
    #[must_use]
    pub fn energy(&self, theta: f64) -> f64 {
        let j = if theta >= 0.0 { self.positive } else { self.negative };
        0.5 * j * theta * theta + 0.25 * self.cubic * theta.powi(4)
    }

    /// Largest slope dτ/dθ for |θ| ≤ π, N m/rad (for the stiffness bound).
    #[must_use]
    pub fn max_slope(&self) -> f64 {
        self.positive.max(self.negative) + 3.0 * self.cubic * std::f64::consts::PI * std::f64::consts::PI
    }

    fn check(&self, what: &'static str) -> Result<(), GeneralizedError> {
        for (v, part) in [(self.positive, "positive"), (self.negative, "negative"), (self.cubic, "cubic")] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(GeneralizedError::Invalid { what, part, value: v });
            }
        }
        Ok(())
    }
}

/// Constants of a group of generalized springs. Units: N/m, N s/m, N m/rad,
/// N m s/rad.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeneralizedParams {
    /// Stretch stiffness k, N/m.
    pub stretch: f64,
    /// Linear damping along the spring, N s/m.
    pub damping: f64,
    /// Bend law (J_b); [`AngularLaw::NONE`] for a plain spring.
    pub bend: AngularLaw,
    /// Twist law (J_t); [`AngularLaw::NONE`] for a 3D spring or a plain spring.
    pub twist: AngularLaw,
    /// Bend damping c_b, N m s/rad.
    pub bend_damping: f64,
    /// Twist damping c_t, N m s/rad.
    pub twist_damping: f64,
}

impl GeneralizedParams {
    /// A full generalized spring: stretch `k`, damping `c`, symmetric bend `jb` and
    /// twist `jt`, no angular damping.
    #[must_use]
    pub fn new(k: f64, c: f64, jb: f64, jt: f64) -> Self {
        Self {
            stretch: k,
            damping: c,
            bend: AngularLaw::symmetric(jb),
            twist: AngularLaw::symmetric(jt),
            bend_damping: 0.0,
            twist_damping: 0.0,
        }
    }

    /// The "3D spring": no twist resistance.
    #[must_use]
    pub fn spring_3d(k: f64, c: f64, jb: f64) -> Self {
        Self::new(k, c, jb, 0.0)
    }

    /// A plain linear spring (no bend, no twist).
    #[must_use]
    pub fn plain(k: f64, c: f64) -> Self {
        Self::new(k, c, 0.0, 0.0)
    }

    /// Sets the angular damping (bend, twist), N m s/rad.
    #[must_use]
    pub fn with_angular_damping(mut self, bend: f64, twist: f64) -> Self {
        self.bend_damping = bend;
        self.twist_damping = twist;
        self
    }

    /// Checks every constant is finite and ≥ 0.
    pub fn check(&self) -> Result<(), GeneralizedError> {
        for (v, what) in [
            (self.stretch, "stretch"),
            (self.damping, "damping"),
            (self.bend_damping, "bend_damping"),
            (self.twist_damping, "twist_damping"),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(GeneralizedError::Invalid { what, part: "value", value: v });
            }
        }
        self.bend.check("bend")?;
        self.twist.check("twist")
    }
}

/// Why generalized springs could not be made.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GeneralizedError {
    /// A constant is negative or not finite.
    #[error("generalized spring `{what}` ({part}) = {value} is invalid: it must be finite and ≥ 0")]
    Invalid {
        /// Which constant.
        what: &'static str,
        /// Which part of it.
        part: &'static str,
        /// Its value.
        value: f64,
    },
    /// The two ends coincide or an index is out of range.
    #[error("generalized spring {a}–{b}: {why}")]
    BadEnds {
        /// First end.
        a: usize,
        /// Second end.
        b: usize,
        /// What is wrong.
        why: &'static str,
    },
    /// An end has no rotational inertia although the spring resists bend or twist.
    #[error(
        "generalized spring {a}–{b} resists bending or twisting but particle {particle} is not oriented (no inertia); make it oriented first"
    )]
    NotOriented {
        /// First end.
        a: usize,
        /// Second end.
        b: usize,
        /// The particle without inertia.
        particle: usize,
    },
}

/// One spring: its ends, rest length, group and references in each end's frame.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Spring {
    a: u32,
    b: u32,
    group: u16,
    rest: f64,
    /// Bend reference of A, in A's frame.
    bend_a: DVec3,
    /// Bend reference of B, in B's frame.
    bend_b: DVec3,
    /// Twist reference in A's frame.
    twist_a: DVec3,
    /// Twist reference in B's frame.
    twist_b: DVec3,
    /// Bend-sign axis h in A's frame.
    axis_a: DVec3,
    /// Bend-sign axis h in B's frame.
    axis_b: DVec3,
}

/// The generalized springs of one or more bodies, as one force term.
///
/// Build with [`GeneralizedSprings::new`], add groups with [`GeneralizedSprings::group`]
/// and springs with [`GeneralizedSprings::push_at_rest`] while the state is the rest
/// shape, then add the term to the world.
#[derive(Clone, Debug, Default)]
pub struct GeneralizedSprings {
    name: String,
    springs: Vec<Spring>,
    groups: Vec<(String, GeneralizedParams)>,
}

/// A unit vector across `u` (unit), preferring `hint` projected across it.
#[must_use]
pub fn across(u: DVec3, hint: DVec3) -> DVec3 {
    let p = hint - u * hint.dot(u);
    if p.length_squared() > 1e-12 * hint.length_squared().max(1e-300) {
        p.normalize()
    } else {
        u.any_orthonormal_vector()
    }
}

impl GeneralizedSprings {
    /// An empty term named `name` (used in reports and parameter keys).
    #[must_use]
    pub fn new(name: &str) -> Self {
        Self { name: name.to_owned(), springs: Vec::new(), groups: Vec::new() }
    }

    /// Adds a parameter group (`"bars"`, `"threads"`), returning its index.
    pub fn group(&mut self, name: &str, params: GeneralizedParams) -> Result<u16, GeneralizedError> {
        params.check()?;
        self.groups.push((name.to_owned(), params));
        Ok((self.groups.len() - 1) as u16)
    }

    /// Number of springs.
    #[must_use]
    pub fn len(&self) -> usize {
        self.springs.len()
    }

    /// True when there are no springs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.springs.is_empty()
    }

    /// Parameters of group `g`.
    #[must_use]
    pub fn params(&self, g: u16) -> &GeneralizedParams {
        &self.groups[g as usize].1
    }

    /// Mutable parameters of group `g` (checked again by the caller's use).
    pub fn params_mut(&mut self, g: u16) -> &mut GeneralizedParams {
        &mut self.groups[g as usize].1
    }

    /// Ends of spring `s`.
    #[must_use]
    pub fn ends(&self, s: usize) -> (usize, usize) {
        (self.springs[s].a as usize, self.springs[s].b as usize)
    }

    /// Rest length of spring `s`, m.
    #[must_use]
    pub fn rest_length(&self, s: usize) -> f64 {
        self.springs[s].rest
    }

    /// Adds a spring between `a` and `b` at rest in the shape `rest` (positions and
    /// orientations): the references are the rest direction seen from each end, a
    /// twist vector across it (`twist_hint` projected across the spring) and the
    /// bend-sign axis `axis_hint` projected across it (defaults to the twist vector
    /// when parallel to the spring). All stored in each end's frame.
    #[allow(clippy::too_many_arguments)]
    pub fn push_at_rest(
        &mut self,
        particles: &Particles,
        rest: &State,
        a: usize,
        b: usize,
        group: u16,
        twist_hint: DVec3,
        axis_hint: DVec3,
    ) -> Result<usize, GeneralizedError> {
        let n = rest.len();
        if a >= n || b >= n {
            return Err(GeneralizedError::BadEnds { a, b, why: "an end does not exist" });
        }
        let d = rest.x.get(b) - rest.x.get(a);
        if a == b || d.length() <= 0.0 || !d.is_finite() {
            return Err(GeneralizedError::BadEnds { a, b, why: "the ends coincide" });
        }
        let p = self.params(group);
        if !(p.bend.is_none() && p.twist.is_none()) {
            for i in [a, b] {
                if particles.inertia[i].min_element() <= 0.0 {
                    return Err(GeneralizedError::NotOriented { a, b, particle: i });
                }
            }
        }
        let u = d.normalize();
        let t = across(u, twist_hint);
        let h = {
            let h = across(u, axis_hint);
            if axis_hint.cross(u).length_squared() < 1e-24 { t } else { h }
        };
        let (ia, ib) = (rest.q[a].inverse(), rest.q[b].inverse());
        self.springs.push(Spring {
            a: a as u32,
            b: b as u32,
            group,
            rest: d.length(),
            bend_a: ia * u,
            bend_b: ib * -u,
            twist_a: ia * t,
            twist_b: ib * t,
            axis_a: ia * h,
            axis_b: ib * h,
        });
        Ok(self.springs.len() - 1)
    }

    /// Rest bend references of spring `s` in world coordinates at `state`
    /// (R_A D_bend,A, R_B D_bend,B).
    #[must_use]
    pub fn bend_references(&self, s: usize, state: &State) -> (DVec3, DVec3) {
        let sp = &self.springs[s];
        (state.q[sp.a as usize] * sp.bend_a, state.q[sp.b as usize] * sp.bend_b)
    }

    /// The angles of spring `s` at `state`: signed bend at A, signed bend at B (signs
    /// from the bend axis, see the module docs) and the signed twist, rad.
    #[must_use]
    pub fn angles(&self, s: usize, state: &State) -> [f64; 3] {
        let sp = &self.springs[s];
        let (a, b) = (sp.a as usize, sp.b as usize);
        let (qa, qb) = (state.q[a], state.q[b]);
        let d = state.x.get(b) - state.x.get(a);
        let u = d / d.length();
        let (ta, _) = bend_angle(qa * sp.bend_a, u, qa * sp.axis_a, 1.0);
        let (tb, _) = bend_angle(qb * sp.bend_b, -u, qb * sp.axis_b, -1.0);
        [ta, tb, twist_angle(qa * sp.twist_a, qb * sp.twist_b, u)]
    }

    /// The largest |twist angle| over all springs at `state`, rad.
    #[must_use]
    pub fn max_twist(&self, state: &State) -> f64 {
        (0..self.len()).map(|s| self.angles(s, state)[2].abs()).fold(0.0, f64::max)
    }

    fn add_one(&self, s: usize, state: &State, f: &mut Vec3s, tau: &mut Vec3s) {
        let sp = &self.springs[s];
        let p = &self.groups[sp.group as usize].1;
        let (a, b) = (sp.a as usize, sp.b as usize);
        let (xa, xb, va, vb) = (state.x.get(a), state.x.get(b), state.v.get(a), state.v.get(b));
        // Stretch and linear damping: the operations of the plain spring kernel
        // (force/spring/kernel.rs `scalar_force`), in the same order, so that a generalized
        // spring without bend or twist gives the same bits.
        let (mut dx, mut dy, mut dz) = (xb.x - xa.x, xb.y - xa.y, xb.z - xa.z);
        let l = (dx * dx + dy * dy + dz * dz).sqrt();
        let il = 1.0 / l.max(f64::MIN_POSITIVE);
        dx *= il;
        dy *= il;
        dz *= il;
        let dv = (vb.x - va.x) * dx + (vb.y - va.y) * dy + (vb.z - va.z) * dz;
        let mag = p.stretch * (l - sp.rest) + p.damping * dv;
        let fa = DVec3::new(mag * dx, mag * dy, mag * dz);
        f.add(a, fa);
        f.sub(b, fa);
        let bends = !p.bend.is_none() || p.bend_damping != 0.0;
        let twists = !p.twist.is_none() || p.twist_damping != 0.0;
        // Coincident ends have no direction to bend or twist about: no torques.
        if !(bends || twists) || l < f64::MIN_POSITIVE {
            return;
        }
        let u = DVec3::new(dx, dy, dz);
        let (qa, qb) = (state.q[a], state.q[b]);
        let (wa, wb) = (state.w.get(a), state.w.get(b));
        if bends {
            // The spring's own angular velocity (for bend damping).
            let spin = u.cross(vb - va) * il;
            // End A looks along u, end B along −u; a couple force goes on the far end.
            for (end, near, far, q, d_ref, axis_ref, sign, w) in
                [(0, a, b, qa, sp.bend_a, sp.axis_a, 1.0, wa), (1, b, a, qb, sp.bend_b, sp.axis_b, -1.0, wb)]
            {
                let dir = if end == 0 { u } else { -u };
                let r = q * d_ref;
                let (theta, axis) = bend_angle(r, dir, q * axis_ref, sign);
                let mut torque = DVec3::ZERO;
                if let Some(e) = axis {
                    torque += e * (p.bend.torque(theta) * sign_of(theta));
                }
                if p.bend_damping != 0.0 {
                    let rel = w - spin;
                    torque -= (rel - u * rel.dot(u)) * p.bend_damping;
                }
                if torque != DVec3::ZERO {
                    tau.add(near, torque);
                    // The reaction couple: f_far = (dir × torque)/d on the far end and its
                    // negative on this one; its moment d dir × f_far = −torque because
                    // the torque lies across the spring.
                    let f_far = dir.cross(torque) * il;
                    f.add(far, f_far);
                    f.sub(near, f_far);
                }
            }
        }
        if twists {
            let theta = twist_angle(qa * sp.twist_a, qb * sp.twist_b, u);
            let mut t = p.twist.torque(theta);
            if p.twist_damping != 0.0 {
                t -= p.twist_damping * (wa - wb).dot(u);
            }
            if t != 0.0 {
                tau.add(a, u * t);
                tau.sub(b, u * t);
            }
        }
    }
}

#[inline]
fn sign_of(theta: f64) -> f64 {
    if theta >= 0.0 { 1.0 } else { -1.0 }
}

/// Bend of reference `r` away from direction `dir` (both unit): the signed angle
/// (rad; sign from `axis` · e times `sign`, see the module docs) and the unit axis e
/// that turns `r` toward `dir` (`None` when the angle is below [`MIN_BEND_ANGLE`]).
#[must_use]
fn bend_angle(r: DVec3, dir: DVec3, axis: DVec3, sign: f64) -> (f64, Option<DVec3>) {
    let c = r.cross(dir);
    let s = c.length();
    let theta = s.atan2(r.dot(dir));
    if theta < MIN_BEND_ANGLE || s == 0.0 {
        return (0.0, None);
    }
    let e = c / s;
    let signed = if e.dot(axis) * sign >= 0.0 { theta } else { -theta };
    (signed, Some(e))
}

/// Signed angle from X to Y about `u`, with X, Y the twist references projected
/// across `u` (0 when either projection vanishes).
#[must_use]
fn twist_angle(ta: DVec3, tb: DVec3, u: DVec3) -> f64 {
    let x = ta - u * ta.dot(u);
    let y = tb - u * tb.dot(u);
    if x.length_squared() < 1e-24 || y.length_squared() < 1e-24 {
        return 0.0;
    }
    x.cross(y).dot(u).atan2(x.dot(y))
}

impl ForceTerm for GeneralizedSprings {
    fn name(&self) -> &str {
        &self.name
    }

    fn add_forces(&mut self, ctx: &ForceContext<'_>, out: &mut Loads) {
        let (f, tau) = (&mut out.f, &mut out.tau);
        for s in 0..self.springs.len() {
            self.add_one(s, ctx.state, f, tau);
        }
    }

    fn potential_energy(&self, ctx: &ForceContext<'_>) -> f64 {
        let st = ctx.state;
        (0..self.len())
            .map(|s| {
                let sp = &self.springs[s];
                let p = &self.groups[sp.group as usize].1;
                let (a, b) = (sp.a as usize, sp.b as usize);
                let d = st.x.get(a).distance(st.x.get(b)) - sp.rest;
                let [ta, tb, tt] = self.angles(s, st);
                0.5 * p.stretch * d * d + p.bend.energy(ta) + p.bend.energy(tb) + p.twist.energy(tt)
            })
            .sum()
    }

    /// The blocks of the stretch and linear damping (those of a plain linear spring,
    /// exact for a spring without bend and twist laws). The bend couples and the
    /// torques are left out: implicit integrators take them explicitly, and the
    /// rotational state is advanced explicitly anyway.
    fn add_jacobian(&self, ctx: &ForceContext<'_>, sink: &mut dyn JacobianSink) {
        let x = &ctx.state.x;
        let blocks = if sink.definite() { spring_blocks_definite } else { spring_blocks };
        for sp in &self.springs {
            let p = &self.groups[sp.group as usize].1;
            let (a, b) = (sp.a as usize, sp.b as usize);
            let (kx, kv) = blocks(SpringLaw::Linear, x.get(a), x.get(b), sp.rest, p.stretch, p.damping);
            sink.add_pair(a, b, kx, kv);
        }
    }

    fn has_jacobian(&self) -> bool {
        true
    }

    fn add_stiffness_bound(&self, ctx: &ForceContext<'_>, k_row: &mut [f64], c_row: &mut [f64]) {
        let (wm, wi) = (&ctx.particles.inv_mass, &ctx.particles.inv_inertia);
        let x = &ctx.state.x;
        for sp in &self.springs {
            let p = &self.groups[sp.group as usize].1;
            let (a, b) = (sp.a as usize, sp.b as usize);
            let d = x.get(a).distance(x.get(b)).max(1e-3 * sp.rest);
            let cross = (wm[a] * wm[b]).sqrt();
            k_row[a] += p.stretch * (wm[a] + cross);
            k_row[b] += p.stretch * (wm[b] + cross);
            c_row[a] += p.damping * (wm[a] + cross);
            c_row[b] += p.damping * (wm[b] + cross);
            // Bend at each end couples that end's rotation with both positions
            // (θ ≈ φ − Δy/d): Gershgorin rows of the scaled Hessian of ½ J θ², taking
            // for each particle the larger of its rotational and translational rows.
            let (ra, rb) = (wi[a].max_element(), wi[b].max_element());
            let (jb, cb) = (p.bend.max_slope(), p.bend_damping);
            {
                for (near, far, rn) in [(a, b, ra), (b, a, rb)] {
                    let (wn, wf) = (wm[near], wm[far]);
                    let rot_row = rn + ((rn * wn).sqrt() + (rn * wf).sqrt()) / d;
                    let near_row = (wn + (wn * wf).sqrt()) / (d * d) + (wn * rn).sqrt() / d;
                    let far_row = (wf + (wn * wf).sqrt()) / (d * d) + (wf * rn).sqrt() / d;
                    k_row[near] += jb * (rot_row + near_row);
                    k_row[far] += jb * far_row;
                    c_row[near] += cb * (rot_row + near_row);
                    c_row[far] += cb * far_row;
                }
            }
            let jt = p.twist.max_slope();
            let twist_cross = (ra * rb).sqrt();
            k_row[a] += jt * (ra + twist_cross);
            k_row[b] += jt * (rb + twist_cross);
            c_row[a] += p.twist_damping * (ra + twist_cross);
            c_row[b] += p.twist_damping * (rb + twist_cross);
        }
    }

    fn strain(&self, state: &State) -> Option<StrainStats> {
        if self.is_empty() {
            return None;
        }
        let mut st = StrainStats { count: self.len(), sum: 0.0, max: f64::NEG_INFINITY, max_abs: 0.0 };
        for sp in &self.springs {
            let e = (state.x.get(sp.a as usize).distance(state.x.get(sp.b as usize)) - sp.rest) / sp.rest;
            st.sum += e;
            st.max = st.max.max(e);
            st.max_abs = st.max_abs.max(e.abs());
        }
        Some(st)
    }

    fn segments(&self, out: &mut Vec<[u32; 2]>) {
        out.extend(self.springs.iter().map(|s| [s.a, s.b]));
    }

    fn segment_rest_lengths(&self, out: &mut Vec<f64>) {
        out.extend(self.springs.iter().map(|s| s.rest));
    }

    fn measures(&self, state: &State) -> Vec<(&'static str, f64)> {
        let (mut bend, mut twist) = (0.0f64, 0.0f64);
        for s in 0..self.len() {
            let [ta, tb, tt] = self.angles(s, state);
            bend = bend.max(ta.abs()).max(tb.abs());
            twist = twist.max(tt.abs());
        }
        vec![("max_bend_rad", bend), ("max_twist_rad", twist)]
    }

    fn counts(&self) -> Vec<(String, usize)> {
        self.groups
            .iter()
            .enumerate()
            .map(|(g, (name, _))| {
                (format!("{name} generalized springs"), self.springs.iter().filter(|s| s.group as usize == g).count())
            })
            .collect()
    }

    /// `<group>.stretch`, `.damping`, `.bend`, `.bend_negative`, `.twist`,
    /// `.bend_damping`, `.twist_damping`.
    fn parameters(&self) -> Vec<Parameter> {
        let mut out = Vec::new();
        for (name, p) in &self.groups {
            for (key, value, unit, max) in [
                ("stretch", p.stretch, "N/m", 1e7),
                ("damping", p.damping, "N s/m", 1e4),
                ("bend", p.bend.positive, "N m/rad", 1e4),
                ("bend_negative", p.bend.negative, "N m/rad", 1e4),
                ("twist", p.twist.positive, "N m/rad", 1e4),
                ("bend_damping", p.bend_damping, "N m s/rad", 1e2),
                ("twist_damping", p.twist_damping, "N m s/rad", 1e2),
            ] {
                out.push(Parameter { key: format!("{name}.{key}"), value, unit, min: 0.0, max });
            }
        }
        out
    }

    fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        let known = known_keys(&self.parameters());
        let unknown = || ParameterError::Unknown { key: key.to_owned(), known: known.clone() };
        let (group, field) = key.rsplit_once('.').ok_or_else(unknown)?;
        let Some((_, p)) = self.groups.iter_mut().find(|(n, _)| n == group) else {
            return Err(unknown());
        };
        require_non_negative(key, value)?;
        match field {
            "stretch" => p.stretch = value,
            "damping" => p.damping = value,
            // A symmetric law stays symmetric; a one-sided one keeps its other side
            // (set with `bend_negative`).
            "bend" => {
                if p.bend.negative == p.bend.positive {
                    p.bend.negative = value;
                }
                p.bend.positive = value;
            }
            "bend_negative" => p.bend.negative = value,
            "twist" => {
                p.twist.positive = value;
                p.twist.negative = value;
            }
            "bend_damping" => p.bend_damping = value,
            "twist_damping" => p.twist_damping = value,
            _ => return Err(unknown()),
        }
        Ok(())
    }
}

/// Makes particle `i` oriented, with the inertia of a solid sphere of radius
/// `radius` (m): I = 2/5 m r² about every axis. Keeps its current orientation.
pub fn set_sphere_inertia(particles: &mut Particles, i: usize, radius: f64) {
    let inertia = 0.4 * particles.mass[i] * radius * radius;
    particles.set_inertia(i, DVec3::splat(inertia));
}

/// Total linear momentum Σ m v, kg m/s.
#[must_use]
pub fn linear_momentum(particles: &Particles, state: &State) -> DVec3 {
    (0..state.len()).map(|i| state.v.get(i) * particles.mass[i]).sum()
}

/// Total angular momentum about the origin, orbital plus spin:
/// Σ x × m v + R diag(I) Rᵀ ω, kg m²/s (world frame).
#[must_use]
pub fn angular_momentum(particles: &Particles, state: &State) -> DVec3 {
    (0..state.len())
        .map(|i| {
            let orbital = state.x.get(i).cross(state.v.get(i)) * particles.mass[i];
            let spin = particles.world_inertia(i, state.q[i]) * state.w.get(i);
            orbital + spin
        })
        .sum()
}

/// Largest | |q| − 1 | over `q` (drift of the quaternions from unit length).
#[must_use]
pub fn quat_norm_error(q: &[DQuat]) -> f64 {
    q.iter().map(|q| (q.length() - 1.0).abs()).fold(0.0, f64::max)
}
