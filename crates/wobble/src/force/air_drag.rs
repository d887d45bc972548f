//! Viscous air drag: f_i = −γ m_i v_i, a velocity decay at rate γ (1/s) that does not
//! depend on how finely a body is discretised.

use glam::DMat3;

use super::{ForceContext, ForceTerm, JacobianSink, Loads, Parameter, ParameterError, require_non_negative};

/// Viscous drag towards still air.
#[derive(Clone, Debug, PartialEq)]
pub struct AirDrag {
    /// Decay rate γ, 1/s (a free particle's speed falls as e^{−γt}).
    pub rate: f64,
}

impl ForceTerm for AirDrag {
    fn name(&self) -> &str {
        "air_drag"
    }

    fn add_forces(&mut self, ctx: &ForceContext<'_>, out: &mut Loads) {
        let (m, v, rate) = (&ctx.particles.mass, ctx.state.v.components(), self.rate);
        let [fx, fy, fz] = out.f.components_mut();
        let n = m.len().min(fx.len()).min(v[0].len());
        crate::par::for_ranges_mut([&mut fx[..n], &mut fy[..n], &mut fz[..n]], |first, f| {
            let m = &m[first..first + f[0].len()];
            for (f, v) in f.into_iter().zip(v) {
                for ((f, v), m) in f.iter_mut().zip(&v[first..]).zip(m) {
                    *f -= rate * m * v;
                }
            }
        });
    }

    fn add_jacobian(&self, ctx: &ForceContext<'_>, sink: &mut dyn JacobianSink) {
        for (i, m) in ctx.particles.mass.iter().enumerate() {
            sink.add_dfdv(i, i, DMat3::from_diagonal(glam::DVec3::splat(-self.rate * m)));
        }
    }

    fn has_jacobian(&self) -> bool {
        true
    }

    fn add_stiffness_bound(&self, ctx: &ForceContext<'_>, _k_row: &mut [f64], c_row: &mut [f64]) {
        for (c, w) in c_row.iter_mut().zip(&ctx.particles.inv_mass) {
            if *w > 0.0 {
                *c += self.rate;
            }
        }
    }

    fn parameters(&self) -> Vec<Parameter> {
        vec![Parameter { key: "rate".into(), value: self.rate, unit: "1/s", min: 0.0, max: 10.0 }]
    }

    fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        if key != "rate" {
            return Err(ParameterError::Unknown { key: key.into(), known: "rate".into() });
        }
        require_non_negative(key, value)?;
        self.rate = value;
        Ok(())
    }
}
