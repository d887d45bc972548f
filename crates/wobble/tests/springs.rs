//! Linear springs with relative-velocity damping (physics notes §1,
//! `force/spring/`):
//!
//! f_a = [ k (r − L) + c (v_b − v_a)·n ] n,  f_b = −f_a,  n = (x_b − x_a)/r,
//! E = ½ k (r − L)².
//!
//! Checked against the formula itself, against central differences of the energy
//! (f = −∂E/∂x) and of the force (the Jacobian blocks), and the vectorised kernel
//! against the plain reference loop and across instruction sets.

#[macro_use]
mod support;

use glam::{DMat3, DVec3};
use support::{DenseJacobian, Rng, comp_mut, flat, pool};
use wobble::build::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::force::spring::{Kernel, spring_blocks};
use wobble::force::{ForceContext, ForceTerm, Loads, SpringKind, SpringLaw, SpringNetwork, SpringParams, SpringSet};
use wobble::integrate::IntegratorKind;
use wobble::model::{Particles, State, Vec3s};
use wobble::world::SimParams;

/// `n` particles at random places in the unit cube with random velocities, and
/// `springs` springs between random distinct pairs. Rest lengths are 0.6–1.4 times
/// the current distance (so springs are both stretched and compressed), k in
/// [10, 1000] N/m, c in [0, 5] N s/m. Random pairs have random index offsets, so
/// (with overwhelming probability, and asserted by the callers that need it) no eight
/// of them form a run: they all take the scattered path of the kernel.
fn random_graph(rng: &mut Rng, n: usize, springs: usize) -> (SpringSet, State, Particles) {
    let mut state = State::default();
    let mut particles = Particles::default();
    for _ in 0..n {
        state.push(DVec3::new(rng.uniform(), rng.uniform(), rng.uniform()), rng.vec3(1.0));
        particles.push(rng.range(0.5, 2.0), 0.0);
    }
    let mut set = SpringSet::new();
    let g = set.group("graph");
    for _ in 0..springs {
        let a = rng.below(n);
        let mut b = rng.below(n);
        while b == a {
            b = rng.below(n);
        }
        let d = state.x.get(a).distance(state.x.get(b));
        let params = SpringParams::linear(rng.range(10.0, 1000.0), rng.range(0.0, 5.0));
        set.push(a, b, d * rng.range(0.6, 1.4), params, SpringKind::Structural, g);
    }
    (set, state, particles)
}

/// Spring forces from the plain reference loop.
fn reference_forces(net: &SpringNetwork, state: &State) -> Vec3s {
    let mut f = Vec3s::zeros(state.len());
    net.add_forces_reference(state, &mut f);
    f
}

#[test]
fn linear_spring_force_matches_hookes_law_with_damping() {
    // Notes §1, written from the formula, not from the engine: f_i = −[k (r − L) +
    // c (v_ij · n)] n with n = (x_i − x_j)/r, f_j = −f_i. Both sides evaluate the
    // same few operations in a different order, so they agree to a few ulps of the
    // force magnitude: tolerance 1e-13 relative.
    let mut rng = Rng::new(11);
    for case in 0..50 {
        let (xi, xj) = (rng.vec3(1.0), rng.vec3(1.0));
        let (vi, vj) = (rng.vec3(2.0), rng.vec3(2.0));
        let (k, c) = (rng.range(1.0, 1000.0), rng.range(0.0, 10.0));
        let rest = xi.distance(xj) * rng.range(0.5, 1.5);
        let mut set = SpringSet::new();
        let g = set.group("one");
        set.push(0, 1, rest, SpringParams::linear(k, c), SpringKind::Structural, g);
        let net = SpringNetwork::new(&set, 2).unwrap();
        let mut st = State::default();
        st.push(xi, vi);
        st.push(xj, vj);
        let f = reference_forces(&net, &st);
        let r = xi.distance(xj);
        let n = (xi - xj) / r;
        let expected_i = -(k * (r - rest) + c * (vi - vj).dot(n)) * n;
        let scale = k * (r - rest).abs() + c * (vi - vj).length();
        assert_vec_close!(f.get(0), expected_i, 1e-13 * scale, "case {case}: force on i");
        assert_vec_close!(f.get(1), -expected_i, 1e-13 * scale, "case {case}: force on j (Newton's third law)");
        // The stored energy ½ k (r − L)².
        let mut particles = Particles::default();
        particles.push(1.0, 0.0);
        particles.push(1.0, 0.0);
        let e = net.potential_energy(&ForceContext { particles: &particles, state: &st, t: 0.0 });
        assert_rel!(e, 0.5 * k * (r - rest) * (r - rest), 1e-14, "case {case}: energy ½k(r−L)²");
    }
}

