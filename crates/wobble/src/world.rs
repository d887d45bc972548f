//! [`World`]: the model, its force terms and constraints, and the step that advances
//! them.
//!
//! # The step
//! [`World::step`] runs these stages, in this order:
//!
//! 1. **Inputs** — scripted drags grab, move their cursor, or release, for the time
//!    at the start of the step.
//! 2. **Integrate** — the integrator advances the state by h, evaluating the force
//!    terms (and the drag spring) through [`System`] as often as its method needs.
//! 3. **Project** — constraints (drivers, colliders, ...) are projected, in the order
//!    they were added, `constraint_iterations` times.
//! 4. **Contact** — bodies meet each other and themselves ([`crate::contact`]): from
//!    the positions at the start of the step to the projected end state, proximity
//!    response, continuous detection and the fail-safes, so surfaces that did not
//!    intersect at the start do not at the end.
//! 5. **Advance the clock** — t += h, step += 1.
//! 6. **Check health** — a non-finite value, or one particle with a kinetic energy
//!    beyond [`RUNAWAY_FACTOR`] times the world's energy scale, stops the world with a
//!    [`BlowUp`] naming the step, the particle and the stable time-step estimate.

use glam::DVec3;

use crate::checkpoint::{RestoreError, StateReader, StateWriter, expect_eq};
use crate::constraint::{Constraint, ConstraintContext};
use crate::contact::{ContactReport, Contacts};
use crate::force::{
    DragSpring, DragSpringParams, ForceContext, ForceTerm, JacobianSink, Loads, Parameter, ParameterError,
    ScalarStiffnessSink,
};
use crate::integrate::{DEFAULT_VERLET_DRAG, Integrator, IntegratorError, IntegratorKind, StepReport, System};
use crate::interact::{self, ScriptedDrag};
use crate::metrics::{self, Metrics};
use crate::model::{Particles, State, Topology};
use crate::solve::CgSettings;
use crate::stability::{self, Stability};

/// Default time step, s.
pub const DEFAULT_DT: f64 = 1e-3;
/// A world blows up when one particle's kinetic energy (or, for oriented
/// particles, its rotational energy) exceeds this many times the world's energy
/// scale (see [`World::energy_scale`]). Unstable integration grows
/// exponentially, so the step at which it is crossed hardly depends on the factor.
pub const RUNAWAY_FACTOR: f64 = 1e4;
/// First field of [`World::save_state`]: what the bytes are and their layout's
/// version (raise it when the layout changes).
const STATE_TAG: &str = "wobble-world-state/5";
/// Reference acceleration in the energy scale, m/s² (standard gravity).
const ENERGY_SCALE_ACCELERATION: f64 = 9.81;

/// Stepping parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimParams {
    /// Time step h, s (default [`DEFAULT_DT`]).
    pub dt: f64,
    /// Integration method (default symplectic Euler).
    pub integrator: IntegratorKind,
    /// Jakobsen's drag δ for Verlet (default [`DEFAULT_VERLET_DRAG`]).
    pub verlet_drag: f64,
    /// Passes over the constraints after each step (default 1; more lets
    /// interacting constraints settle, as in Jakobsen's relaxation).
    pub constraint_iterations: u32,
}

impl Default for SimParams {
    fn default() -> Self {
        Self {
            dt: DEFAULT_DT,
            integrator: IntegratorKind::SymplecticEuler,
            verlet_drag: DEFAULT_VERLET_DRAG,
            constraint_iterations: 1,
        }
    }
}

/// A simulation that became non-finite or ran away.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error(
    "the simulation blew up at step {step} (t = {time:.6} s): particle {particle}{body} {reason}. {advice}",
    body = .body.as_ref().map(|b| format!(" of body `{b}`")).unwrap_or_default()
)]
pub struct BlowUp {
    /// The step that produced the bad state (1-based: the first step is step 1).
    pub step: u64,
    /// Time at the end of that step, s.
    pub time: f64,
    /// The particle that showed it first (non-finite) or moved fastest (runaway).
    pub particle: usize,
    /// Its body, if any.
    pub body: Option<String>,
    /// What was seen.
    pub reason: String,
    /// Time step in use, s.
    pub dt: f64,
    /// Stable time-step estimate for the integrator in use, s (`None` when the
    /// method is unstable at any step for an undamped system).
    pub stable_dt: Option<f64>,
    /// What to do about it.
    pub advice: String,
}

/// Why a step did not happen.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StepError {
    /// The state became non-finite or ran away.
    #[error(transparent)]
    BlowUp(Box<BlowUp>),
    /// The integrator's solver failed.
    #[error("step {step}: {source}")]
    Integrator {
        /// The step.
        step: u64,
        /// The failure.
        source: IntegratorError,
    },
    /// An earlier step blew up; reset the world to continue.
    #[error("the world blew up earlier and must be rebuilt: {0}")]
    Halted(Box<BlowUp>),
}

