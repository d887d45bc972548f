use glam::DVec3;
use wobble::build::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::force::{Gravity, SpringParams};
use wobble::world::SimParams;
fn cloth(nx: usize, origin: DVec3, spacing: f64) -> Cloth {
    let s = SpringParams::linear(400.0, 0.2);
    Cloth {
        nx,
        ny: nx,
        spacing,
        origin,
        u: DVec3::X,
        v: DVec3::Z,
        mass: 0.2,
        structural: s,
        shear: Some(s),
        bend: Some(SpringParams::linear(40.0, 0.05)),
        ..Cloth::default()
    }
}
fn main() {
    let mut b = WorldBuilder::new();
    let lower = cloth(10, DVec3::new(-0.1, 0.0, -0.1), 0.02).build(&mut b, "lower").unwrap();
    for (i, j) in [(0, 0), (9, 0), (0, 9), (9, 9)] {
        b.pin(lower.particle(i, j));
    }
    cloth(8, DVec3::new(-0.07, 0.05, -0.07), 0.02).build(&mut b, "upper").unwrap();
    b.add_force(Gravity::default());
    let mut w = b
        .build(SimParams {
            dt: 1e-3,
            integrator: wobble::integrate::IntegratorKind::ImplicitEuler,
            ..SimParams::default()
        })
        .unwrap();
    for s in 0..3000 {
        w.step().unwrap();
        if (90..100).contains(&s) {
            let sp =
                |r: std::ops::Range<usize>| r.clone().map(|i| w.state.v.get(i).length()).sum::<f64>() / r.len() as f64;
            let r = w.last_contact();
            let t = &w.topology;
            let g: Vec<usize> = (0..t.triangles.len()).map(|k| if k < 162 { 0 } else { 1 }).collect();
            let pairs = wobble::contact::intersect::intersecting_pairs(&t.triangles, &g, &w.state.x, true);
            println!(
                "{pairs:?} {:?}",
                pairs.iter().map(|&(a, b)| (t.triangles[a], t.triangles[b])).collect::<Vec<_>>()
            );
            println!(
                "{s} lower {:.4} upper {:.4} pairs {} prox {} hits {} zones {} frozen {}",
                sp(0..100),
                sp(100..164),
                r.pairs,
                r.proximity,
                r.ccd_hits,
                r.zone_rounds,
                r.frozen
            );
        }
    }
}