#[test]
fn spring_force_is_negative_gradient_of_energy() {
    // f = −∂E/∂x, by central differences with h = 1e-6 (positions are O(1) m, so
    // 1e-6 relative). The truncation error is h² E''' / 6 ~ 1e-12 · k and the
    // rounding error ε E / h ~ 2e-16 · 1e4 J / 1e-6 m ~ 2e-6 N against forces of
    // ~1e2–1e3 N; tolerance 1e-6 of the largest force component. Velocities are
    // zero: the damping force is not conservative and vanishes there.
    let mut rng = Rng::new(3);
    let (set, mut state, particles) = random_graph(&mut rng, 12, 40);
    state.v.fill(DVec3::ZERO);
    let net = SpringNetwork::new(&set, 12).unwrap();
    let f = flat(&reference_forces(&net, &state));
    let fmax = f.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let energy = |s: &State| net.potential_energy(&ForceContext { particles: &particles, state: s, t: 0.0 });
    let h = 1e-6;
    let mut worst: f64 = 0.0;
    for i in 0..state.len() {
        for c in 0..3 {
            let mut plus = state.clone();
            *comp_mut(&mut plus.x, i, c) += h;
            let mut minus = state.clone();
            *comp_mut(&mut minus.x, i, c) -= h;
            let fd = -(energy(&plus) - energy(&minus)) / (2.0 * h);
            let err = (fd - f[3 * i + c]).abs();
            worst = worst.max(err / fmax);
            assert_close!(f[3 * i + c], fd, 1e-6 * fmax, "particle {i} axis {c}: f vs −∂E/∂x (max |f| = {fmax:.3e})");
        }
    }
    println!("f = −∂E/∂x: worst error {worst:.2e} of max |f|");
}

/// Central differences of the reference force with respect to x (`wrt_x`) or v,
/// as a dense 3n × 3n row-major matrix.
fn fd_jacobian(net: &SpringNetwork, state: &State, wrt_x: bool, h: f64) -> Vec<f64> {
    let n = state.len();
    let mut jac = vec![0.0; 9 * n * n];
    for j in 0..n {
        for c in 0..3 {
            let mut plus = state.clone();
            let mut minus = state.clone();
            if wrt_x {
                *comp_mut(&mut plus.x, j, c) += h;
                *comp_mut(&mut minus.x, j, c) -= h;
            } else {
                *comp_mut(&mut plus.v, j, c) += h;
                *comp_mut(&mut minus.v, j, c) -= h;
            }
            let (fp, fm) = (flat(&reference_forces(net, &plus)), flat(&reference_forces(net, &minus)));
            for row in 0..3 * n {
                jac[row * 3 * n + 3 * j + c] = (fp[row] - fm[row]) / (2.0 * h);
            }
        }
    }
    jac
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}

