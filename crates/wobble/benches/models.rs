//! Cost of each model and integrator per step, on the same body sizes.
//!
//! Run with `cargo bench -p wobble --bench models`. For every case it prints the
//! particle count, the element count (springs, triangles, grid constraints),
//! steps per second, particle-steps per second and, for implicit methods, the mean
//! conjugate-gradient iterations per step and the split of a step's time between
//! forces, assembly and the solve. Each figure is the median of
//! `WOBBLE_BENCH_REPS` (default 5) timed runs of about 0.3 s each, on every core
//! (`WOBBLE_BENCH_THREADS=1` for one).
//!
//! Cases: a 32 × 32 cloth (structural, shear and bend springs; 0.62 m, 1 kg) with
//! linear, StVK and cubic springs (000 §5's a1 = 1.04, a2 = 0.96, K1 = 6K, K2 = 2K),
//! under symplectic Euler (h = 1e-4 s) and implicit Euler (h = 2e-3 s); the same
//! cloth as a triangle StVK membrane with bend springs under implicit Euler; a
//! 10 × 10 × 10 improved elastic grid under symplectic Euler and Terzopoulos's
//! semi-implicit step.

use std::time::Instant;

use glam::DVec3;
use wobble::build::cloth::Cloth;
use wobble::build::grid::{ElasticGrid, GridModel};
use wobble::force::spring::CubicLaw;
use wobble::force::{AirDrag, Gravity, Membrane, SpringLaw, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::world::SimParams;
use wobble::{World, WorldBuilder};

const K: f64 = 1000.0;

fn cloth_world(law: Option<SpringLaw>, kind: IntegratorKind, dt: f64) -> World {
    let mut b = WorldBuilder::new();
    let s = SpringParams::linear(K, 0.5).with_law(law.unwrap_or(SpringLaw::Linear));
    let cloth = Cloth {
        nx: 32,
        ny: 32,
        spacing: 0.02,
        structural: s,
        shear: Some(s),
        bend: Some(SpringParams::linear(0.1 * K, 0.05)),
        membrane: law.is_none().then(|| Membrane::from_young(2.0e4, 0.3)),
        ..Cloth::default()
    };
    let h = cloth.build(&mut b, "cloth").expect("cloth");
    b.pin(h.particle(0, 0));
    b.pin(h.particle(31, 0));
    // The models are compared without contact (see benches/contact.rs for it).
    b.set_contact("cloth", wobble::contact::ContactOptions { collide: Some(false), ..Default::default() });
    b.add_force(Gravity::default());
    b.add_force(AirDrag { rate: 0.1 });
    b.build(SimParams { dt, integrator: kind, ..SimParams::default() }).expect("cloth world")
}

fn grid_world(kind: IntegratorKind, dt: f64) -> World {
    let mut b = WorldBuilder::new();
    let g = ElasticGrid {
        n: [10, 10, 10],
        spacing: [0.03; 3],
        model: GridModel::IMPROVED,
        mass: 1.0,
        eta_length: 1.0,
        eta_angle: 0.5,
        eta_sdm: 0.5,
        eta_pillar: 0.5,
        origin: DVec3::new(0.0, 0.5, 0.0),
        ..ElasticGrid::default()
    };
    g.build(&mut b, "grid").expect("grid");
    b.add_force(Gravity::default());
    b.add_force(AirDrag { rate: 1.0 });
    b.build(SimParams { dt, integrator: kind, ..SimParams::default() }).expect("grid world")
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times `make()`'s world: returns steps/s, mean CG iterations per step and the
/// time split (forces, assembly, solve) as fractions of the step.
fn time_case(make: &(dyn Fn() -> World + Send + Sync), reps: usize) -> (f64, f64, [f64; 3]) {
    // Calibrate the step count to ~0.3 s.
    let mut w = make();
    let t0 = Instant::now();
    let mut probe = 0u64;
    while t0.elapsed().as_secs_f64() < 0.05 {
        w.step().expect("step");
        probe += 1;
    }
    let per_step = t0.elapsed().as_secs_f64() / probe as f64;
    let steps = ((0.3 / per_step) as u64).max(5);
    let (mut rates, mut iters) = (Vec::new(), Vec::new());
    let mut split = [0.0; 3];
    for _ in 0..reps {
        let mut w = make();
        w.step().expect("warm-up step");
        let (mut it, mut phases) = (0u64, [0.0; 3]);
        let t = Instant::now();
        for _ in 0..steps {
            w.step().expect("step");
            let r = w.last_report();
            it += u64::from(r.iterations);
            phases[0] += r.seconds_forces;
            phases[1] += r.seconds_jacobian;
            phases[2] += r.seconds_solve;
        }
        let wall = t.elapsed().as_secs_f64();
        rates.push(steps as f64 / wall);
        iters.push(it as f64 / steps as f64);
        for k in 0..3 {
            split[k] += phases[k] / wall / reps as f64;
        }
    }
    (median(&mut rates), median(&mut iters), split)
}

fn main() {
    let reps: usize = std::env::var("WOBBLE_BENCH_REPS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let threads: Option<usize> = std::env::var("WOBBLE_BENCH_THREADS").ok().and_then(|s| s.parse().ok());
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads.unwrap_or(0)).build().expect("thread pool");
    let cubic = CubicLaw::new(K, 1.04, 6.0 * K, 0.96, 2.0 * K, 0.99).expect("000's cubic law");
    let se = IntegratorKind::SymplecticEuler;
    let ie = IntegratorKind::ImplicitEuler;
    type Make = Box<dyn Fn() -> World + Send + Sync>;
    let cases: Vec<(&str, Make)> = vec![
        (
            "cloth 32², linear springs, symplectic Euler",
            Box::new(move || cloth_world(Some(SpringLaw::Linear), se, 1e-4)),
        ),
        ("cloth 32², StVK springs, symplectic Euler", Box::new(move || cloth_world(Some(SpringLaw::StVK), se, 1e-4))),
        (
            "cloth 32², cubic springs, symplectic Euler",
            Box::new(move || cloth_world(Some(SpringLaw::Cubic(cubic)), se, 1e-4)),
        ),
        ("cloth 32², linear springs, implicit Euler", Box::new(move || cloth_world(Some(SpringLaw::Linear), ie, 2e-3))),
        ("cloth 32², StVK springs, implicit Euler", Box::new(move || cloth_world(Some(SpringLaw::StVK), ie, 2e-3))),
        (
            "cloth 32², cubic springs, implicit Euler",
            Box::new(move || cloth_world(Some(SpringLaw::Cubic(cubic)), ie, 2e-3)),
        ),
        ("cloth 32², triangle StVK membrane, implicit Euler", Box::new(move || cloth_world(None, ie, 2e-3))),
        ("grid 10³ improved, symplectic Euler", Box::new(move || grid_world(se, 1e-4))),
        ("grid 10³ improved, semi-implicit", Box::new(move || grid_world(IntegratorKind::SemiImplicit, 1e-4))),
    ];
    println!("wobble model benchmark — {} thread(s), median of {reps} runs\n", pool.current_num_threads());
    println!(
        "{:<52} {:>9} {:>9} {:>11} {:>16} {:>8} {:>22}",
        "case", "particles", "elements", "steps/s", "particle-steps/s", "CG it.", "forces/assembly/solve"
    );
    pool.install(|| {
        for (name, make) in &cases {
            let w = make();
            let n = w.state.len();
            // Springs, triangles and grid constraints (not the summary rows some
            // terms add, such as the springs in vectorised runs).
            let elements: usize = w
                .forces
                .iter()
                .flat_map(|f| f.counts())
                .filter(|(what, _)| !what.contains("vectorised"))
                .map(|(_, c)| c)
                .sum();
            let (rate, iters, split) = time_case(make.as_ref(), reps);
            let split_text = if iters > 0.0 {
                format!("{:.0}% / {:.0}% / {:.0}%", 100.0 * split[0], 100.0 * split[1], 100.0 * split[2])
            } else {
                "—".to_owned()
            };
            println!(
                "{name:<52} {n:>9} {elements:>9} {rate:>11.1} {:>16.3e} {:>8.1} {split_text:>22}",
                rate * n as f64,
                iters
            );
        }
    });
}
