//! Build a world in code — no scene file — run it, and read its measurements.
//!
//!     cargo run --release -p wobble --example hanging_cloth
//!
//! A horizontal 20 × 20 cloth held by two corners falls onto a sphere; every 0.25 s the example
//! prints the time, the energies, the largest spring strain and the lowest point.

use glam::DVec3;
use wobble::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::constraint::collider::Surface;
use wobble::constraint::{Collider, Shape};
use wobble::force::{Gravity, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::world::SimParams;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut b = WorldBuilder::new();
    let cloth = Cloth {
        nx: 20,
        ny: 20,
        spacing: 0.03,
        origin: DVec3::new(-0.285, 1.2, -0.285),
        v: DVec3::Z, // rows along x, columns along z: the cloth starts horizontal
        mass: 0.3,
        structural: SpringParams::linear(500.0, 0.2),
        shear: Some(SpringParams::linear(250.0, 0.1)),
        bend: Some(SpringParams::linear(20.0, 0.01)),
        ..Cloth::default()
    };
    let h = cloth.build(&mut b, "cloth")?;
    b.pin(h.particle(0, 0));
    b.pin(h.particle(19, 0));
    b.add_force(Gravity::default());
    let ball = Shape::Sphere { center: DVec3::new(0.0, 0.8, 0.1), radius: 0.15 };
    b.add_constraint(Collider::new("ball", ball, Surface { restitution: 0.0, friction: 0.4 }));
    let mut world =
        b.build(SimParams { dt: 2e-4, integrator: IntegratorKind::SymplecticEuler, ..SimParams::default() })?;

    let stable = world.stability().dt_for(IntegratorKind::SymplecticEuler).unwrap_or(f64::INFINITY);
    println!("{} particles; time step {} s (stable estimate {stable:.2e} s)", world.state.len(), world.params().dt);
    println!(
        "{:>6} {:>12} {:>12} {:>12} {:>10} {:>10}",
        "t (s)", "kinetic (J)", "potential", "total", "max strain", "lowest y"
    );
    for _ in 0..8 {
        world.run(1250)?;
        let m = world.metrics();
        println!(
            "{:>6.2} {:>12.5} {:>12.5} {:>12.5} {:>10.4} {:>10.4}",
            m.time, m.kinetic, m.potential, m.total, m.strain_max, m.bbox_min.y
        );
    }
    Ok(())
}