#[test]
fn spring_jacobian_dfdx_matches_finite_differences_at_zero_relative_velocity() {
    // ∂f/∂x from `SpringNetwork::add_jacobian` against central differences of the
    // force (h = 1e-6 m). The engine deliberately omits the position derivative of
    // the damping term c ((v_b − v_a)·n) n (Baraff–Witkin; it keeps the matrix
    // symmetric), so the comparison is made where that derivative vanishes: every
    // particle moves with the same velocity u ≠ 0 (zero relative velocity — a rigid
    // translation, under which the damping force is zero and stays zero).
    // Error budget: truncation h² k/r² ~ 1e-9, rounding ε |f| / h ~ 2e-16 · 500 /
    // 1e-6 ~ 1e-7, against entries up to ~1e3 N/m: tolerance 1e-6 of the largest
    // entry.
    let mut rng = Rng::new(5);
    let (set, mut state, particles) = random_graph(&mut rng, 10, 30);
    let u = DVec3::new(0.3, -1.1, 0.7);
    state.v.fill(u);
    let net = SpringNetwork::new(&set, 10).unwrap();
    let mut dense = DenseJacobian::new(10);
    net.add_jacobian(&ForceContext { particles: &particles, state: &state, t: 0.0 }, &mut dense);
    let fd = fd_jacobian(&net, &state, true, 1e-6);
    let scale = max_abs(&fd);
    let worst = dense.dfdx.iter().zip(&fd).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    println!("∂f/∂x: worst |J − J_fd| = {worst:.3e} against max |J_fd| = {scale:.3e}");
    for (e, (a, b)) in dense.dfdx.iter().zip(&fd).enumerate() {
        assert_close!(*a, *b, 1e-6 * scale, "∂f/∂x entry ({}, {})", e / 30, e % 30);
    }
    // The matrix is symmetric (it is the Hessian of −E).
    for r in 0..30 {
        for c in 0..30 {
            assert_close!(
                dense.dfdx[r * 30 + c],
                dense.dfdx[c * 30 + r],
                1e-12 * scale,
                "∂f/∂x symmetry at ({r}, {c})"
            );
        }
    }
}

#[test]
fn spring_jacobian_dfdv_matches_finite_differences() {
    // ∂f/∂v against central differences in v. The force is linear in v, so the
    // differences are exact up to rounding (ε |f| / h ~ 1e-7 for h = 1e-6): tolerance
    // 1e-6 of the largest entry (c up to 5 N s/m). Random relative velocities.
    let mut rng = Rng::new(6);
    let (set, state, particles) = random_graph(&mut rng, 10, 30);
    let net = SpringNetwork::new(&set, 10).unwrap();
    let mut dense = DenseJacobian::new(10);
    net.add_jacobian(&ForceContext { particles: &particles, state: &state, t: 0.0 }, &mut dense);
    let fd = fd_jacobian(&net, &state, false, 1e-6);
    let scale = max_abs(&fd);
    assert!(scale > 1.0, "the test needs damping: max |∂f/∂v| = {scale}");
    for (e, (a, b)) in dense.dfdv.iter().zip(&fd).enumerate() {
        assert_close!(*a, *b, 1e-6 * scale, "∂f/∂v entry ({}, {})", e / 30, e % 30);
    }
}

