//! Ideal-gas pressure (physics notes §9, `force/pressure.rs`): P = nRT / V with V
//! the exact enclosed volume (divergence theorem; shoelace area in 2D), each face
//! pushing P · area · n̂ shared equally by its vertices, energy U = −nRT ln(V/V_ref).
//!
//! Checked: the divergence-theorem volume against exact polyhedra and its
//! convergence to 4/3 π r³; zero net force and zero net torque on randomly deformed
//! closed surfaces (the gas is internal); f = −∂U/∂x and the Jacobian by central
//! differences; energy conservation with gas and springs; the equilibrium radius of
//! a pressurised octahedron and ring derived in closed form; the virial identity at
//! the equilibrium of every sphere.

#[macro_use]
mod support;

use glam::DVec3;
use support::{DenseJacobian, Rng, comp_mut, flat};
use wobble::build::WorldBuilder;
use wobble::build::ring::Ring;
use wobble::build::sphere::SphereMesh;
use wobble::build::twolayer::{PressureSphere, TwoLayerParams};
use wobble::force::pressure::{ClosedSurface, PressureJacobian, PressureSurface};
use wobble::force::{ForceContext, ForceTerm, Loads, Pressure, SpringNetwork, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::model::{Particles, State, Vec3s};
use wobble::world::{SimParams, World};

/// A closed surface with its particles: a sphere mesh scaled to `radius` with every
/// vertex moved by up to `jitter` (m) at random, or a ring of `n` particles in the
/// x-y plane with random radii in [0.7, 1.3] · radius.
fn deformed_sphere(rng: &mut Rng, mesh: SphereMesh, radius: f64, jitter: f64) -> (ClosedSurface, State, Particles) {
    let (v, t) = mesh.generate();
    let mut state = State::default();
    let mut particles = Particles::default();
    let offset = rng.vec3(1.0);
    for p in v {
        state.push(offset + p * radius + rng.vec3(jitter), rng.vec3(1.0));
        particles.push(rng.range(0.5, 2.0), 0.0);
    }
    (ClosedSurface::Triangles(t), state, particles)
}

fn deformed_ring(rng: &mut Rng, n: usize, radius: f64) -> (ClosedSurface, State, Particles) {
    let mut state = State::default();
    let mut particles = Particles::default();
    let offset = DVec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), 0.0);
    for k in 0..n {
        let th = std::f64::consts::TAU * (k as f64 + rng.range(-0.3, 0.3)) / n as f64;
        let r = radius * rng.range(0.7, 1.3);
        state.push(offset + DVec3::new(r * th.cos(), r * th.sin(), 0.0), DVec3::ZERO);
        particles.push(1.0, 0.0);
    }
    (ClosedSurface::Loop((0..n as u32).map(|k| [k, (k + 1) % n as u32]).collect()), state, particles)
}

fn forces(term: &mut Pressure, state: &State, particles: &Particles) -> Vec3s {
    let mut out = Loads::zeros(state.len());
    term.add_forces(&ForceContext { particles, state, t: 0.0 }, &mut out);
    out.f
}

fn energy(term: &Pressure, state: &State, particles: &Particles) -> f64 {
    term.potential_energy(&ForceContext { particles, state, t: 0.0 })
}

