//! Profiling aid (`cargo run --release -p wobble --example crumple_phases -- [se]`): steps the 64 × 64 crumple (`se` symplectic at 1e-4 s, else implicit at
//! 1e-3 s) and prints the contact stage's phase times.
use wobble::build::crumple::crumple_world;
use wobble::integrate::IntegratorKind;
fn main() {
    let se = std::env::args().nth(1).as_deref() == Some("se");
    let (kind, dt, steps) =
        if se { (IntegratorKind::SymplecticEuler, 1e-4, 1500) } else { (IntegratorKind::ImplicitEuler, 1e-3, 200) };
    let mut w = crumple_world(64, kind, dt, true).expect("crumple");
    w.run((0.15 / dt) as u64).expect("warm-up");
    let (mut b, mut n, mut r, mut rebuilds) = (0.0, 0.0, 0.0, 0);
    let start = std::time::Instant::now();
    for _ in 0..steps {
        w.step().expect("step");
        let c = w.last_contact();
        b += c.seconds_broad;
        n += c.seconds_narrow;
        r += c.seconds_response;
        rebuilds += c.rebuilds;
    }
    let ms = |s: f64| 1e3 * s / steps as f64;
    println!(
        "per step ms: total {:.3} broad {:.3} narrow {:.3} response {:.3}; pair-list rebuilds per step {:.2}",
        ms(start.elapsed().as_secs_f64()),
        ms(b),
        ms(n),
        ms(r),
        rebuilds as f64 / steps as f64
    );
}