#[test]
fn spring_blocks_match_notes_formula_and_omit_exactly_the_damping_position_derivative() {
    // Single spring, first end a. Notes §1: ∂f_a/∂x_a = −k [(1 − L/r)(I − n nᵀ) +
    // n nᵀ] and ∂f_a/∂v_a = −c n nᵀ (closed forms, tolerance 1e-13 of k).
    // Then, with a non-zero relative velocity Δv = v_b − v_a, central differences of
    // the force in x_a must differ from the block by exactly the omitted damping term
    //   D = −(c / r) [ n Δvᵀ + (Δv·n) I ] (I − n nᵀ)
    // (from ∂n/∂x_a = −(I − n nᵀ)/r). Tolerance 1e-6 of |k| (finite differences,
    // h = 1e-6, as in the tests above).
    let mut rng = Rng::new(8);
    for case in 0..20 {
        let (xa, xb) = (rng.vec3(1.0), rng.vec3(1.0));
        let (va, vb) = (rng.vec3(3.0), rng.vec3(3.0));
        let (k, c) = (rng.range(10.0, 500.0), rng.range(0.5, 20.0));
        let rest = xa.distance(xb) * rng.range(0.5, 1.5);
        let (kx, kv) = spring_blocks(SpringLaw::Linear, xa, xb, rest, k, c);
        let d = xb - xa;
        let r = d.length();
        let n = d / r;
        let nn = DMat3::from_cols(n * n.x, n * n.y, n * n.z);
        let p = DMat3::IDENTITY - nn;
        let kx_notes = -((p * (1.0 - rest / r) + nn) * k);
        let kv_notes = nn * -c;
        for col in 0..3 {
            assert_vec_close!(kx.col(col), kx_notes.col(col), 1e-13 * k, "case {case}: ∂f_a/∂x_a column {col}");
            assert_vec_close!(kv.col(col), kv_notes.col(col), 1e-13 * c, "case {case}: ∂f_a/∂v_a column {col}");
        }
        // The omitted damping derivative, measured.
        let force_a = |xa: DVec3| {
            let d = xb - xa;
            let r = d.length();
            let n = d / r;
            (k * (r - rest) + c * (vb - va).dot(n)) * n
        };
        let dv = vb - va;
        let outer = DMat3::from_cols(n * dv.x, n * dv.y, n * dv.z); // n Δvᵀ
        let omitted = -((outer + DMat3::IDENTITY * dv.dot(n)) * p * (c / r));
        let h = 1e-6;
        for col in 0..3 {
            let mut e = DVec3::ZERO;
            e[col] = h;
            let fd_col = (force_a(xa + e) - force_a(xa - e)) / (2.0 * h);
            assert_vec_close!(
                fd_col,
                kx.col(col) + omitted.col(col),
                1e-6 * k,
                "case {case}: FD column {col} = block + omitted damping term"
            );
        }
    }
}

/// Kernel (`ForceTerm::add_forces`) against the reference loop, per particle,
/// relative to Σ |contributions| at that particle. Both compute every spring's
/// force with the same operations (`spring_force` is documented as the kernel's
/// scalar form) and differ only in summation order, which costs at most
/// (m − 1) ε Σ|terms| for m ≤ ~20 terms: tolerance 1e-12.
fn assert_kernel_matches_reference(net: &mut SpringNetwork, particles: &Particles, state: &State, label: &str) {
    let n = state.len();
    let mut scale = vec![0.0; n];
    for s in 0..net.len() {
        let (a, b) = net.ends(s);
        let f = net.spring_force(s, &state.x, &state.v).length();
        scale[a] += f;
        scale[b] += f;
    }
    let reference = reference_forces(net, state);
    for threads in [1, 3] {
        let mut loads = Loads::zeros(n);
        pool(threads).install(|| net.add_forces(&ForceContext { particles, state, t: 0.0 }, &mut loads));
        let mut worst: f64 = 0.0;
        for (i, &sum) in scale.iter().enumerate() {
            let diff = (loads.f.get(i) - reference.get(i)).length();
            if sum > 0.0 {
                worst = worst.max(diff / sum);
            }
            assert!(
                diff <= 1e-12 * sum,
                "{label}, {threads} thread(s): particle {i}: kernel {:?} vs reference {:?}, |diff| = {diff:.3e}, Σ|f| = {sum:.3e}",
                loads.f.get(i),
                reference.get(i),
            );
        }
        println!("{label}, {threads} thread(s): worst kernel/reference difference {worst:.2e} of Σ|f|");
    }
}

/// A 64 × 64 cloth (the benchmark layout) with positions jittered by up to 2 mm and
/// random velocities, so that every spring carries force and damping.
fn jittered_cloth(rng: &mut Rng, n: usize) -> WorldBuilder {
    let mut b = WorldBuilder::new();
    Cloth { nx: n, ny: n, ..Cloth::default() }.build(&mut b, "cloth").unwrap();
    for i in 0..b.particle_count() {
        let x = b.state.x.get(i) + rng.vec3(0.002);
        b.state.x.set(i, x);
        b.state.v.set(i, rng.vec3(0.5));
    }
    b
}