#[test]
fn divergence_theorem_volume_is_exact_for_polyhedra_and_polygons() {
    // The octahedron with vertices at distance r has volume (4/3) r³ exactly; the
    // regular N-gon of circumradius r has area (N/2) r² sin(2π/N). Both formulas and
    // the sums are exact up to rounding. The octahedron is placed off the origin
    // (|offset| ≈ 3.7 m), where the origin-based terms x_a · (x_b × x_c) reach
    // ~|offset|³ ≈ 50 m³ against V ≥ 0.036 m³ and cancel: rounding ~1e-16 · 50 / 0.036
    // ≈ 1e-13 relative, so the tolerance is 1e-12 (1e-14 for the polygons, centred at
    // the origin).
    for r in [0.3, 1.0, 2.5] {
        let (v, t) = SphereMesh::Uniform { level: 0 }.generate();
        let x = Vec3s::from_vecs(&v.iter().map(|p| *p * r + DVec3::new(3.0, -2.0, 1.0)).collect::<Vec<_>>());
        assert_rel!(ClosedSurface::Triangles(t).measure(&x), 4.0 / 3.0 * r * r * r, 1e-12, "octahedron r = {r}");
        for n in [3usize, 10, 64] {
            let mut b = WorldBuilder::new();
            Ring { radius: r, inner_radius: None, count: n, ..Ring::default() }.build(&mut b, "ring").unwrap();
            let area = b.topology.enclosed_volume(&b.topology.bodies[0], &b.state.x).unwrap();
            let exact = 0.5 * n as f64 * r * r * (std::f64::consts::TAU / n as f64).sin();
            assert_rel!(area, exact, 1e-14, "{n}-gon r = {r}");
        }
    }
}

#[test]
fn sphere_volume_converges_to_four_thirds_pi_r_cubed_at_second_order() {
    // An inscribed triangulated sphere misses a shell of thickness ~ r (1 − cos(h/2r))
    // ≈ h²/8r under each face, so the relative volume error falls as h², h the edge
    // length: the uniform sphere's edges halve per level, so its error should fall by
    // 4 per level (log-log slope 2 against h). Measured on levels 2..6 and on
    // latitude-longitude spheres with 2t slices and t = 8..64 stacks; slope
    // tolerance ±0.15 (the h⁴ terms bend the coarse end slightly).
    let exact = 4.0 / 3.0 * std::f64::consts::PI;
    let slope = |meshes: Vec<SphereMesh>| {
        let (mut hs, mut errs) = (Vec::new(), Vec::new());
        let mut last = f64::INFINITY;
        for mesh in meshes {
            let (v, t) = mesh.generate();
            let x = Vec3s::from_vecs(&v);
            let err = (exact - ClosedSurface::Triangles(t.clone()).measure(&x)) / exact;
            assert!(
                err > 0.0 && err < last,
                "{mesh:?}: relative error {err:e} must be positive and fall (last {last:e})"
            );
            last = err;
            let (edges, _) = wobble::build::mesh::edges(&t);
            let h = edges.iter().map(|&[a, b]| v[a as usize].distance(v[b as usize])).fold(0.0, f64::max);
            hs.push(h);
            errs.push(err);
        }
        support::loglog_slope(&hs, &errs)
    };
    let uniform = slope((2..=6).map(|level| SphereMesh::Uniform { level }).collect());
    assert_close!(uniform, 2.0, 0.15, "uniform sphere: volume error order in edge length");
    let latlong = slope([8u32, 16, 32, 64].map(|t| SphereMesh::LatLong { slices: 2 * t, stacks: t }).to_vec());
    assert_close!(latlong, 2.0, 0.15, "latitude-longitude sphere: volume error order");
}