/// A simulated world. Build one with [`crate::build::WorldBuilder`].
#[derive(Debug)]
pub struct World {
    /// Per-particle properties.
    pub particles: Particles,
    /// Current state.
    pub state: State,
    /// Bodies and surfaces.
    pub topology: Topology,
    /// Force terms, evaluated in order (the spring network first when present).
    pub forces: Vec<Box<dyn ForceTerm>>,
    /// The user's drag spring.
    pub drag: DragSpring,
    /// Constraints, projected in order after each step.
    pub constraints: Vec<Box<dyn Constraint>>,
    /// Scripted drags from scene files.
    pub scripts: Vec<ScriptedDrag>,
    /// Contact between bodies and within them.
    pub contacts: Contacts,
    /// Warnings found when the world was built (bodies starting interpenetrated).
    pub warnings: Vec<String>,
    x_start: crate::model::Vec3s,
    contact_totals: ContactTotals,
    integrator: Box<dyn Integrator>,
    params: SimParams,
    time: f64,
    steps: u64,
    report: StepReport,
    rotational: bool,
    pickable: Vec<bool>,
    energy_scale: f64,
    halted: Option<Box<BlowUp>>,
    solver: CgSettings,
}

/// Running totals of the contact stage since the world was built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContactTotals {
    /// Steps in which continuous detection found a collision.
    pub ccd_steps: u64,
    /// Steps in which rigid impact zones were needed.
    pub zone_steps: u64,
    /// Steps in which particles had to be frozen (the last resort).
    pub frozen_steps: u64,
    /// Steps in which either fail-safe fired.
    pub failsafe_steps: u64,
    /// Collisions found by continuous detection.
    pub ccd_hits: u64,
}

/// The view of a world that integrators get.
struct WorldSystem<'a> {
    particles: &'a Particles,
    forces: &'a mut [Box<dyn ForceTerm>],
    drag: &'a mut DragSpring,
    constraints: &'a mut [Box<dyn Constraint>],
    contacts: &'a mut Contacts,
    constraint_iterations: u32,
    rotational: bool,
}

impl System for WorldSystem<'_> {
    fn particles(&self) -> &Particles {
        self.particles
    }

    fn rotational(&self) -> bool {
        self.rotational
    }

    fn loads(&mut self, state: &State, t: f64, out: &mut Loads) {
        out.clear(state.len(), self.rotational);
        let ctx = ForceContext { particles: self.particles, state, t };
        for term in self.forces.iter_mut() {
            term.add_forces(&ctx, out);
        }
        self.drag.add_forces(&ctx, out);
    }

    fn jacobian(&mut self, state: &State, t: f64, sink: &mut dyn JacobianSink) {
        let ctx = ForceContext { particles: self.particles, state, t };
        for term in self.forces.iter() {
            term.add_jacobian(&ctx, sink);
        }
        self.drag.add_jacobian(&ctx, sink);
    }

    fn scalar_stiffness(&mut self, state: &State, t: f64, sink: &mut dyn ScalarStiffnessSink) -> bool {
        let ctx = ForceContext { particles: self.particles, state, t };
        let mut any = false;
        for term in self.forces.iter() {
            any |= term.add_scalar_stiffness(&ctx, sink);
        }
        any
    }

    fn project(&mut self, state: &mut State, t: f64, h: f64) {
        let ctx = ConstraintContext { particles: self.particles, t, h };
        for _ in 0..self.constraint_iterations.max(1) {
            for c in self.constraints.iter_mut() {
                c.project(&ctx, state);
            }
        }
    }

    fn coupled_loads(&mut self, state: &State, t: f64, h: f64, out: &mut Loads) {
        let ctx = ConstraintContext { particles: self.particles, t, h };
        for c in self.constraints.iter_mut() {
            c.add_coupled_forces(&ctx, state, out);
        }
        if !self.contacts.surfaces.is_empty() {
            self.contacts.add_coupled_forces(self.particles, state, h, out);
        }
    }

    fn coupled_jacobian(&mut self, state: &State, t: f64, h: f64, sink: &mut dyn JacobianSink) {
        let ctx = ConstraintContext { particles: self.particles, t, h };
        for c in self.constraints.iter_mut() {
            c.add_coupled_jacobian(&ctx, state, sink);
        }
        if !self.contacts.surfaces.is_empty() {
            self.contacts.add_coupled_jacobian(self.particles, state, h, sink);
        }
    }
}