#[test]
fn vectorised_kernel_matches_reference_on_cloth() {
    let mut rng = Rng::new(21);
    let b = jittered_cloth(&mut rng, 64);
    let mut net = SpringNetwork::new(&b.springs, b.particle_count()).unwrap();
    assert_eq!(net.vectorised_len(), net.len(), "every spring of a 64 × 64 cloth forms a run");
    assert_kernel_matches_reference(&mut net, &b.particles, &b.state, "cloth 64 × 64");
}

#[test]
fn scattered_kernel_matches_reference_on_random_graph() {
    // 5000 particles: above the parallel threshold, so with 3 threads the gather
    // path runs in blocks.
    let mut rng = Rng::new(22);
    let (set, state, particles) = random_graph(&mut rng, 5000, 15000);
    let mut net = SpringNetwork::new(&set, 5000).unwrap();
    assert_eq!(net.vectorised_len(), 0, "random springs must all take the scattered path");
    assert_kernel_matches_reference(&mut net, &particles, &state, "random graph");
}

#[test]
fn mixed_runs_and_scattered_springs_match_reference() {
    let mut rng = Rng::new(23);
    let mut b = jittered_cloth(&mut rng, 48);
    let n = b.particle_count();
    let g = b.springs.group("extra");
    let x = b.state.x.clone();
    for _ in 0..3000 {
        let a = rng.below(n);
        let c = (a + 50 + rng.below(n - 100)) % n;
        b.springs.push_at_rest(&x, a, c, SpringParams::linear(rng.range(10.0, 100.0), 0.1), SpringKind::Attachment, g);
    }
    let mut net = SpringNetwork::new(&b.springs, n).unwrap();
    let v = net.vectorised_len();
    assert!(v > 0 && v < net.len(), "expected both runs and scattered springs, got {v} of {}", net.len());
    // Stretch the extra springs differently from their rest lengths.
    let mut state = b.state.clone();
    for i in 0..n {
        state.x.set(i, state.x.get(i) * 1.01);
    }
    assert_kernel_matches_reference(&mut net, &b.particles, &state, "cloth + scattered");
}

#[test]
fn every_kernel_gives_bitwise_identical_forces() {
    // The kernel promises identical IEEE operations on every instruction set (no
    // FMA): compare the bits of every force component, for a cloth (runs) plus
    // scattered springs, single- and multi-threaded.
    let mut rng = Rng::new(24);
    let mut b = jittered_cloth(&mut rng, 64);
    let n = b.particle_count();
    let g = b.springs.group("extra");
    let x = b.state.x.clone();
    for _ in 0..2000 {
        let a = rng.below(n);
        let c = (a + 70 + rng.below(n - 140)) % n;
        b.springs.push_at_rest(&x, a, c, SpringParams::linear(50.0, 0.2), SpringKind::Attachment, g);
    }
    let mut net = SpringNetwork::new(&b.springs, n).unwrap();
    let kernels = Kernel::available();
    println!("kernels available: {kernels:?}");
    let mut results: Vec<(Kernel, usize, Vec3s)> = Vec::new();
    for &kernel in &kernels {
        for threads in [1, 2, 4] {
            let mut f = Vec3s::zeros(n);
            pool(threads).install(|| net.add_forces_with(kernel, &b.state, &mut f));
            results.push((kernel, threads, f));
        }
    }
    let (k0, t0, first) = &results[0];
    for (k, t, f) in &results[1..] {
        for i in 0..n {
            for (a, b) in [(f.x[i], first.x[i]), (f.y[i], first.y[i]), (f.z[i], first.z[i])] {
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "particle {i}: {k:?}/{t} threads gives {a:e}, {k0:?}/{t0} gives {b:e}"
                );
            }
        }
    }
}