#[test]
fn pressure_forces_sum_to_zero_and_exert_no_torque_on_any_closed_surface() {
    // Σ_faces n₂ = 0 for a closed surface (the vector area of a closed surface
    // vanishes) and Σ_faces (centroid-weighted) x × n₂ = 0 likewise, so the gas
    // exerts no net force or torque on its container, however deformed. The sums
    // cancel terms of size |f|, so the tolerance is 1e-13 of Σ|f| (and of Σ|x||f|
    // for the torque).
    let mut rng = Rng::new(41);
    let mut cases: Vec<(ClosedSurface, State, Particles)> = Vec::new();
    for _ in 0..4 {
        cases.push(deformed_sphere(&mut rng, SphereMesh::Uniform { level: 2 }, 0.5, 0.15));
        cases.push(deformed_sphere(&mut rng, SphereMesh::LatLong { slices: 12, stacks: 7 }, 0.8, 0.2));
        cases.push(deformed_ring(&mut rng, 17, 0.6));
    }
    for (k, (surface, state, particles)) in cases.into_iter().enumerate() {
        let nrt = rng.range(1.0, 100.0);
        let mut term = Pressure::new("p", vec![PressureSurface::new("outer", surface, nrt, &state.x).unwrap()]);
        let f = forces(&mut term, &state, &particles);
        let (mut sum, mut torque, mut scale, mut tscale) = (DVec3::ZERO, DVec3::ZERO, 0.0, 0.0);
        for i in 0..state.len() {
            let (x, fi) = (state.x.get(i), f.get(i));
            sum += fi;
            torque += x.cross(fi);
            scale += fi.length();
            tscale += x.length() * fi.length();
        }
        assert!(scale > 0.0, "case {k}: no force");
        assert!(sum.length() <= 1e-13 * scale, "case {k}: net force {sum:?}, Σ|f| = {scale:e}");
        assert!(torque.length() <= 1e-13 * tscale, "case {k}: net torque {torque:?}, Σ|x||f| = {tscale:e}");
    }
}

#[test]
fn a_surface_wound_inward_is_refused_naming_its_volume() {
    // An inward-wound surface encloses a negative volume: its gas (nRT / V < 0)
    // would pull it in. `reversed` turns a sphere's and a ring's winding over.
    let mut rng = Rng::new(43);
    for (surface, state, _) in
        [deformed_sphere(&mut rng, SphereMesh::Uniform { level: 1 }, 0.5, 0.0), deformed_ring(&mut rng, 9, 0.5)]
    {
        assert!(PressureSurface::new("outer", surface.clone(), 10.0, &state.x).is_ok());
        let inward = surface.reversed();
        let v = inward.measure(&state.x);
        assert!(v < 0.0, "the reversed surface encloses {v}");
        let err = PressureSurface::new("outer", inward, 10.0, &state.x).unwrap_err();
        assert_eq!(err, wobble::force::pressure::SurfaceError::NotOutward(v));
        assert!(err.to_string().contains("wound outward"), "{err}");
    }
}

#[test]
fn pressure_force_is_minus_the_gradient_of_minus_nrt_log_volume() {
    // f_i = −∂U/∂x_i with U = −nRT ln(V/V_ref): central differences of U with step
    // 1e-6 m have truncation error ~1e-12 relative and rounding ~1e-16 · U / 1e-6;
    // tolerance 1e-6 of the largest force component.
    let mut rng = Rng::new(7);
    let cases = [
        deformed_sphere(&mut rng, SphereMesh::Uniform { level: 1 }, 0.5, 0.1),
        deformed_sphere(&mut rng, SphereMesh::LatLong { slices: 8, stacks: 5 }, 0.7, 0.1),
        deformed_ring(&mut rng, 9, 0.5),
    ];
    for (k, (surface, state, particles)) in cases.into_iter().enumerate() {
        let mut term = Pressure::new("p", vec![PressureSurface::new("outer", surface, 20.0, &state.x).unwrap()]);
        let f = flat(&forces(&mut term, &state, &particles));
        let fmax = f.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        let h = 1e-6;
        for i in 0..state.len() {
            for c in 0..3 {
                let mut s = state.clone();
                *comp_mut(&mut s.x, i, c) += h;
                let up = energy(&term, &s, &particles);
                *comp_mut(&mut s.x, i, c) -= 2.0 * h;
                let down = energy(&term, &s, &particles);
                let fd = -(up - down) / (2.0 * h);
                assert_close!(f[3 * i + c], fd, 1e-6 * fmax, "case {k}: particle {i} component {c}");
            }
        }
    }
}

