//! Contact experiments (`wobble::contact`): bodies touching each other and
//! themselves, judged by checks written apart from the contact stage.
//!
//! * `contact-self-fold` — a 64 × 64 cloth dropped in a crumple: the independent
//!   triangle–triangle intersection count is 0 after every step, and the cloth ends
//!   at rest.
//! * `contact-stack` — four lattice cubes dropped in a stack: no particle of a cube
//!   ends inside another (winding numbers), nothing penetrates deeper than the
//!   contact thickness, and the stack's height is within 10 % of the sum of the
//!   cubes' own resting heights plus the contact distances.
//! * `contact-balls` — two two-layer pressure balls thrown at each other: they touch,
//!   the closing speed reverses, momentum is conserved, nothing penetrates, and the
//!   volumes recover.
//! * `contact-cost` — the crumple with self-collision on and off: the cost of
//!   contact per step, with implicit Euler (criterion ≤ 2×) and symplectic Euler
//!   (reported, aim ≤ 3×); the two runs take turns in blocks of steps, so that
//!   both are timed on the same machine state.

use std::path::{Path, PathBuf};
use std::time::Instant;

use glam::DVec3;
use wobble::build::WorldBuilder;
use wobble::build::crumple::{CRUMPLE_DRAG, CRUMPLE_SQUEEZE, crumple_world};
use wobble::build::lattice::Lattice;
use wobble::constraint::Collider;
use wobble::constraint::collider::{Shape, Surface};
use wobble::contact::intersect::{count_intersections, winding_number};
use wobble::force::{AirDrag, Gravity, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::world::{SimParams, World};
use wobble_scene::{Scene, Source};

use super::{Experiment, Outcome, write_csv};
use wobble_viz::plot::{Chart, Legend, Series, Style};
use wobble_viz::render::{self, View, camera::Camera};

/// `contact-self-fold`.
pub const SELF_FOLD: Experiment = Experiment {
    name: "contact-self-fold",
    title: "a 64 × 64 cloth dropped in a crumple onto the floor",
    claim: "with self-collision, a cloth crumpled onto itself never ends a step with intersecting triangles (an independent triangle–triangle test after every step) and comes to rest (mean speed < 1 cm/s at the end)",
    run: run_self_fold,
};

/// `contact-stack`.
pub const STACK: Experiment = Experiment {
    name: "contact-stack",
    title: "four soft cubes dropped in a stack",
    claim: "no cube's particle ends inside another cube, no particle ever penetrates another cube deeper than the contact thickness, and the stack settles within 10 % of the sum of the cubes' own resting heights plus the contact distances",
    run: run_stack,
};

/// `contact-balls`.
pub const BALLS: Experiment = Experiment {
    name: "contact-balls",
    title: "two two-layer pressure balls colliding head-on",
    claim: "the balls really touch (smallest gap ≤ 2 × the contact distance, closing speed reverses), linear momentum is conserved within 1e-6 kg m/s, their surfaces never intersect, and each ball's volume is back within 5 % of rest one second after the impact",
    run: run_balls,
};

/// `contact-cost`.
pub const COST: Experiment = Experiment {
    name: "contact-cost",
    title: "the cost of self-collision on a 64 × 64 crumple",
    claim: "with implicit Euler at dt = 1e-3 s, a step with self-collision costs at most 2 × a step without it (symplectic Euler at dt = 1e-4 s reported beside it, aim ≤ 3 ×)",
    run: run_cost,
};

const FOLD_N: usize = 64;
const REST_SPEED: f64 = 0.01;

/// The crumple ([`wobble::build::crumple`]).
fn crumple(kind: IntegratorKind, dt: f64, self_collide: bool) -> Result<World, String> {
    crumple_world(FOLD_N, kind, dt, self_collide).map_err(|e| e.to_string())
}

fn self_intersections(world: &World) -> usize {
    let t = &world.topology;
    let group = vec![0; t.triangles.len()];
    count_intersections(&t.triangles, &group, &world.state.x, true)
}

fn mean_speed(world: &World, r: std::ops::Range<usize>) -> f64 {
    let n = r.len() as f64;
    r.map(|i| world.state.v.get(i).length()).sum::<f64>() / n
}

fn view(camera: Camera) -> View {
    View { camera: Some(camera), width: 480, height: 360, ..View::default() }
}

fn run_self_fold(dir: &Path) -> Result<Outcome, String> {
    const DT: f64 = 1e-3;
    const DURATION: f64 = 3.0;
    let mut world = crumple(IntegratorKind::ImplicitEuler, DT, true)?;
    let camera = Camera {
        position: DVec3::new(0.45, 0.45, 0.55),
        target: DVec3::new(0.0, 0.03, 0.0),
        up: DVec3::Y,
        fov_deg: 40.0,
    };
    let n = world.state.len();
    let mut rows = Vec::new();
    let (mut worst, mut worst_step, mut frames) = (0usize, 0u64, Vec::new());
    let steps = (DURATION / DT).round() as u64;
    for k in 1..=steps {
        world.step().map_err(|e| e.to_string())?;
        let bad = self_intersections(&world);
        if bad > worst {
            (worst, worst_step) = (bad, k);
        }
        let c = world.last_contact();
        rows.push(vec![
            world.time(),
            bad as f64,
            c.pairs as f64,
            c.proximity as f64,
            c.ccd_hits as f64,
            c.zone_rounds as f64,
            c.frozen as f64,
            mean_speed(&world, 0..n),
        ]);
        if [250, 600, steps].contains(&k) {
            let name = format!("fold_{:.2}s.png", world.time());
            render::snapshot(&world, &view(camera), &dir.join(&name))?;
            frames.push(name);
        }
    }
    write_csv(
        &dir.join("fold.csv"),
        &[
            "time_s",
            "intersecting_pairs",
            "candidate_pairs",
            "proximity_contacts",
            "ccd_hits",
            "impact_zone_rounds",
            "frozen_particles",
            "mean_speed_m_per_s",
        ],
        &rows,
    )?;
    Chart::new("Crumpled cloth: contact activity", "time (s)", "count per step")
        .legend(Legend::UpperRight)
        .with(Series::new("proximity contacts", rows.iter().map(|r| (r[0], r[3])).collect(), Style::Line))
        .with(Series::new("continuous-detection hits", rows.iter().map(|r| (r[0], r[4])).collect(), Style::Line))
        .with(Series::new("intersecting triangle pairs", rows.iter().map(|r| (r[0], r[1])).collect(), Style::Line))
        .save(&dir.join("contacts.png"))?;
    let totals = world.contact_totals();
    let end_speed = mean_speed(&world, 0..n);
    let clean = worst == 0;
    let rest = end_speed < REST_SPEED;
    let body = format!(
        "Cloth 64 × 64, spacing 1 cm, 0.4 kg, structural 600 N/m, shear 300 N/m, bend 2 N/m; started at rest squeezed to {CRUMPLE_SQUEEZE} of its size in x and z and rippled (height 0.25 + 0.06 sin 9x cos 7z + 0.03 sin(13z + 1) m over the unsqueezed coordinates); gravity, air drag {CRUMPLE_DRAG}/s, floor (restitution 0, friction 0.6); self-collision with the default thickness; implicit Euler, h = {DT} s, {DURATION} s ({steps} steps).\n\n\
         The intersection count comes from `wobble::contact::intersect` (edge-through-triangle tests on every pair of triangles sharing no vertex), which shares no code with the contact stage's narrow phase; it ran after every step.\n\n\
         | measure | value |\n|---|---|\n| largest intersecting-pair count after any step | {worst}{} |\n| steps with continuous-detection hits | {} |\n| steps needing rigid impact zones | {} |\n| steps needing freezing | {} |\n| mean speed at the end | {end_speed:.2e} m/s (< {REST_SPEED} m/s: {}) |\n\n\
         - no intersection after any step: {}\n- at rest at the end: {}\n\nPictures of the cloth at three times: {}.\n",
        if clean { String::new() } else { format!(" (step {worst_step})") },
        totals.ccd_steps,
        totals.zone_steps,
        totals.frozen_steps,
        if rest { "yes" } else { "no" },
        if clean { "yes" } else { "no" },
        if rest { "yes" } else { "no" },
        frames.join(", "),
    );
    let mut files: Vec<String> = ["fold.csv", "contacts.png"].map(String::from).to_vec();
    files.extend(frames);
    Ok(Outcome { finding: None, passed: clean && rest, body, files })
}

// ---- the stack ----

const CUBE_N: usize = 4;
const CUBE_SPACING: f64 = 0.05;
const STACK_GAP: f64 = 0.02;

fn cube() -> Lattice {
    let s = SpringParams::linear(4000.0, 2.0);
    Lattice {
        n: [CUBE_N; 3],
        spacing: CUBE_SPACING,
        origin: DVec3::ZERO,
        mass: 0.3,
        structural: s,
        shear: Some(s),
        bend: None,
        radius: 0.0,
    }
}

/// `count` cubes stacked with gaps of `STACK_GAP`, on a floor.
fn stack(count: usize) -> Result<World, String> {
    let mut b = WorldBuilder::new();
    let side = (CUBE_N - 1) as f64 * CUBE_SPACING;
    for k in 0..count {
        let mut c = cube();
        // Each cube a little offset and turned so edges do not line up exactly.
        c.origin = DVec3::new(-0.5 * side + 0.01 * k as f64, 0.01 + k as f64 * (side + STACK_GAP), -0.5 * side);
        c.build(&mut b, &format!("cube{k}")).map_err(|e| e.to_string())?;
    }
    b.add_force(Gravity::default());
    b.add_force(AirDrag { rate: 2.0 });
    b.add_constraint(Collider::new(
        "floor",
        Shape::Plane { point: DVec3::ZERO, normal: DVec3::Y },
        Surface { restitution: 0.0, friction: 0.8 },
    ));
    b.build(SimParams { dt: 2e-4, integrator: IntegratorKind::SymplecticEuler, ..SimParams::default() })
        .map_err(|e| e.to_string())
}

/// Deepest penetration (m) of any particle of one cube into another (0 if none),
/// by winding numbers against each other cube's closed surface; the count of
/// particles inside.
fn penetration(world: &World) -> (f64, usize) {
    let t = &world.topology;
    let (mut deepest, mut inside) = (0.0f64, 0usize);
    for a in &t.bodies {
        for b in &t.bodies {
            if a.name == b.name || b.triangles.is_empty() {
                continue;
            }
            let tris = &t.triangles[b.triangles.clone()];
            let (lo, hi) = b.particles.clone().fold((DVec3::INFINITY, DVec3::NEG_INFINITY), |(lo, hi), i| {
                (lo.min(world.state.x.get(i)), hi.max(world.state.x.get(i)))
            });
            for i in a.particles.clone() {
                let p = world.state.x.get(i);
                if p.cmplt(lo).any() || p.cmpgt(hi).any() {
                    continue;
                }
                if winding_number(p, tris, &world.state.x) > 0.5 {
                    inside += 1;
                    let d = tris
                        .iter()
                        .map(|tr| {
                            let [q0, q1, q2] = tr.map(|j| world.state.x.get(j as usize));
                            wobble::contact::narrow::point_triangle(p, q0, q1, q2).0.sqrt()
                        })
                        .fold(f64::INFINITY, f64::min);
                    deepest = deepest.max(d);
                }
            }
        }
    }
    (deepest, inside)
}

fn top_and_bottom(world: &World, body: &str) -> (f64, f64) {
    let r = world.topology.body(body).map(|b| b.particles.clone()).unwrap_or(0..0);
    r.fold((f64::NEG_INFINITY, f64::INFINITY), |(hi, lo), i| {
        let y = world.state.x.get(i).y;
        (hi.max(y), lo.min(y))
    })
}

fn run_stack(dir: &Path) -> Result<Outcome, String> {
    const DURATION: f64 = 3.0;
    // One cube alone: its own resting height.
    let mut single = stack(1)?;
    let steps = (DURATION / single.params().dt).round() as u64;
    single.run(steps).map_err(|e| e.to_string())?;
    let (top1, bottom1) = top_and_bottom(&single, "cube0");
    let h1 = top1 - bottom1;
    let mut world = stack(4)?;
    let contact = world.contacts.surfaces.bodies[0].thickness;
    let mut rows = Vec::new();
    let (mut deepest, mut inside_any) = (0.0f64, 0usize);
    for k in 1..=steps {
        world.step().map_err(|e| e.to_string())?;
        let (d, inside) = penetration(&world);
        deepest = deepest.max(d);
        inside_any = inside_any.max(inside);
        if k % 50 == 0 {
            let (top, _) = top_and_bottom(&world, "cube3");
            rows.push(vec![world.time(), top, d, inside as f64, world.last_contact().proximity as f64]);
        }
    }
    let (_, inside_end) = penetration(&world);
    let (top, _) = top_and_bottom(&world, "cube3");
    // Sum of own heights plus the three contact distances, above the floor offset
    // of the single cube's bottom.
    let expected = bottom1 + 4.0 * h1 + 3.0 * contact;
    let ratio = top / expected;
    write_csv(
        &dir.join("stack.csv"),
        &["time_s", "top_m", "deepest_penetration_m", "particles_inside", "proximity_contacts"],
        &rows,
    )?;
    Chart::new("Stack of four cubes: height of the top", "time (s)", "height (m)")
        .legend(Legend::LowerRight)
        .with(Series::new("top of the stack", rows.iter().map(|r| (r[0], r[1])).collect(), Style::Line))
        .with(Series::new(
            "sum of resting heights + contact distances",
            vec![(0.0, expected), (DURATION, expected)],
            Style::Line,
        ))
        .save(&dir.join("height.png"))?;
    let camera =
        Camera { position: DVec3::new(0.6, 0.5, 0.8), target: DVec3::new(0.0, 0.3, 0.0), up: DVec3::Y, fov_deg: 40.0 };
    render::snapshot(&world, &view(camera), &dir.join("stack.png"))?;
    let settled = (ratio - 1.0).abs() <= 0.1;
    let shallow = deepest <= contact;
    let body = format!(
        "Four cubes of 4 × 4 × 4 particles (spacing 5 cm, 0.3 kg, structural and shear springs 4000 N/m, damping 2 N s/m), dropped from 2 cm gaps onto each other and a floor; gravity, air drag 2/s; contact thickness {contact:.4} m (the default: a tenth of the mean surface edge); symplectic Euler, h = 2e-4 s, {DURATION} s. Penetration is measured independently of the contact stage: a particle is inside another cube when its winding number about that cube's surface exceeds ½, and its depth is its distance to that surface; checked after every step.\n\n\
         | measure | value |\n|---|---|\n| one cube alone at rest: height (top − bottom) | {h1:.4} m, bottom at {bottom1:.4} m |\n| expected top: bottom + 4 heights + 3 contact distances | {expected:.4} m |\n| top of the stack at {DURATION} s | {top:.4} m (ratio {ratio:.3}) |\n| particles inside another cube at the end | {inside_end} |\n| most particles inside at once | {inside_any} |\n| deepest penetration at any step | {deepest:.2e} m (thickness {contact:.2e} m) |\n\n\
         - stack height within 10 %: {}\n- no particle inside another cube at the end: {}\n- penetration never deeper than the thickness: {}\n",
        if settled { "yes" } else { "no" },
        if inside_end == 0 { "yes" } else { "no" },
        if shallow { "yes" } else { "no" },
    );
    Ok(Outcome {
        finding: None,
        passed: settled && inside_end == 0 && shallow,
        body,
        files: ["stack.csv", "height.png", "stack.png"].map(String::from).to_vec(),
    })
}

// ---- the balls ----

/// The scene the experiment runs (also `scenes/contact-balls.toml`).
pub const BALLS_SCENE: &str = include_str!("../../../scenes/contact-balls.toml");

fn run_balls(dir: &Path) -> Result<Outcome, String> {
    let scene = Scene::parse(Source::new("scenes/contact-balls.toml", BALLS_SCENE), PathBuf::from("scenes"))
        .map_err(|e| e.to_string())?;
    let built = scene.build().map_err(|e| e.to_string())?;
    let mut world = built.world;
    let (left, right) = (built.bodies[0].particles.clone(), built.bodies[1].particles.clone());
    let body_of = |name: &str, w: &World| w.topology.body(name).cloned().ok_or(format!("no body {name}"));
    let (lb, rb) = (body_of("left", &world)?, body_of("right", &world)?);
    let volume = |w: &World, b: &wobble::model::Body| w.topology.enclosed_volume(b, &w.state.x).unwrap_or(0.0);
    let (v0l, v0r) = (volume(&world, &lb), volume(&world, &rb));
    let contact = world.contacts.surfaces.contact_distance(0, 1);
    let p0 = world.metrics().momentum;
    let centre =
        |w: &World, r: &std::ops::Range<usize>| r.clone().map(|i| w.state.x.get(i)).sum::<DVec3>() / r.len() as f64;
    let velocity =
        |w: &World, r: &std::ops::Range<usize>| r.clone().map(|i| w.state.v.get(i)).sum::<DVec3>() / r.len() as f64;
    // Outer surfaces only (the topology's triangles are the outer layers).
    let groups: Vec<usize> =
        (0..world.topology.triangles.len()).map(|k| usize::from(!lb.triangles.contains(&k))).collect();
    let gap = |w: &World| {
        let tl = &w.topology.triangles[lb.triangles.clone()];
        let tr = &w.topology.triangles[rb.triangles.clone()];
        let mut best = f64::INFINITY;
        for t in tl {
            for &i in t {
                let p = w.state.x.get(i as usize);
                for u in tr {
                    let [a, b, c] = u.map(|j| w.state.x.get(j as usize));
                    best = best.min(wobble::contact::narrow::point_triangle(p, a, b, c).0.sqrt());
                }
            }
        }
        best
    };
    let dt = world.params().dt;
    let steps = (2.0 / dt).round() as u64;
    let (mut min_gap, mut worst_cross, mut max_dp) = (f64::INFINITY, 0usize, 0.0f64);
    let (mut impact_time, mut reversed) = (None, false);
    let mut rows = Vec::new();
    let mut frames = Vec::new();
    let camera =
        Camera { position: DVec3::new(0.0, 0.9, 1.8), target: DVec3::new(0.0, 0.6, 0.0), up: DVec3::Y, fov_deg: 45.0 };
    for k in 1..=steps {
        world.step().map_err(|e| e.to_string())?;
        let closing = (velocity(&world, &left) - velocity(&world, &right)).x;
        let d = gap(&world);
        if d < min_gap {
            min_gap = d;
        }
        if impact_time.is_none() && world.last_contact().proximity > 0 {
            impact_time = Some(world.time());
        }
        if impact_time.is_some() && closing < 0.0 {
            reversed = true;
        }
        let cross = count_intersections(&world.topology.triangles, &groups, &world.state.x, false);
        worst_cross = worst_cross.max(cross);
        max_dp = max_dp.max((world.metrics().momentum - p0).length());
        if k % 10 == 0 {
            rows.push(vec![
                world.time(),
                d,
                closing,
                volume(&world, &lb) / v0l,
                volume(&world, &rb) / v0r,
                (centre(&world, &right) - centre(&world, &left)).x,
            ]);
        }
        if k % 100 == 0 && frames.len() < 6 {
            let name = format!("balls_{:.1}s.png", world.time());
            render::snapshot(&world, &view(camera), &dir.join(&name))?;
            frames.push(name);
        }
    }
    // Volumes one second after the impact.
    let t1 = impact_time.map(|t| t + 1.0);
    let after = t1.and_then(|t1| rows.iter().find(|r| r[0] >= t1 - 1e-9));
    let (vl, vr) = after.map_or((0.0, 0.0), |r| (r[3], r[4]));
    write_csv(
        &dir.join("balls.csv"),
        &["time_s", "gap_m", "closing_speed_m_per_s", "volume_left_rel", "volume_right_rel", "centre_distance_m"],
        &rows,
    )?;
    Chart::new("Two pressure balls colliding", "time (s)", "gap (m) / relative volume − 1")
        .legend(Legend::UpperRight)
        .with(Series::new("gap between surfaces", rows.iter().map(|r| (r[0], r[1])).collect(), Style::Line))
        .with(Series::new("left volume − 1", rows.iter().map(|r| (r[0], r[3] - 1.0)).collect(), Style::Line))
        .with(Series::new("right volume − 1", rows.iter().map(|r| (r[0], r[4] - 1.0)).collect(), Style::Line))
        .save(&dir.join("balls.png"))?;
    let touched = min_gap <= 2.0 * contact;
    let momentum = max_dp <= 1e-6;
    let recovered = after.is_some() && (vl - 1.0).abs() <= 0.05 && (vr - 1.0).abs() <= 0.05;
    let body = format!(
        "`scenes/contact-balls.toml`: two two-layer pressure spheres (radius 0.3 m, level 2, 0.05 kg per particle, gas nRT = 20 J) thrown at each other at 1.5 m/s each, 3 cm off-centre, no gravity and no floor; contact restitution 0.5, friction 0.3; RK4, h = {dt} s, 2 s. The gap is the smallest distance from a vertex of one outer surface to the other's triangles; intersections are counted by `wobble::contact::intersect` between the two outer surfaces after every step.\n\n\
         | measure | value |\n|---|---|\n| contact distance | {contact:.4} m |\n| smallest gap | {min_gap:.4} m (≤ 2 × contact distance: {}) |\n| first contact | {} |\n| closing speed reversed | {} |\n| largest change of linear momentum | {max_dp:.2e} kg m/s |\n| most intersecting triangle pairs after a step | {worst_cross} |\n| volumes 1 s after impact (relative to rest) | left {vl:.4}, right {vr:.4} |\n\n\
         - touch: {}\n- momentum within 1e-6: {}\n- no intersection: {}\n- volumes within 5 %: {}\n",
        if touched { "yes" } else { "no" },
        impact_time.map_or("never".to_owned(), |t| format!("{t:.3} s")),
        if reversed { "yes" } else { "no" },
        if touched && reversed { "yes" } else { "no" },
        if momentum { "yes" } else { "no" },
        if worst_cross == 0 { "yes" } else { "no" },
        if recovered { "yes" } else { "no" },
    );
    let mut files: Vec<String> = ["balls.csv", "balls.png"].map(String::from).to_vec();
    files.extend(frames);
    Ok(Outcome { finding: None, passed: touched && reversed && momentum && worst_cross == 0 && recovered, body, files })
}

// ---- the cost ----

/// Steps of one world timed before the other world takes its turn.
const COST_BLOCK: u64 = 10;

/// Mean wall time per step (s) of the crumple without and with self-collision
/// over `steps` steps each, after the free fall, and the contact report's phase
/// times (s per step) and the world with contact at the end.
///
/// The two worlds take turns in blocks of [`COST_BLOCK`] steps (without, with,
/// with, without, …), so that a slow minute of a shared machine weighs on both
/// alike: run one after the other, the step without contact measured 8–17 ms in
/// runs of the same code minutes apart, and the ratio swung with it.
fn time_crumples(kind: IntegratorKind, dt: f64, steps: u64) -> Result<(f64, f64, [f64; 3], World), String> {
    let mut worlds = [crumple(kind, dt, false)?, crumple(kind, dt, true)?];
    // Skip the free fall: time the part where the cloth folds.
    let warm = (0.15 / dt).round() as u64;
    for world in &mut worlds {
        world.run(warm).map_err(|e| e.to_string())?;
    }
    let mut phases = [0.0; 3];
    let mut seconds = [0.0; 2];
    let mut done = 0;
    let mut round = 0;
    while done < steps {
        let block = COST_BLOCK.min(steps - done);
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for w in order {
            let world = &mut worlds[w];
            let start = Instant::now();
            // As a run steps: the helper threads wait for the passes all through
            // the block.
            world.with_helpers(|world| {
                for _ in 0..block {
                    world.step().map_err(|e| e.to_string())?;
                    if w == 1 {
                        let c = world.last_contact();
                        phases[0] += c.seconds_broad;
                        phases[1] += c.seconds_narrow;
                        phases[2] += c.seconds_response;
                    }
                }
                Ok::<(), String>(())
            })?;
            seconds[w] += start.elapsed().as_secs_f64();
        }
        done += block;
        round += 1;
    }
    let [_, with] = worlds;
    let per = |s: f64| s / steps as f64;
    Ok((per(seconds[0]), per(seconds[1]), phases.map(per), with))
}

fn run_cost(dir: &Path) -> Result<Outcome, String> {
    let cases = [
        ("implicit-euler", IntegratorKind::ImplicitEuler, 1e-3, 300u64),
        ("symplectic-euler", IntegratorKind::SymplecticEuler, 1e-4, 1500u64),
    ];
    let mut rows = Vec::new();
    let mut table = String::from(
        "| integrator | h (s) | step without contact (ms) | with (ms) | ratio | steps/s with | broad / narrow / response (ms) | pairs (last step) | fail-safe steps |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut ratios = Vec::new();
    for (k, (name, kind, dt, steps)) in cases.into_iter().enumerate() {
        let (off, on, phases, world) = time_crumples(kind, dt, steps)?;
        let ratio = on / off;
        ratios.push(ratio);
        let c = world.last_contact();
        let totals = world.contact_totals();
        table.push_str(&format!(
            "| {name} | {dt:.0e} | {:.3} | {:.3} | {ratio:.2} | {:.0} | {:.3} / {:.3} / {:.3} | {} | {} |\n",
            off * 1e3,
            on * 1e3,
            1.0 / on,
            phases[0] * 1e3,
            phases[1] * 1e3,
            phases[2] * 1e3,
            c.pairs,
            totals.failsafe_steps,
        ));
        rows.push(vec![
            k as f64,
            dt,
            off,
            on,
            ratio,
            phases[0],
            phases[1],
            phases[2],
            c.pairs as f64,
            totals.ccd_hits as f64,
            totals.failsafe_steps as f64,
        ]);
    }
    write_csv(
        &dir.join("cost.csv"),
        &[
            "case",
            "dt_s",
            "step_without_s",
            "step_with_s",
            "ratio",
            "broad_s",
            "narrow_s",
            "response_s",
            "pairs",
            "ccd_hits",
            "failsafe_steps",
        ],
        &rows,
    )?;
    let passed = ratios[0] <= 2.0;
    let body = format!(
        "The crumple of `contact-self-fold` (64 × 64 cloth, 4096 particles), timed after its first 0.15 s of free fall, once with self-collision and once without (the floor acts in both), the two runs taking turns in blocks of {COST_BLOCK} steps so that both see the same machine; wall times on this machine with the default thread pool (case 0: implicit Euler, case 1: symplectic Euler).\n\n{table}\n\
         - implicit Euler: contact costs {:.2} × the step (≤ 2: {})\n- symplectic Euler: {:.2} × (aim ≤ 3: {})\n",
        ratios[0],
        if ratios[0] <= 2.0 { "yes" } else { "no" },
        ratios[1],
        if ratios[1] <= 3.0 { "met" } else { "not met" },
    );
    Ok(Outcome { finding: None, passed, body, files: vec!["cost.csv".into()] })
}