impl World {
    /// Assembles a world; use [`crate::build::WorldBuilder::build`].
    pub(crate) fn new(
        particles: Particles,
        state: State,
        topology: Topology,
        forces: Vec<Box<dyn ForceTerm>>,
        constraints: Vec<Box<dyn Constraint>>,
        mut contacts: Contacts,
        params: SimParams,
    ) -> World {
        let mut constraints = constraints;
        for c in &mut constraints {
            c.prepare(&particles, &contacts.surfaces);
        }
        let mut warnings: Vec<String> = contacts
            .start(&state.x)
            .into_iter()
            .map(|(a, b, depth)| {
                format!("bodies `{a}` and `{b}` start interpenetrating (by about {depth:.3e} m); they do not touch each other until their surfaces are apart")
            })
            .collect();
        // Rigid bodies and the particles they touch: their contact pushes them
        // apart in the first steps.
        for c in &constraints {
            for (a, b, depth) in c.start_overlaps(&particles, &topology, &state) {
                warnings.push(format!(
                    "bodies `{a}` and `{b}` start interpenetrating (by about {depth:.3e} m); their contact pushes them apart in the first steps"
                ));
            }
        }
        let rotational = particles.any_rotational();
        let pickable = topology.surface_particles(state.len());
        let mut world = World {
            integrator: params.integrator.create(params.verlet_drag),
            particles,
            state,
            topology,
            forces,
            drag: DragSpring::default(),
            constraints,
            scripts: Vec::new(),
            contacts,
            warnings,
            x_start: crate::model::Vec3s::default(),
            contact_totals: ContactTotals::default(),
            params,
            time: 0.0,
            steps: 0,
            report: StepReport::default(),
            rotational,
            pickable,
            energy_scale: 0.0,
            halted: None,
            solver: CgSettings::default(),
        };
        world.energy_scale = world.compute_energy_scale();
        world
    }

    /// M (g·D + v₀² + 1 m²/s²) with M the total mass, g = 9.81 m/s², D the bounding
    /// box diagonal and v₀ the fastest initial speed: an energy no well-posed run of
    /// this world comes near [`RUNAWAY_FACTOR`] times.
    fn compute_energy_scale(&self) -> f64 {
        let m = metrics::bounding_box(&self.state.x);
        let diag = (m.1 - m.0).length();
        let v0 = (0..self.state.len()).map(|i| self.state.v.get(i).length_squared()).fold(0.0, f64::max);
        // A world that starts spinning has that much rotational energy to spare
        // (the largest moments times the fastest initial spin, as for the masses).
        let spin = if self.rotational {
            let w0 = (0..self.state.len()).map(|i| self.state.w.get(i).length_squared()).fold(0.0, f64::max);
            self.particles.inertia.iter().map(|i| i.max_element()).sum::<f64>() * w0
        } else {
            0.0
        };
        self.particles.total_mass() * (ENERGY_SCALE_ACCELERATION * diag + v0 + 1.0) + spin
    }

    /// The energy scale used by the runaway check, J.
    #[must_use]
    pub fn energy_scale(&self) -> f64 {
        self.energy_scale
    }

    /// Simulation time, s.
    #[must_use]
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Steps taken.
    #[must_use]
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Stepping parameters.
    #[must_use]
    pub fn params(&self) -> &SimParams {
        &self.params
    }

    /// What the last step's integrator reported.
    #[must_use]
    pub fn last_report(&self) -> StepReport {
        self.report
    }

    /// The blow-up that stopped this world, if any (only a rebuild clears it).
    #[must_use]
    pub fn halted(&self) -> Option<&BlowUp> {
        self.halted.as_deref()
    }

    /// True when some particle rotates.
    #[must_use]
    pub fn rotational(&self) -> bool {
        self.rotational
    }

    /// Sets the time step, s (must be positive and finite).
    pub fn set_dt(&mut self, dt: f64) -> Result<(), ParameterError> {
        if !(dt.is_finite() && dt > 0.0) {
            return Err(ParameterError::Invalid { key: "dt".into(), value: dt, why: "must be positive".into() });
        }
        self.params.dt = dt;
        Ok(())
    }

    /// Switches the integration method.
    pub fn set_integrator(&mut self, kind: IntegratorKind) {
        self.params.integrator = kind;
        self.integrator = kind.create_with(self.params.verlet_drag, self.solver);
    }

    /// Sets the linear-solver settings of implicit integrators (and recreates the
    /// integrator so they take effect).
    pub fn set_solver_settings(&mut self, settings: CgSettings) {
        self.solver = settings;
        self.integrator = self.params.integrator.create_with(self.params.verlet_drag, settings);
    }

    /// The linear-solver settings of implicit integrators.
    #[must_use]
    pub fn solver_settings(&self) -> CgSettings {
        self.solver
    }

    /// Advances the world by one time step. See the module docs for the stages.
    ///
    /// A world large enough for parallel passes, stepped from outside the rayon
    /// pool (a program's main thread), is stepped on one of the pool's threads
    /// (`World::in_pool`); results are the same to the bit either way.
    pub fn step(&mut self) -> Result<StepReport, StepError> {
        self.in_pool(Self::step_here)
    }