#[test]
fn pressure_jacobian_matches_central_differences_of_the_force() {
    // Exact mode: every block of ∂f/∂x against central differences of the force
    // (step 1e-6 m; tolerance 1e-6 of the largest entry). Local mode: the same minus
    // the rank-one compressibility part −(P/V) g gᵀ, with g = ∂V/∂x also taken by
    // central differences.
    let mut rng = Rng::new(19);
    let cases = [
        deformed_sphere(&mut rng, SphereMesh::Uniform { level: 1 }, 0.5, 0.1),
        deformed_sphere(&mut rng, SphereMesh::LatLong { slices: 7, stacks: 4 }, 0.6, 0.1),
        deformed_ring(&mut rng, 8, 0.5),
    ];
    for (k, (surface, state, particles)) in cases.into_iter().enumerate() {
        let n = state.len();
        let mut ps = PressureSurface::new("outer", surface.clone(), 35.0, &state.x).unwrap();
        assert_eq!(ps.jacobian, PressureJacobian::Exact, "small surfaces default to the exact Jacobian");
        let mut term = Pressure::new("p", vec![ps.clone()]);
        let ctx = ForceContext { particles: &particles, state: &state, t: 0.0 };
        let mut exact = DenseJacobian::new(n);
        term.add_jacobian(&ctx, &mut exact);
        ps.jacobian = PressureJacobian::Local;
        let local_term = Pressure::new("p", vec![ps]);
        let mut local = DenseJacobian::new(n);
        local_term.add_jacobian(&ctx, &mut local);
        let h = 1e-6;
        let mut fd = vec![0.0; 9 * n * n];
        let mut grad = vec![0.0; 3 * n];
        for j in 0..n {
            for c in 0..3 {
                let mut s = state.clone();
                *comp_mut(&mut s.x, j, c) += h;
                let (fu, vu) = (flat(&forces(&mut term, &s, &particles)), surface.measure(&s.x));
                *comp_mut(&mut s.x, j, c) -= 2.0 * h;
                let (fdn, vd) = (flat(&forces(&mut term, &s, &particles)), surface.measure(&s.x));
                for r in 0..3 * n {
                    fd[r * 3 * n + 3 * j + c] = (fu[r] - fdn[r]) / (2.0 * h);
                }
                grad[3 * j + c] = (vu - vd) / (2.0 * h);
            }
        }
        let scale = fd.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        let (p, v) = (35.0 / surface.measure(&state.x), surface.measure(&state.x));
        for r in 0..3 * n {
            for c in 0..3 * n {
                let e = r * 3 * n + c;
                assert_close!(exact.dfdx[e], fd[e], 1e-6 * scale, "case {k}: exact ∂f/∂x entry ({r}, {c})");
                let rank_one = -p / v * grad[r] * grad[c];
                assert_close!(local.dfdx[e], fd[e] - rank_one, 1e-6 * scale, "case {k}: local ∂f/∂x entry ({r}, {c})");
            }
        }
        assert!(exact.dfdv.iter().all(|&x| x == 0.0), "pressure does not depend on velocity");
    }
}

/// A free, undamped world: one pressurised body, no gravity, no colliders.
fn free_world(kind: IntegratorKind, dt: f64, build: impl FnOnce(&mut WorldBuilder)) -> World {
    let mut b = WorldBuilder::new();
    build(&mut b);
    b.build(SimParams { dt, integrator: kind, ..SimParams::default() }).unwrap()
}

fn undamped() -> TwoLayerParams {
    let s = |k: f64| Some(SpringParams::linear(k, 0.0));
    TwoLayerParams {
        structural: s(800.0),
        radius: s(700.0),
        shear_left: s(700.0),
        shear_right: s(700.0),
        containment: None,
        ..TwoLayerParams::default()
    }
}

