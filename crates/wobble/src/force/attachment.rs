//! Attachment springs: a spring from a particle to a point fixed in a rigid body's
//! frame (000's cube hanging from a cloth edge).
//!
//! Link ℓ joins particle p to the body point a = x_b + R(q_b) o, o the offset in the
//! body frame. With d = x_p − a, r = |d|, n = d / r and the anchor's velocity
//! v_a = v_b + ω_b × (R o), the force on the particle is
//!
//! ```text
//! f_p = −[ g(r) + c (v_p − v_a) · n ] n
//! ```
//!
//! with g the spring law's signed magnitude ([`SpringLaw`], any law, rest length L).
//! The body receives f_b = −f_p at a, i.e. the force −f_p and the torque
//! τ_b = (R o) × (−f_p). About the origin the pair's torques sum to
//! (x_p − a) × f_p = 0 because f_p ∥ d: total angular momentum is conserved.
//! Energy: the law's ∫_L^r g.
//!
//! # Jacobian
//! The translational blocks are analytic and those of a spring between the particle
//! and the anchor ([`spring_blocks`]): with K = (g/r) I + (g' − g/r) n nᵀ,
//! ∂f_p/∂x_p = −K, ∂f_p/∂x_b = +K, ∂f_b/∂x_p = +K, ∂f_b/∂x_b = −K, and the damping
//! blocks ∂f/∂v = ∓c n nᵀ likewise (the damping's dependence on position is left
//! out, as for every spring, which keeps the matrix symmetric). Treated explicitly:
//! the lever arm's dependence on the orientation, the anchor velocity's ω × (R o)
//! part, and the torque altogether — an implicit integrator advances the body's
//! rotation with the torque of the current state.

use glam::DVec3;

use super::spring::{spring_blocks, spring_blocks_definite};
use super::{ForceContext, ForceTerm, JacobianSink, Loads, Parameter, ParameterError, SpringLaw, SpringParams};

/// One particle-to-body link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    /// The particle.
    pub particle: usize,
    /// The rigid body's particle.
    pub body: usize,
    /// Anchor in the body frame, m.
    pub offset: DVec3,
    /// Rest length L, m (≥ 0; 0 only with the linear law).
    pub rest: f64,
}

/// Springs from particles to points of rigid bodies. See the module docs.
#[derive(Clone, Debug)]
pub struct Attachment {
    /// Name for reports and parameter keys.
    pub name: String,
    /// The links.
    pub links: Vec<Link>,
    /// Stiffness, damping and law shared by every link.
    pub params: SpringParams,
}

/// Geometry of one link at a state: direction, length, lever arm, relative velocity.
struct Geometry {
    n: DVec3,
    r: f64,
    arm: DVec3,
    rel_v: DVec3,
}

impl Attachment {
    /// Links sharing `params`.
    #[must_use]
    pub fn new(name: &str, links: Vec<Link>, params: SpringParams) -> Self {
        Self { name: name.to_owned(), links, params }
    }

    fn geometry(link: &Link, ctx: &ForceContext<'_>) -> Option<Geometry> {
        let s = ctx.state;
        let arm = s.q[link.body] * link.offset;
        let d = s.x.get(link.particle) - (s.x.get(link.body) + arm);
        let r = d.length();
        if r == 0.0 {
            return None;
        }
        let va = s.v.get(link.body) + s.w.get(link.body).cross(arm);
        Some(Geometry { n: d / r, r, arm, rel_v: s.v.get(link.particle) - va })
    }

    /// Signed magnitude g(r) and slope g'(r) of link `link` at length `r`.
    fn magnitude(&self, link: &Link, r: f64) -> (f64, f64) {
        self.params.law.magnitude(r, link.rest, self.params.stiffness)
    }
}

impl ForceTerm for Attachment {
    fn name(&self) -> &str {
        &self.name
    }

    fn add_forces(&mut self, ctx: &ForceContext<'_>, out: &mut Loads) {
        for link in &self.links {
            let Some(g) = Self::geometry(link, ctx) else { continue };
            let (mag, _) = self.magnitude(link, g.r);
            let f = -(mag + self.params.damping * g.rel_v.dot(g.n)) * g.n;
            out.f.add(link.particle, f);
            out.f.add(link.body, -f);
            out.tau.add(link.body, g.arm.cross(-f));
        }
    }

    fn potential_energy(&self, ctx: &ForceContext<'_>) -> f64 {
        self.links
            .iter()
            .filter_map(|link| {
                Self::geometry(link, ctx).map(|g| self.params.law.energy(g.r, link.rest, self.params.stiffness))
            })
            .sum()
    }

    fn has_jacobian(&self) -> bool {
        true
    }

    fn add_jacobian(&self, ctx: &ForceContext<'_>, sink: &mut dyn JacobianSink) {
        let s = ctx.state;
        let SpringParams { stiffness, damping, law } = self.params;
        let blocks = if sink.definite() { spring_blocks_definite } else { spring_blocks };
        for link in &self.links {
            let (p, b) = (link.particle, link.body);
            let anchor = s.x.get(b) + s.q[b] * link.offset;
            if s.x.get(p) == anchor {
                continue;
            }
            let (kx, kv) = blocks(law, s.x.get(p), anchor, link.rest, stiffness, damping);
            sink.add_pair(p, b, kx, kv);
        }
    }

    fn add_stiffness_bound(&self, ctx: &ForceContext<'_>, k_row: &mut [f64], c_row: &mut [f64]) {
        let w = &ctx.particles.inv_mass;
        let SpringParams { stiffness, damping: c, law } = self.params;
        let st = ctx.state;
        for link in &self.links {
            let (p, b) = (link.particle, link.body);
            // A non-linear law's current slope (the cubic's stiffening), as the
            // spring network bounds it; the lever arm's rotational stiffness is not
            // included (the body is heavy next to the particles it holds).
            let anchor = st.x.get(b) + st.q[b] * link.offset;
            let r = (st.x.get(p) - anchor).length();
            let (g, dg) = law.magnitude(r, link.rest, stiffness);
            let k = stiffness.max(dg.abs()).max(if r > 0.0 { (g / r).abs() } else { 0.0 });
            let cross = (w[p] * w[b]).sqrt();
            k_row[p] += k * (w[p] + cross);
            k_row[b] += k * (w[b] + cross);
            c_row[p] += c * (w[p] + cross);
            c_row[b] += c * (w[b] + cross);
        }
    }

    fn counts(&self) -> Vec<(String, usize)> {
        vec![(format!("attachment springs ({})", self.params.law.name()), self.links.len())]
    }

    fn parameters(&self) -> Vec<Parameter> {
        vec![
            Parameter { key: "stiffness".into(), value: self.params.stiffness, unit: "N/m", min: 0.0, max: 1e5 },
            Parameter { key: "damping".into(), value: self.params.damping, unit: "N s/m", min: 0.0, max: 100.0 },
        ]
    }

    fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        super::require_non_negative(key, value)?;
        match key {
            "stiffness" => self.params.stiffness = value,
            "damping" => self.params.damping = value,
            _ => return Err(ParameterError::Unknown { key: key.into(), known: "stiffness, damping".into() }),
        }
        Ok(())
    }
}

/// True when `law` can serve links of rest length `rest` (m): a zero rest length
/// suits only the linear law (the others are parameterised by L).
#[must_use]
pub fn law_accepts_rest(law: &SpringLaw, rest: f64) -> bool {
    rest > 0.0 || matches!(law, SpringLaw::Linear)
}
