use glam::DVec3;
use wobble::build::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::constraint::Collider;
use wobble::constraint::collider::{Shape, Surface};
use wobble::force::{AirDrag, Gravity, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::world::SimParams;
fn main() {
    let kind = match std::env::args().nth(1).as_deref() {
        Some("se") => IntegratorKind::SymplecticEuler,
        _ => IntegratorKind::ImplicitEuler,
    };
    let dt: f64 = std::env::args().nth(2).map_or(1e-3, |s| s.parse().unwrap());
    let n = 64;
    let s = SpringParams::linear(600.0, 0.3);
    let cloth = Cloth {
        nx: n,
        ny: n,
        spacing: 0.01,
        origin: DVec3::new(-0.315, 0.25, -0.315),
        u: DVec3::X,
        v: DVec3::Z,
        mass: 0.4,
        structural: s,
        shear: Some(SpringParams::linear(300.0, 0.15)),
        bend: Some(SpringParams::linear(2.0, 0.01)),
        ..Cloth::default()
    };
    let mut b = WorldBuilder::new();
    let h = cloth.build(&mut b, "cloth").unwrap();
    for i in h.first..h.first + n * n {
        let x = b.state.x.get(i);
        let y = 0.25 + 0.06 * (9.0 * x.x).sin() * (7.0 * x.z).cos() + 0.03 * (13.0 * x.z + 1.0).sin();
        b.state.x.set(i, DVec3::new(0.45 * x.x, y, 0.45 * x.z));
    }
    b.add_force(Gravity::default());
    b.add_force(AirDrag { rate: 1.0 });
    b.add_constraint(Collider::new(
        "floor",
        Shape::Plane { point: DVec3::ZERO, normal: DVec3::Y },
        Surface { restitution: 0.0, friction: 0.6 },
    ));
    let mut w = b.build(SimParams { dt, integrator: kind, ..SimParams::default() }).unwrap();
    let g = vec![0; w.topology.triangles.len()];
    for k in 1..=(2.0 / dt) as usize {
        if k == (2.0 / dt) as usize {
            unsafe {
                std::env::set_var("WOBBLE_DBG", "1");
            }
        }
        let x0 = w.state.x.clone();
        w.step().unwrap();
        let c = w.last_contact();
        let bad = wobble::contact::intersect::count_intersections(&w.topology.triangles, &g, &w.state.x, true);
        let vmax = (0..w.state.len()).map(|i| w.state.v.get(i).length()).fold(0.0, f64::max);
        if bad > 0 || k % 500 == 0 {
            println!(
                "{k} bad {bad} vmax {vmax:.3} pairs {} prox {} hits {} zones {} frozen {} unres {} it {}",
                c.pairs,
                c.proximity,
                c.ccd_hits,
                c.zone_rounds,
                c.frozen,
                c.unresolved,
                w.last_report().iterations
            );
        }
        if bad > 0 {
            let pairs = wobble::contact::intersect::intersecting_pairs(&w.topology.triangles, &g, &w.state.x, true);
            let x1 = &w.state.x;
            for (a, bb) in pairs {
                let (ta, tb) = (w.topology.triangles[a], w.topology.triangles[bb]);
                println!("tri {ta:?} vs {tb:?}");
                let mut scratch = Vec::new();
                use wobble::contact::narrow::{PairKind, ccd};
                for (t, u) in [(ta, tb), (tb, ta)] {
                    for &p in &t {
                        let st = [p, u[0], u[1], u[2]];
                        let g0 = st.map(|i| x0.get(i as usize));
                        let g1 = st.map(|i| x1.get(i as usize));
                        let hit = ccd(PairKind::VertexTriangle, &g0, &g1, 1e-4, &mut scratch);
                        let inpairs = w.contacts.pairs().iter().any(|q| q.p == st);
                        println!("  VT {st:?} hit {:?} in pairs {inpairs}", hit.map(|h| h.t));
                    }
                }
                for e in [(ta[0], ta[1]), (ta[1], ta[2]), (ta[2], ta[0])] {
                    for f in [(tb[0], tb[1]), (tb[1], tb[2]), (tb[2], tb[0])] {
                        let st = [e.0, e.1, f.0, f.1];
                        let g0 = st.map(|i| x0.get(i as usize));
                        let g1 = st.map(|i| x1.get(i as usize));
                        let hit = ccd(PairKind::EdgeEdge, &g0, &g1, 1e-4, &mut scratch);
                        let key = |a: u32, b: u32| [a.min(b), a.max(b)];
                        let inpairs = w.contacts.pairs().iter().any(|q| {
                            let (x, y) = (key(q.p[0], q.p[1]), key(q.p[2], q.p[3]));
                            (x == key(e.0, e.1) && y == key(f.0, f.1)) || (y == key(e.0, e.1) && x == key(f.0, f.1))
                        });
                        println!("  EE {st:?} hit {:?} in pairs {inpairs}", hit.map(|h| h.t));
                    }
                }
                let one = wobble::contact::intersect::triangles_intersect(
                    ta.map(|i| x1.get(i as usize)),
                    tb.map(|i| x1.get(i as usize)),
                );
                let zero = wobble::contact::intersect::triangles_intersect(
                    ta.map(|i| x0.get(i as usize)),
                    tb.map(|i| x0.get(i as usize)),
                );
                println!("  intersect at x0 {zero} at x1 {one}");
                for i in ta.iter().chain(tb.iter()) {
                    println!("   p{i}: {:?} -> {:?}", x0.get(*i as usize), x1.get(*i as usize));
                }
            }
            break;
        }
    }
}