    /// Runs `f` on this world on a thread of the current rayon pool when the world
    /// has passes that split into parallel blocks and the caller is not already on
    /// a pool thread; otherwise right here. While `f` runs, the pool's other
    /// threads wait for its passes spinning ([`crate::par::with_hot_helpers`]):
    /// between two passes an idle worker would otherwise go to sleep and have to
    /// be woken for the next (contact bench, two threads against one, 2026-11-28,
    /// calm minutes: symplectic Euler 1.49 → 1.53–1.64 ×, implicit Euler 1.46 →
    /// 1.62–1.74 ×; see docs/performance.md).
    ///
    /// Every parallel pass of a step (a few per stage, two per conjugate-gradient
    /// iteration) called from outside the pool hands its work to the pool and puts
    /// the caller to sleep until it is done: two thread wake-ups per pass. From a
    /// pool thread a pass is a join whose other half the second thread takes from
    /// its queue. Measured on the 64 × 64 crumple with two threads, steps taking
    /// turns in one process (`crumple_phases`-like, 2026-11-28): implicit Euler
    /// 1.10–1.11 × faster with self-collision and 1.20–1.24 × without, symplectic
    /// Euler with self-collision 1.30–1.32 ×.
    fn in_pool<R: Send>(&mut self, f: impl FnOnce(&mut Self) -> R + Send) -> R {
        if self.parallel() && rayon::current_thread_index().is_none() {
            rayon::scope(|_| crate::par::with_hot_helpers(|| f(self)))
        } else {
            self.with_helpers(f)
        }
    }

    /// Whether this world's passes split into parallel blocks on the current
    /// rayon pool.
    fn parallel(&self) -> bool {
        let n = self.state.len();
        rayon::current_num_threads() > 1 && crate::par::block_len(n) < n
    }