/// A spring whose two ends coincide has no direction: it pushes neither way
/// (zero force, zero Jacobian blocks) instead of returning NaN, for every law,
/// on every kernel (a cloth's runs and the scattered path) and in the reference
/// loop; and a cloth with two particles put on top of each other steps on with
/// symplectic and implicit Euler without a blow-up.
#[test]
fn coincident_ends_give_no_force_and_no_nan() {
    let cubic = SpringLaw::Cubic(wobble::force::CubicLaw::new(5000.0, 1.1, 30000.0, 0.9, 10000.0, 1.0).unwrap());
    for law in [SpringLaw::Linear, SpringLaw::StVK, cubic] {
        let mut rng = Rng::new(31);
        let mut b = WorldBuilder::new();
        let params = SpringParams::linear(500.0, 0.5).with_law(law);
        let cloth =
            Cloth { nx: 16, ny: 16, structural: params, shear: Some(params), bend: Some(params), ..Cloth::default() }
                .build(&mut b, "cloth")
                .unwrap();
        let n = b.particle_count();
        // A scattered spring as well, so the gather path meets coincident ends too.
        let g = b.springs.group("extra");
        let x = b.state.x.clone();
        b.springs.push_at_rest(&x, cloth.particle(3, 3), cloth.particle(12, 12), params, SpringKind::Attachment, g);
        for i in 0..n {
            b.state.v.set(i, rng.vec3(0.3));
        }
        // Particles (5, 5) and (5, 6) (a structural spring) and (3, 3) and
        // (12, 12) (the scattered one) on top of each other.
        let (p, q) = (cloth.particle(5, 5), cloth.particle(5, 6));
        let at = b.state.x.get(p);
        b.state.x.set(q, at);
        let at = b.state.x.get(cloth.particle(3, 3));
        b.state.x.set(cloth.particle(12, 12), at);
        let mut net = SpringNetwork::new(&b.springs, n).unwrap();
        let coincident: Vec<usize> = (0..net.len())
            .filter(|&s| {
                let (a, c) = net.ends(s);
                b.state.x.get(a) == b.state.x.get(c)
            })
            .collect();
        assert_eq!(coincident.len(), 2, "{law:?}: the two springs with coincident ends");
        for &s in &coincident {
            assert_eq!(net.spring_force(s, &b.state.x, &b.state.v), DVec3::ZERO, "{law:?}: spring {s}");
            let (a, c) = net.ends(s);
            let (kx, kv) = spring_blocks(law, b.state.x.get(a), b.state.x.get(c), 0.01, 500.0, 0.5);
            assert_eq!((kx, kv), (DMat3::ZERO, DMat3::ZERO), "{law:?}: blocks of spring {s}");
        }
        let all_finite = |f: &Vec3s| (0..n).all(|i| f.get(i).is_finite());
        assert!(all_finite(&reference_forces(&net, &b.state)), "{law:?}: reference loop");
        for kernel in Kernel::available() {
            let mut f = Vec3s::zeros(n);
            net.add_forces_with(kernel, &b.state, &mut f);
            assert!(all_finite(&f), "{law:?}: kernel {kernel:?}");
        }
        if law == SpringLaw::Linear {
            for kind in [IntegratorKind::SymplecticEuler, IntegratorKind::ImplicitEuler] {
                let mut builder = WorldBuilder::new();
                let c = Cloth { nx: 16, ny: 16, structural: params, shear: Some(params), ..Cloth::default() }
                    .build(&mut builder, "cloth")
                    .unwrap();
                let (p, q) = (c.particle(5, 5), c.particle(5, 6));
                let at = builder.state.x.get(p);
                builder.state.x.set(q, at);
                builder.add_force(wobble::force::Gravity::default());
                // (Self-contact would rightly refuse a cloth with touching particles.)
                let off = wobble::contact::ContactOptions { collide: Some(false), ..Default::default() };
                builder.set_contact("cloth", off);
                let dt = if kind == IntegratorKind::ImplicitEuler { 1e-3 } else { 1e-4 };
                let mut w = builder.build(SimParams { dt, integrator: kind, ..SimParams::default() }).unwrap();
                w.run(200).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
                assert!(w.state.x.get(q).distance(w.state.x.get(p)) > 0.0, "{kind:?}: the neighbours pull them apart");
            }
        }
    }
}