#[test]
fn energy_with_gas_and_springs_is_conserved_without_damping() {
    // With every damping coefficient zero the system is conservative, so kinetic +
    // spring + gas energy, with the gas's U = −nRT ln(V/V_ref), must stay constant up
    // to RK4's truncation error. A wrong gas energy (e.g. P·V or nRT/V) would drift
    // by the gas's energy change, which here is ~10 % of the total. RK4 at h = 1e-4 s
    // (30× below the stability limit) over 1 s: drift below 1e-7 of the energy
    // exchanged.
    let mut rng = Rng::new(3);
    for two_layers in [false, true] {
        let mut w = free_world(IntegratorKind::Rk4, 1e-4, |b| {
            PressureSphere {
                inner_radius: two_layers.then_some(0.4),
                params: TwoLayerParams { pressure: 60.0, inner_pressure: 10.0, ..undamped() },
                ..PressureSphere::default()
            }
            .build(b, "ball")
            .unwrap();
            for i in 0..b.particle_count() {
                b.state.v.set(i, rng.vec3(0.5));
            }
        });
        let e0 = w.metrics();
        let mut exchanged: f64 = 0.0;
        for _ in 0..10_000 {
            w.step().unwrap();
            exchanged = exchanged.max((w.metrics().kinetic - e0.kinetic).abs());
        }
        let e1 = w.metrics();
        assert!(exchanged > 0.1 * e0.kinetic.max(1e-3), "the body must actually oscillate");
        assert_close!(e1.total, e0.total, 1e-7 * exchanged, "two layers: {two_layers}: total energy");
    }
}

/// Runs `w` until it is at rest (every speed below 1e-12 m/s) or `max_steps`.
fn settle(w: &mut World, max_steps: usize) {
    for _ in 0..max_steps {
        w.step().unwrap();
        if (0..w.state.len()).all(|i| w.state.v.get(i).length() < 1e-12) {
            return;
        }
    }
    panic!("did not come to rest in {max_steps} steps");
}

#[test]
fn pressurised_octahedron_settles_at_the_derived_equilibrium_radius() {
    // A single-layer uniform sphere of level 0 is an octahedron: 6 vertices at
    // distance R from the centre, 12 edges of length √2 R, 8 equilateral faces of
    // area (√3/2) R². By symmetry it inflates uniformly. At a vertex, say (R, 0, 0):
    //
    // * spring tension: four edges, each T = k (√2 R − √2 R₀), pulling along
    //   (−R, ±R, 0)/(√2 R) and (−R, 0, ±R)/(√2 R), whose radial component is −1/√2:
    //   inward force 4 T / √2 = 4 k (R − R₀);
    // * gas: V = (4/3) R³, P = nRT / V = 3 nRT / (4 R³); each of the four faces at
    //   the vertex gives a third of P · (√3/2) R² along its normal, whose radial
    //   component is 1/√3: outward force 4 · P R² / 6 = nRT / (2 R).
    //
    // Balance: 4 k (R − R₀) = nRT / (2R), i.e. R (R − R₀) = nRT / (8k), so
    // R = (R₀ + √(R₀² + nRT/(2k))) / 2. Damped to rest (speeds < 1e-12 m/s); the
    // radius then matches to 1e-9 relative.
    for (r0, nrt, k) in [(0.5, 20.0, 800.0), (0.3, 50.0, 300.0), (1.0, 5.0, 2000.0)] {
        let mut w = free_world(IntegratorKind::Rk4, 2e-3, |b| {
            PressureSphere {
                radius: r0,
                inner_radius: None,
                mesh: SphereMesh::Uniform { level: 0 },
                params: TwoLayerParams {
                    structural: Some(SpringParams::linear(k, 5.0)),
                    pressure: nrt,
                    ..TwoLayerParams::default()
                },
                ..PressureSphere::default()
            }
            .build(b, "octahedron")
            .unwrap();
        });
        settle(&mut w, 200_000);
        let expected = 0.5 * (r0 + (r0 * r0 + nrt / (2.0 * k)).sqrt());
        for i in 0..6 {
            assert_rel!(w.state.x.get(i).length(), expected, 1e-9, "R0 = {r0}, nRT = {nrt}, k = {k}: vertex {i}");
        }
    }
}

