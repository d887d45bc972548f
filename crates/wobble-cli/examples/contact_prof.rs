//! Prints where a scene's steps spend their time in the contact stage.
//! `cargo run --release -p wobble-cli --example contact_prof -- SCENE [STEPS]`
fn main() {
    let path = std::env::args().nth(1).expect("a scene file");
    let scene = wobble_scene::Scene::load(std::path::Path::new(&path)).expect("a valid scene");
    let mut w = scene.build().expect("a scene that builds").world;
    let (mut b, mut n, mut r, mut total) = (0.0, 0.0, 0.0, 0.0);
    let steps: u64 = std::env::args().nth(2).map_or(3000, |s| s.parse().expect("a step count"));
    for _ in 0..steps {
        let t = std::time::Instant::now();
        w.step().expect("a step");
        total += t.elapsed().as_secs_f64();
        let c = w.last_contact();
        b += c.seconds_broad;
        n += c.seconds_narrow;
        r += c.seconds_response;
    }
    let c = w.last_contact();
    let ms = |s: f64| 1e3 * s / steps as f64;
    println!(
        "per step, ms: total {:.3}  broad {:.3}  narrow {:.3}  response {:.3};  last step: pairs {} proximity {}",
        ms(total),
        ms(b),
        ms(n),
        ms(r),
        c.pairs,
        c.proximity
    );
}