    /// Runs `f` on this world with the pool's other threads waiting for its
    /// passes ([`crate::par::with_hot_helpers`]) for as long as `f` runs, when
    /// called on a pool thread and the world has parallel passes; otherwise just
    /// runs `f`. [`World::step`] does this for one step; a loop that steps and
    /// does other work in between (writes frames, reads the state) does it once
    /// around the loop, so the helpers are not set up and ended at every step
    /// (the 64 × 64 crumple on two threads, 2026-11-28: 0.73–0.75 → 0.67–0.69
    /// ms a step).
    pub fn with_helpers<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        if self.parallel() && rayon::current_thread_index().is_some() {
            crate::par::with_hot_helpers(|| f(self))
        } else {
            f(self)
        }
    }

    fn step_here(&mut self) -> Result<StepReport, StepError> {
        if let Some(b) = &self.halted {
            return Err(StepError::Halted(b.clone()));
        }
        let (t, h) = (self.time, self.params.dt);
        // 1. Inputs.
        interact::apply_scripts(&mut self.scripts, &mut self.drag, &self.state, &self.pickable, t);
        if !self.contacts.surfaces.is_empty() {
            crate::par::copy3(&mut self.x_start, &self.state.x);
        }
        // 2. Integrate, 3. project.
        let mut sys = WorldSystem {
            particles: &self.particles,
            forces: &mut self.forces,
            drag: &mut self.drag,
            constraints: &mut self.constraints,
            contacts: &mut self.contacts,
            constraint_iterations: self.params.constraint_iterations,
            rotational: self.rotational,
        };
        let report = self
            .integrator
            .step(&mut sys, &mut self.state, t, h)
            .map_err(|source| StepError::Integrator { step: self.steps + 1, source })?;
        sys.project(&mut self.state, t + h, h);
        // 4. Contact. A runaway integrator is reported before contact sees it:
        // the contact stage's fail-safes (impact zones, freezing) would otherwise
        // stop the exploding particles and hide the blow-up.
        // A healthy state has finite positions, and so had the start of the step:
        // a non-finite start position is carried into the end position by the
        // integration (x1 = x0 + h v, a pin keeps it), so the check covers both
        // and the contact stage need not make its own two passes. (Only a driven
        // pin could overwrite one; contact then works with it, and the check
        // after contact reports what comes of it.)
        let runaway = if self.contacts.surfaces.is_empty() { None } else { self.check_health() };
        if runaway.is_none() {
            let contact = self.contacts.resolve_finite(&self.particles, &self.x_start, &mut self.state, h);
            self.record_contact(&contact);
        }
        // 5. Advance the clock.
        self.steps += 1;
        self.time = t + h;
        self.report = report;
        // 6. Check health.
        if let Some(blow_up) = runaway.or_else(|| self.check_health()) {
            let blow_up = Box::new(BlowUp { step: self.steps, time: self.time, ..blow_up });
            self.halted = Some(blow_up.clone());
            return Err(StepError::BlowUp(blow_up));
        }
        Ok(report)
    }

    /// The world's mutable state as bytes: everything a world freshly built from
    /// the same scene needs to continue bit for bit (see [`crate::checkpoint`]).
    /// A halted world saves as it stands; restoring it does not halt the copy.
    #[must_use]
    pub fn save_state(&self) -> Vec<u8> {
        let mut w = StateWriter::new();
        w.str(STATE_TAG);
        w.usize(self.state.len());
        w.str(self.params.integrator.name());
        w.f64(self.params.dt);
        w.f64(self.params.verlet_drag);
        w.u32(self.params.constraint_iterations);
        w.f64(self.time);
        w.u64(self.steps);
        w.f64(self.energy_scale);
        w.vec3s(&self.state.x);
        w.vec3s(&self.state.v);
        w.quats(&self.state.q);
        w.vec3s(&self.state.w);
        w.bools(&self.particles.pinned);
        w.bools(&self.pickable);
        w.u32(self.report.iterations);
        w.f64(self.report.residual);
        w.bool(self.report.definite_fallback);
        w.u32(self.report.newton_iterations);
        w.f64(self.report.newton_residual);
        w.u32(u32::from(self.report.warm_start_order));
        let t = self.contact_totals;
        for v in [t.ccd_steps, t.zone_steps, t.frozen_steps, t.failsafe_steps, t.ccd_hits] {
            w.u64(v);
        }
        w.f64(self.drag.params.stiffness);
        w.f64(self.drag.params.damping);
        match &self.drag.grab {
            Some(g) => {
                w.bool(true);
                w.usize(g.particle);
                w.vec3(g.cursor);
                w.vec3(g.cursor_velocity);
            }
            None => w.bool(false),
        }
        w.usize(self.scripts.len());
        for s in &self.scripts {
            w.bool(s.done);
            match s.grabbed {
                Some((i, from)) => {
                    w.bool(true);
                    w.usize(i);
                    w.vec3(from);
                }
                None => w.bool(false),
            }
        }
        let params = self.parameters();
        w.usize(params.len());
        for p in &params {
            w.str(&p.key);
            w.f64(p.value);
        }
        let mut inner = StateWriter::new();
        self.integrator.save_state(&mut inner);
        w.bytes(&inner.into_bytes());
        self.contacts.save_state(&mut w);
        w.usize(self.constraints.len());
        for c in &self.constraints {
            let mut inner = StateWriter::new();
            c.save_state(&mut inner);
            w.bytes(&inner.into_bytes());
        }
        w.into_bytes()
    }

    /// Puts state saved by [`World::save_state`] into this world, which must be
    /// built from the same scene (same particles, integrator, parameters' keys).
    /// On error the world is left as it was.
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<(), RestoreError> {
        // Restore into a copy of the plain parts first, so that an error leaves
        // the world untouched; the integrator is swapped in only at the end.
        let mut r = StateReader::new(bytes);
        expect_eq("the state's tag", r.str("tag")?.as_str(), STATE_TAG)?;
        let n = self.state.len();
        expect_eq("the particle count", r.usize("particle count", usize::MAX)?, n)?;
        expect_eq("the integrator", r.str("integrator")?.as_str(), self.params.integrator.name())?;
        let dt = r.f64("dt")?;
        expect_eq("dt", dt.to_bits(), self.params.dt.to_bits()).map_err(|_| RestoreError::Mismatch {
            what: "dt",
            saved: dt.to_string(),
            here: self.params.dt.to_string(),
        })?;
        let verlet_drag = r.f64("Verlet drag")?;
        let constraint_iterations = r.u32("constraint iterations")?;
        let time = r.f64("time")?;
        let steps = r.u64("step count")?;
        let energy_scale = r.f64("energy scale")?;
        let mut state = State::default();
        r.vec3s("positions", Some(n), &mut state.x)?;
        r.vec3s("velocities", Some(n), &mut state.v)?;
        r.quats("orientations", Some(n), &mut state.q)?;
        r.vec3s("angular velocities", Some(n), &mut state.w)?;
        let (mut pinned, mut pickable) = (Vec::new(), Vec::new());
        r.bools("pin flags", Some(n), &mut pinned)?;
        r.bools("pickable flags", Some(n), &mut pickable)?;
        let report = StepReport {
            iterations: r.u32("solver iterations")?,
            residual: r.f64("solver residual")?,
            definite_fallback: r.bool("definite fallback")?,
            newton_iterations: r.u32("Newton iterations")?,
            newton_residual: r.f64("Newton residual")?,
            warm_start_order: u8::try_from(r.u32("warm-start order")?)
                .map_err(|_| RestoreError::Invalid("warm-start order"))?,
            ..StepReport::default()
        };
        let mut totals = [0u64; 5];
        for v in &mut totals {
            *v = r.u64("contact totals")?;
        }
        let drag_params = DragSpringParams { stiffness: r.f64("drag stiffness")?, damping: r.f64("drag damping")? };
        let grab = if r.bool("drag grab")? {
            let particle = r.usize("grabbed particle", n.saturating_sub(1))?;
            Some(crate::force::pointer::Grab {
                particle,
                cursor: r.vec3("drag cursor")?,
                cursor_velocity: r.vec3("drag cursor velocity")?,
            })
        } else {
            None
        };
        expect_eq("the number of scripted drags", r.usize("scripted drags", usize::MAX)?, self.scripts.len())?;
        let mut scripts = Vec::with_capacity(self.scripts.len());
        for _ in 0..self.scripts.len() {
            let done = r.bool("scripted drag progress")?;
            let grabbed = if r.bool("scripted drag grab")? {
                Some((r.usize("scripted drag particle", n.saturating_sub(1))?, r.vec3("scripted drag start")?))
            } else {
                None
            };
            scripts.push((done, grabbed));
        }
        let here = self.parameters();
        expect_eq("the number of live parameters", r.usize("parameters", usize::MAX)?, here.len())?;
        let mut changed = Vec::new();
        for p in &here {
            let key = r.str("parameter name")?;
            expect_eq("a parameter's name", key.as_str(), p.key.as_str())?;
            let value = r.f64("parameter value")?;
            if value.to_bits() != p.value.to_bits() {
                changed.push((key, value));
            }
        }
        let mut integrator = self.params.integrator.create_with(verlet_drag, self.solver);
        let blob = r.bytes("integrator state")?;
        let mut inner = StateReader::new(blob);
        integrator.restore_state(&mut inner)?;
        inner.finish()?;
        let mut contacts = self.contacts.clone();
        contacts.restore_state(&mut r)?;
        expect_eq("the number of constraints", r.usize("constraints", usize::MAX)?, self.constraints.len())?;
        let mut blobs = Vec::with_capacity(self.constraints.len());
        for _ in 0..self.constraints.len() {
            blobs.push(r.bytes("constraint state")?);
        }
        r.finish()?;
        // The constraints' own state, each restored whole or not at all; if one
        // refuses its bytes, those restored before it get their own state back.
        let mut before = Vec::with_capacity(blobs.len());
        for (k, blob) in blobs.iter().enumerate() {
            let mut own = StateWriter::new();
            self.constraints[k].save_state(&mut own);
            before.push(own.into_bytes());
            if let Err(e) = self.constraints[k].restore_state(blob) {
                for (j, own) in before.iter().enumerate().take(k) {
                    self.constraints[j].restore_state(own).expect("a constraint takes back its own state");
                }
                return Err(e);
            }
        }
        // Every check passed: apply.
        for (key, value) in changed {
            self.set_parameter(&key, value).map_err(|_| RestoreError::Invalid("live parameter"))?;
        }
        for (i, &p) in pinned.iter().enumerate() {
            if self.particles.pinned[i] != p {
                self.particles.set_pinned(i, p);
            }
        }
        self.params.verlet_drag = verlet_drag;
        self.params.constraint_iterations = constraint_iterations;
        self.integrator = integrator;
        self.contacts = contacts;
        self.state = state;
        self.pickable = pickable;
        self.time = time;
        self.steps = steps;
        self.energy_scale = energy_scale;
        self.report = report;
        let [ccd_steps, zone_steps, frozen_steps, failsafe_steps, ccd_hits] = totals;
        self.contact_totals = ContactTotals { ccd_steps, zone_steps, frozen_steps, failsafe_steps, ccd_hits };
        self.drag.params = drag_params;
        self.drag.grab = grab;
        for (s, (done, grabbed)) in self.scripts.iter_mut().zip(scripts) {
            s.done = done;
            s.grabbed = grabbed;
        }
        self.halted = None;
        Ok(())
    }

    fn record_contact(&mut self, r: &ContactReport) {
        let t = &mut self.contact_totals;
        t.ccd_steps += u64::from(r.ccd_hits > 0);
        t.zone_steps += u64::from(r.zone_rounds > 0);
        t.frozen_steps += u64::from(r.frozen > 0);
        t.failsafe_steps += u64::from(r.zone_rounds > 0 || r.frozen > 0);
        t.ccd_hits += r.ccd_hits as u64;
    }

    /// What the contact stage did in the last step.
    #[must_use]
    pub fn last_contact(&self) -> ContactReport {
        self.contacts.report()
    }

    /// Contact totals since the world was built (how often each fail-safe fired).
    #[must_use]
    pub fn contact_totals(&self) -> ContactTotals {
        self.contact_totals
    }

    /// Takes `n` steps, stopping at the first error.
    pub fn run(&mut self, n: u64) -> Result<(), StepError> {
        self.in_pool(|world| {
            for _ in 0..n {
                world.step()?;
            }
            Ok(())
        })
    }

    fn check_health(&self) -> Option<BlowUp> {
        let limit = RUNAWAY_FACTOR * self.energy_scale;
        if metrics::healthy(&self.particles, &self.state, limit, self.rotational) {
            return None;
        }
        let (particle, reason) = match self.state.first_non_finite() {
            Some((i, what)) => (i, format!("has a non-finite {what}")),
            None => {
                let ke = |i: usize| 0.5 * self.particles.mass[i] * self.state.v.get(i).length_squared();
                let spin = |i: usize| {
                    if self.rotational {
                        metrics::rotational_energy_bound(&self.particles, &self.state, i)
                    } else {
                        0.0
                    }
                };
                let i = (0..self.state.len()).max_by(|&a, &b| ke(a).total_cmp(&ke(b))).unwrap_or(0);
                let j = (0..self.state.len()).max_by(|&a, &b| spin(a).total_cmp(&spin(b))).unwrap_or(0);
                if spin(j) > ke(i) {
                    (
                        j,
                        format!(
                            "spins at {:.3e} rad/s: its rotational energy {:.3e} J exceeds {RUNAWAY_FACTOR:.0e} times the world's energy scale ({:.3e} J)",
                            self.state.w.get(j).length(),
                            spin(j),
                            self.energy_scale
                        ),
                    )
                } else {
                    (
                        i,
                        format!(
                            "moves at {:.3e} m/s: its kinetic energy {:.3e} J exceeds {RUNAWAY_FACTOR:.0e} times the world's energy scale ({:.3e} J)",
                            self.state.v.get(i).length(),
                            ke(i),
                            self.energy_scale
                        ),
                    )
                }
            }
        };
        let stability = self.stability();
        let kind = self.params.integrator;
        let stable_dt = stability.dt_for(kind);
        let dt = self.params.dt;
        let advice = match stable_dt {
            Some(_) if kind == IntegratorKind::ImplicitEuler => format!(
                "{kind} is stable at any step for linear damped springs, so the cause is non-linear: a spring law that stiffens sharply, a force without a Jacobian (treated explicitly), a collision or driver injecting energy, or an inexact linear solve; reduce dt (now {dt:.3e} s) or tighten cg_tolerance."
            ),
            Some(s) if dt > s => format!(
                "The time step {dt:.3e} s is above the stable estimate {s:.3e} s for {kind} (the stiffest element is too stiff for its mass at this step): reduce dt below {s:.3e} s, soften the springs, or use a more stable integrator."
            ),
            Some(s) => format!(
                "The time step {dt:.3e} s is within the stable estimate {s:.3e} s for {kind}; look for a collision, driver or drag that injects energy, or a spring law that stiffens sharply, and reduce dt."
            ),
            None => format!(
                "{kind} is unstable at any time step without enough damping (its stability region misses the imaginary axis); add damping, reduce dt, or use symplectic-euler, verlet or rk4."
            ),
        };
        Some(BlowUp {
            step: self.steps,
            time: self.time,
            particle,
            body: self.topology.body_of(particle).map(|b| b.name.clone()),
            reason,
            dt,
            stable_dt,
            advice,
        })
    }

    /// Measures energies, momenta, strain, bounds and volume.
    #[must_use]
    pub fn metrics(&self) -> Metrics {
        metrics::measure(metrics::Sources {
            particles: &self.particles,
            state: &self.state,
            topology: &self.topology,
            forces: &self.forces,
            drag: &self.drag,
            time: self.time(),
            step: self.steps(),
            report: self.last_report(),
            contact: self.last_contact(),
            failsafe_steps: self.contact_totals().failsafe_steps,
        })
    }

    /// The stable time-step estimate from the current stiffness and masses.
    #[must_use]
    pub fn stability(&self) -> Stability {
        let ctx = ForceContext { particles: &self.particles, state: &self.state, t: self.time };
        let terms = self.forces.iter().map(|t| t.as_ref() as &dyn ForceTerm);
        stability::estimate(&ctx, terms.chain(std::iter::once(&self.drag as &dyn ForceTerm)))
    }

    /// Pins or frees particle `i` (pinning stops it).
    pub fn set_pinned(&mut self, i: usize, pinned: bool) {
        self.particles.set_pinned(i, pinned);
        if pinned {
            self.state.v.set(i, DVec3::ZERO);
            self.state.w.set(i, DVec3::ZERO);
        }
    }

    /// Particles a user can grab (surface and line vertices).
    #[must_use]
    pub fn pickable(&self) -> &[bool] {
        &self.pickable
    }

    /// Restricts grabbing to `mask` (e.g. a two-layer body's outer layer).
    pub fn set_pickable(&mut self, mask: Vec<bool>) {
        assert_eq!(mask.len(), self.state.len(), "pickable mask must cover every particle");
        self.pickable = mask;
    }

    /// The grabbable particle nearest to `point`.
    #[must_use]
    pub fn pick_point(&self, point: DVec3) -> Option<usize> {
        interact::nearest_particle(&self.state.x, &self.pickable, point)
    }

    /// The grabbable particle under a ray from `origin` along `dir`: the nearest
    /// vertex of the first surface triangle hit, else the particle closest to the
    /// ray within `tolerance` (m).
    #[must_use]
    pub fn pick_ray(&self, origin: DVec3, dir: DVec3, tolerance: f64) -> Option<usize> {
        interact::pick_ray(&self.topology, &self.state.x, &self.pickable, origin, dir, tolerance)
    }

    /// Grabs particle `i` with the drag spring, cursor at `cursor` (m).
    pub fn grab(&mut self, i: usize, cursor: DVec3) {
        self.drag.grab = Some(crate::force::pointer::Grab { particle: i, cursor, cursor_velocity: DVec3::ZERO });
    }

    /// Moves the cursor of the current grab to `cursor` (m) with velocity `velocity`
    /// (m/s); does nothing when nothing is grabbed.
    pub fn move_cursor(&mut self, cursor: DVec3, velocity: DVec3) {
        if let Some(g) = &mut self.drag.grab {
            g.cursor = cursor;
            g.cursor_velocity = velocity;
        }
    }

    /// Releases the grabbed particle.
    pub fn release(&mut self) {
        self.drag.grab = None;
    }

    /// The drag spring a user starts with: [`DragSpringParams::stable_for`] the
    /// lightest particle a drag may take (free, pickable, with mass) at this step.
    #[must_use]
    pub fn starting_drag(&self) -> DragSpringParams {
        let p = &self.particles;
        let lightest = (0..p.len())
            .filter(|&i| self.pickable[i] && !p.pinned[i] && p.mass[i] > 0.0)
            .map(|i| p.mass[i])
            .fold(f64::INFINITY, f64::min);
        DragSpringParams::stable_for(self.params.dt, lightest)
    }

    /// Sets the drag spring's stiffness and damping.
    pub fn set_drag_params(&mut self, params: DragSpringParams) {
        self.drag.params = params;
    }

    /// Every live parameter as (`"<term>.<key>"`, parameter), force terms first,
    /// then the drag spring and the constraints.
    #[must_use]
    pub fn parameters(&self) -> Vec<Parameter> {
        let mut out = Vec::new();
        let mut push = |owner: &str, params: Vec<Parameter>| {
            out.extend(params.into_iter().map(|mut p| {
                p.key = format!("{owner}.{}", p.key);
                p
            }));
        };
        for t in &self.forces {
            push(t.name(), t.parameters());
        }
        push(self.drag.name(), self.drag.parameters());
        for c in &self.constraints {
            push(c.name(), c.parameters());
        }
        out
    }

    /// Sets a parameter by its full key (`"springs.cloth.structural.stiffness"`,
    /// `"gravity.g"`, `"floor.restitution"`, `"drag.stiffness"`).
    pub fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        let unknown = |world: &World| ParameterError::Unknown {
            key: key.to_owned(),
            known: crate::force::known_keys(&world.parameters()),
        };
        // Owner names may hold dots themselves (`cloth.membrane`): the owner is the
        // one whose name, followed by a dot, begins the key (the longest such name).
        let rest_after = |name: &str| key.strip_prefix(name).and_then(|r| r.strip_prefix('.'));
        let longest =
            |names: &mut dyn Iterator<Item = &str>| names.filter(|n| rest_after(n).is_some()).map(str::len).max();
        let best_force = longest(&mut self.forces.iter().map(|t| t.name()));
        let best_constraint = longest(&mut self.constraints.iter().map(|c| c.name()));
        let drag = rest_after(self.drag.name()).map(|_| self.drag.name().len());
        let best = [best_force, drag, best_constraint].into_iter().flatten().max();
        let result = match best {
            None => return Err(unknown(self)),
            Some(len) if best_force == Some(len) => {
                let rest = &key[len + 1..];
                match self.forces.iter().position(|t| t.name().len() == len && rest_after(t.name()).is_some()) {
                    Some(i) => self.forces[i].set_parameter(rest, value),
                    None => return Err(unknown(self)),
                }
            }
            Some(len) if drag == Some(len) => self.drag.set_parameter(&key[len + 1..], value),
            Some(len) => {
                let rest = &key[len + 1..];
                match self.constraints.iter().position(|c| c.name().len() == len && rest_after(c.name()).is_some()) {
                    Some(i) => self.constraints[i].set_parameter(rest, value),
                    None => return Err(unknown(self)),
                }
            }
        };
        // Owners name their keys without the owner prefix; report the full key.
        result.map_err(|e| match e {
            ParameterError::Unknown { .. } => unknown(self),
            ParameterError::Invalid { value, why, .. } => ParameterError::Invalid { key: key.to_owned(), value, why },
        })
    }

    /// Particle pairs joined by any force term (for drawing springs).
    #[must_use]
    pub fn segments(&self) -> Vec<[u32; 2]> {
        let mut out = Vec::new();
        for t in &self.forces {
            t.segments(&mut out);
        }
        out
    }

    /// The first force term of concrete type `T`.
    #[must_use]
    pub fn force_of<T: ForceTerm>(&self) -> Option<&T> {
        self.forces.iter().find_map(|t| (t.as_ref() as &dyn std::any::Any).downcast_ref::<T>())
    }

    /// The first constraint of concrete type `T`.
    #[must_use]
    pub fn constraint_of<T: Constraint>(&self) -> Option<&T> {
        self.constraints.iter().find_map(|c| (c.as_ref() as &dyn std::any::Any).downcast_ref::<T>())
    }

    /// The force term named `name`.
    #[must_use]
    pub fn force(&self, name: &str) -> Option<&dyn ForceTerm> {
        self.forces.iter().find(|t| t.name() == name).map(|t| t.as_ref())
    }

    /// Total forces and torques at the current state (for tests and diagnostics).
    pub fn current_loads(&mut self) -> Loads {
        let mut out = Loads::default();
        let mut sys = WorldSystem {
            particles: &self.particles,
            forces: &mut self.forces,
            drag: &mut self.drag,
            constraints: &mut self.constraints,
            contacts: &mut self.contacts,
            constraint_iterations: 1,
            rotational: self.rotational,
        };
        sys.loads(&self.state, self.time, &mut out);
        out
    }

    /// Adds the total force Jacobian at the current state into `sink`.
    pub fn current_jacobian(&mut self, sink: &mut dyn JacobianSink) {
        let mut sys = WorldSystem {
            particles: &self.particles,
            forces: &mut self.forces,
            drag: &mut self.drag,
            constraints: &mut self.constraints,
            contacts: &mut self.contacts,
            constraint_iterations: 1,
            rotational: self.rotational,
        };
        sys.jacobian(&self.state, self.time, sink);
    }
}