#[test]
fn pressurised_ring_settles_at_the_derived_equilibrium_radius() {
    // A single-layer ring of N particles stays a regular N-gon by symmetry. With
    // edge L = 2R sin(π/N) and area A = (N/2) R² sin(2π/N), the energy is
    // E(R) = ½ k N (L − L₀)² − nRT ln A, and dE/dR = 0 gives
    // k N (L − L₀) · 2 sin(π/N) = 2 nRT / R, i.e. 4 k N sin²(π/N) R (R − R₀) = 2 nRT.
    // Tolerance 1e-9 relative at rest, as for the octahedron.
    for (n, r0, nrt, k) in [(10usize, 0.5, 20.0, 800.0), (6, 0.2, 3.0, 500.0), (24, 1.0, 100.0, 800.0)] {
        let mut w = free_world(IntegratorKind::Rk4, 2e-3, |b| {
            Ring {
                radius: r0,
                inner_radius: None,
                count: n,
                params: TwoLayerParams {
                    structural: Some(SpringParams::linear(k, 5.0)),
                    pressure: nrt,
                    ..TwoLayerParams::default()
                },
                ..Ring::default()
            }
            .build(b, "ring")
            .unwrap();
        });
        settle(&mut w, 200_000);
        let s2 = (std::f64::consts::PI / n as f64).sin().powi(2);
        let c = 2.0 * nrt / (4.0 * k * n as f64 * s2);
        let expected = 0.5 * (r0 + (r0 * r0 + 4.0 * c).sqrt());
        for i in 0..n {
            assert_rel!(w.state.x.get(i).length(), expected, 1e-9, "N = {n}, R0 = {r0}: particle {i}");
        }
    }
}

#[test]
fn every_pressurised_sphere_at_rest_satisfies_the_virial_identity() {
    // At any equilibrium Σ_i x_i · f_i = 0. The gas's part is P Σ_i x_i · ∂V/∂x_i =
    // 3 P V = 3 nRT (V is homogeneous of degree 3 in the positions); a spring's part
    // is −T L with T = k (L − L₀) its tension. So Σ_springs k (L − L₀) L = 3 nRT
    // exactly, whatever the mesh, even where the inflation is not uniform (kernel
    // vertices of the subdivided octahedron bulge). The tensions are computed from
    // the springs' rest lengths, independently of the force code. Tolerance 1e-8
    // relative at rest.
    let (nrt, k) = (20.0, 800.0);
    for mesh in [SphereMesh::Uniform { level: 2 }, SphereMesh::LatLong { slices: 12, stacks: 6 }] {
        let mut b = WorldBuilder::new();
        PressureSphere {
            inner_radius: None,
            mesh,
            params: TwoLayerParams {
                structural: Some(SpringParams::linear(k, 5.0)),
                pressure: nrt,
                ..TwoLayerParams::default()
            },
            ..PressureSphere::default()
        }
        .build(&mut b, "ball")
        .unwrap();
        let springs = SpringNetwork::new(&b.springs, b.particle_count()).unwrap();
        let mut w = b.build(SimParams { dt: 2e-3, integrator: IntegratorKind::Rk4, ..SimParams::default() }).unwrap();
        settle(&mut w, 400_000);
        let virial: f64 = (0..springs.len())
            .map(|s| {
                let (a, c) = springs.ends(s);
                let l = w.state.x.get(a).distance(w.state.x.get(c));
                springs.stiffness(s) * (l - springs.rest_length(s)) * l
            })
            .sum();
        assert_rel!(virial, 3.0 * nrt, 1e-8, "{mesh:?}: Σ T L against 3 nRT");
        // The uniform sphere does not inflate uniformly: its six kernel vertices
        // (four springs each) bulge beyond the rest (six springs), as 004 §3.5.3 says.
        if let SphereMesh::Uniform { .. } = mesh {
            // The kernel vertices: the six with four springs.
            let mut valence = vec![0; w.state.len()];
            for s in 0..springs.len() {
                let (a, c) = springs.ends(s);
                valence[a] += 1;
                valence[c] += 1;
            }
            let r: Vec<f64> = (0..w.state.len()).map(|i| w.state.x.get(i).length()).collect();
            let (kernel, rest): (Vec<usize>, Vec<usize>) = (0..r.len()).partition(|&i| valence[i] == 4);
            assert_eq!(kernel.len(), 6, "the octahedron's six vertices keep four springs");
            let rest_mean = rest.iter().map(|&i| r[i]).sum::<f64>() / rest.len() as f64;
            assert!(
                kernel.iter().all(|&i| r[i] > rest_mean),
                "kernel radii {:?} vs mean of the rest {rest_mean}",
                kernel.iter().map(|&i| r[i]).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn pressure_stiffness_bound_is_above_the_largest_eigenvalue() {
    // The stable-step estimate (stability.rs) needs, per particle, a Gershgorin row
    // bound of M^{-1/2} K M^{-1/2}; its maximum must be at least the spectral radius
    // of that matrix (K = ∂f/∂x, symmetric here: the Hessian of −U, checked to 1e-9).
    // The spectral radius is estimated by 500 power iterations on the dense exact
    // Jacobian; for a symmetric matrix ‖Mv‖/‖v‖ never exceeds it, and 500 iterations
    // bring it within a fraction of a per cent for these 10–30 particle surfaces.
    let mut rng = Rng::new(29);
    let cases = [
        deformed_sphere(&mut rng, SphereMesh::Uniform { level: 1 }, 0.5, 0.1),
        deformed_sphere(&mut rng, SphereMesh::LatLong { slices: 8, stacks: 5 }, 0.4, 0.05),
        deformed_ring(&mut rng, 10, 0.5),
    ];
    for (k, (surface, state, particles)) in cases.into_iter().enumerate() {
        let n = state.len();
        let term = Pressure::new("p", vec![PressureSurface::new("outer", surface, 80.0, &state.x).unwrap()]);
        let ctx = ForceContext { particles: &particles, state: &state, t: 0.0 };
        let mut jac = DenseJacobian::new(n);
        term.add_jacobian(&ctx, &mut jac);
        let w: Vec<f64> = (0..3 * n).map(|r| particles.inv_mass[r / 3].sqrt()).collect();
        let m = |r: usize, c: usize| jac.dfdx[r * 3 * n + c] * w[r] * w[c];
        for r in 0..3 * n {
            for c in 0..r {
                assert_close!(m(r, c), m(c, r), 1e-9 * m(r, r).abs().max(1.0), "case {k}: K not symmetric");
            }
        }
        let mut v: Vec<f64> = (0..3 * n).map(|_| rng.range(-1.0, 1.0)).collect();
        let mut lambda = 0.0;
        for _ in 0..500 {
            let next: Vec<f64> = (0..3 * n).map(|r| (0..3 * n).map(|c| m(r, c) * v[c]).sum()).collect();
            let norm = next.iter().map(|x| x * x).sum::<f64>().sqrt();
            lambda = norm / v.iter().map(|x| x * x).sum::<f64>().sqrt();
            v = next.iter().map(|x| x / norm).collect();
        }
        let (mut k_row, mut c_row) = (vec![0.0; n], vec![0.0; n]);
        term.add_stiffness_bound(&ctx, &mut k_row, &mut c_row);
        let bound = k_row.iter().copied().fold(0.0, f64::max);
        assert!(bound >= lambda, "case {k}: bound {bound:e} below the spectral radius {lambda:e}");
        assert!(c_row.iter().all(|&c| c == 0.0), "the gas has no damping");
    }
}
