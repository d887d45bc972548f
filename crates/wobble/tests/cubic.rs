//! Non-linear spring laws and the triangle membrane of paper 000 (physics notes
//! §2–4): the cubic's solved coefficients against its four constraints, StVK as its
//! special case, force/energy/stiffness consistency, every Jacobian against central
//! finite differences, and the vectorised kernel against its scalar reference for
//! every law.

#[macro_use]
mod support;

use glam::{DMat3, DQuat, DVec3};
use support::{DenseJacobian, Rng, comp_mut, flat, pool};
use wobble::build::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::force::spring::{DEFAULT_JACOBIAN_DAMPING, Kernel, solve_cubic, spring_blocks};
use wobble::force::{
    CubicLaw, ForceContext, ForceTerm, Membrane, SpringError, SpringLaw, SpringNetwork, SpringParams, TriangleStvk,
};
use wobble::model::{Particles, State, Vec3s};

/// g(r) and g'(r) of a polynomial a r³ + b r² + c r + d.
fn poly(c: [f64; 4], r: f64) -> (f64, f64) {
    (((c[0] * r + c[1]) * r + c[2]) * r + c[3], (3.0 * c[0] * r + 2.0 * c[1]) * r + c[2])
}

/// Parameter sets (L, K, a1, K1, a2, K2): the paper's three scenes (notes §3), its
/// Fig. 2 curves, and random ones.
fn parameter_sets() -> Vec<[f64; 6]> {
    let mut sets = vec![
        [0.02, 1000.0, 1.04, 6000.0, 0.96, 2000.0],
        [0.02, 500.0, 1.1, 3000.0, 0.9, 1000.0],
        [0.02, 1000.0, 1.1, 6000.0, 0.9, 10000.0],
        [1.0, 1.0, 1.1, 2.0, 0.9, 2.0],
        [1.0, 1.0, 1.1, 4.0, 0.9, 2.0],
        [1.0, 1.0, 1.1, 6.0, 0.9, 2.0],
    ];
    let mut rng = Rng::new(5);
    for _ in 0..30 {
        let k = rng.range(1.0, 1e4);
        sets.push([
            rng.range(1e-3, 2.0),
            k,
            rng.range(1.01, 1.5),
            k * rng.range(0.5, 20.0),
            rng.range(0.5, 0.99),
            k * rng.range(0.5, 20.0),
        ]);
    }
    sets
}

#[test]
fn solved_coefficients_satisfy_all_four_constraints() {
    // Eq. 8: g(L) = 0, g'(L) = K, g'(a1 L) = K1, g'(a2 L) = K2. Both the direct
    // solve for (L, K) and the law's rest-length-free scaling of its unit solution
    // must meet them to 1e-12 relative to the magnitude of the terms summed.
    // With a1 > 1 > a2 and K1, K2 > K the notes state b < 0 and d < 0: checked on
    // the paper's sets.
    for (case, [l, k, a1, k1, a2, k2]) in parameter_sets().into_iter().enumerate() {
        let law = CubicLaw::new(k, a1, k1, a2, k2, 1.0).unwrap();
        let direct = solve_cubic(l, k, a1, k1, a2, k2).unwrap();
        for (label, c) in [("scaled", law.coefficients(l, k)), ("direct", direct)] {
            // Evaluating a polynomial whose terms cancel costs ε Σ|terms|, so each
            // constraint is checked to 1e-12 of the sum of its terms' magnitudes.
            let terms = |r: f64| (c[0] * r * r * r).abs() + (c[1] * r * r).abs() + (c[2] * r).abs() + c[3].abs();
            let slopes = |r: f64| (3.0 * c[0] * r * r).abs() + (2.0 * c[1] * r).abs() + c[2].abs();
            assert_close!(poly(c, l).0, 0.0, 1e-12 * terms(l), "case {case} {label}: g(L)");
            assert_close!(poly(c, l).1, k, 1e-12 * slopes(l), "case {case} {label}: g'(L)");
            assert_close!(poly(c, a1 * l).1, k1, 1e-12 * slopes(a1 * l), "case {case} {label}: g'(a1 L)");
            assert_close!(poly(c, a2 * l).1, k2, 1e-12 * slopes(a2 * l), "case {case} {label}: g'(a2 L)");
        }
        // The law evaluates the same polynomial.
        for rho in [0.3, 0.9, 1.0, 1.05, 1.7] {
            let r = rho * l;
            let (g, dg) = SpringLaw::Cubic(law).magnitude(r, l, k);
            let (ge, dge) = poly(direct, r);
            assert_close!(g, ge, 1e-12 * (ge.abs() + k * l), "case {case}: g at ρ = {rho}");
            assert_close!(dg, dge, 1e-12 * (dge.abs() + k + k1 + k2), "case {case}: g' at ρ = {rho}");
        }
        if case < 3 {
            assert!(
                direct[1] < 0.0 && direct[3] < 0.0,
                "case {case}: b = {}, d = {} should be < 0",
                direct[1],
                direct[3]
            );
        }
    }
}

#[test]
fn stvk_is_the_cubic_with_b_and_d_zero() {
    // StVK's slope is g'(r) = (K/2)(3 r²/L² − 1); choosing K1 and K2 as that slope
    // at a1 L and a2 L must give b = d = 0 (to 1e-12 of the coefficient scale) and
    // the StVK law's force, stiffness and energy (1e-12 relative to K L, K, K L²).
    for (a1, a2) in [(1.1, 0.9), (1.04, 0.96), (1.3, 0.7)] {
        let (l, k) = (0.02, 1000.0);
        let slope = |a: f64| 0.5 * k * (3.0 * a * a - 1.0);
        let law = CubicLaw::new(k, a1, slope(a1), a2, slope(a2), 1.0).unwrap();
        let c = law.coefficients(l, k);
        assert_close!(c[1] * l * l, 0.0, 1e-12 * k * l, "b for a1 = {a1}");
        assert_close!(c[3], 0.0, 1e-12 * k * l, "d for a1 = {a1}");
        assert_rel!(c[0], k / (2.0 * l * l), 1e-12, "a = K/(2L²)");
        assert_rel!(c[2], -k / 2.0, 1e-12, "c = −K/2");
        for rho in [0.2, 0.577, 1.0, 1.3, 2.0] {
            let r = rho * l;
            let (g, dg) = SpringLaw::Cubic(law).magnitude(r, l, k);
            let (gs, dgs) = SpringLaw::StVK.magnitude(r, l, k);
            assert_close!(g, gs, 1e-12 * k * l, "g at ρ = {rho}");
            assert_close!(dg, dgs, 1e-12 * k, "g' at ρ = {rho}");
            let (e, es) = (SpringLaw::Cubic(law).energy(r, l, k), SpringLaw::StVK.energy(r, l, k));
            assert_close!(e, es, 1e-12 * k * l * l, "energy at ρ = {rho}");
        }
    }
    // Notes §2: g(0) = 0 and g'(0) = −K/2 for StVK.
    let (g0, dg0) = SpringLaw::StVK.magnitude(0.0, 0.5, 40.0);
    assert_eq!(g0, 0.0);
    assert_rel!(dg0, -20.0, 1e-15, "StVK g'(0) = −K/2");
}

#[test]
fn inconsistent_cubic_parameters_are_rejected_with_the_reason() {
    let k = 100.0;
    let cases: [(f64, f64, f64, f64, f64, &str); 9] = [
        (1.0, 600.0, 0.9, 200.0, 0.99, "a1"),
        (0.95, 600.0, 0.9, 200.0, 0.99, "a1"),
        (1.1, 600.0, 1.0, 200.0, 0.99, "a2"),
        (1.1, 600.0, 1.2, 200.0, 0.99, "a2"),
        (1.1, 600.0, 0.0, 200.0, 0.99, "a2"),
        (1.1, 0.0, 0.9, 200.0, 0.99, "k1"),
        (1.1, 600.0, 0.9, -1.0, 0.99, "k2"),
        (1.1, f64::NAN, 0.9, 200.0, 0.99, "k1"),
        (1.1, 600.0, 0.9, 200.0, 1.5, "jacobian_damping"),
    ];
    for (a1, k1, a2, k2, jd, key) in cases {
        match CubicLaw::new(k, a1, k1, a2, k2, jd) {
            Err(SpringError::BadLaw { why }) => assert!(why.contains(key), "`{why}` should name `{key}`"),
            other => panic!("a1 {a1}, k1 {k1}, a2 {a2}, k2 {k2}, damping {jd}: expected BadLaw, got {other:?}"),
        }
    }
    assert!(CubicLaw::new(0.0, 1.1, 600.0, 0.9, 200.0, 0.99).is_err(), "k = 0");
    // The raw solve is singular when a1 = a2 or either is 1.
    for (a1, a2) in [(1.1, 1.1), (1.0, 0.9), (1.1, 1.0)] {
        assert!(
            matches!(solve_cubic(1.0, 1.0, a1, 2.0, a2, 2.0), Err(SpringError::BadLaw { .. })),
            "a1 = {a1}, a2 = {a2} must be singular"
        );
    }
}

fn laws() -> Vec<(&'static str, SpringLaw)> {
    vec![
        ("linear", SpringLaw::Linear),
        ("stvk", SpringLaw::StVK),
        ("cubic", SpringLaw::Cubic(CubicLaw::new(1000.0, 1.04, 6000.0, 0.96, 2000.0, 1.0).unwrap())),
        ("cubic-hard", SpringLaw::Cubic(CubicLaw::new(1000.0, 1.1, 6000.0, 0.9, 10000.0, 1.0).unwrap())),
    ]
}

#[test]
fn magnitude_slope_and_energy_are_consistent() {
    // g' = dg/dr and dE/dr = g by central differences (step 1e-6 L; truncation
    // O(step²) and rounding ~1e-16 g/step: tolerance 1e-7 of the local scale),
    // E(L) = 0 and g(L) = 0, g'(L) = K exactly as constraints.
    let (l, k) = (0.02, 1000.0);
    for (name, law) in laws() {
        assert_eq!(law.energy(l, l, k), 0.0, "{name}: E(L)");
        let (g, dg) = law.magnitude(l, l, k);
        assert_close!(g, 0.0, 1e-12 * k * l, "{name}: g(L)");
        assert_rel!(dg, k, 1e-12, "{name}: g'(L) = K");
        for rho in [0.3, 0.7, 0.95, 1.02, 1.1, 1.5] {
            let r = rho * l;
            let s = 1e-6 * l;
            let (g, dg) = law.magnitude(r, l, k);
            let dg_fd = (law.magnitude(r + s, l, k).0 - law.magnitude(r - s, l, k).0) / (2.0 * s);
            let de_fd = (law.energy(r + s, l, k) - law.energy(r - s, l, k)) / (2.0 * s);
            assert_close!(dg, dg_fd, 1e-7 * (dg.abs() + k), "{name}: g' at ρ = {rho}");
            assert_close!(g, de_fd, 1e-7 * (g.abs() + k * l), "{name}: dE/dr at ρ = {rho}");
        }
    }
}

/// Force on end a of a spring, from the law's g (the reference, not the kernel).
#[allow(clippy::too_many_arguments)]
fn spring_force(law: SpringLaw, xa: DVec3, xb: DVec3, va: DVec3, vb: DVec3, rest: f64, k: f64, c: f64) -> DVec3 {
    let d = xb - xa;
    let r = d.length();
    let n = d / r;
    (law.magnitude(r, rest, k).0 + c * (vb - va).dot(n)) * n
}

#[test]
fn spring_jacobians_match_finite_differences_for_every_law() {
    // ∂f_a/∂x_a against central differences of the force in x_a at zero relative
    // velocity (the damping's position derivative is omitted by design and is zero
    // there), and ∂f_a/∂v_a against differences in v_a. Step 1e-7 of the length
    // scale: tolerance 1e-6 of the block scale (|g/r| + |g'|, or c).
    // Also the cubic's closed form eq. 9, −[c I + a r² (I + 2nnᵀ) + b r (I + nnᵀ) +
    // (d/r)(I − nnᵀ)], to 1e-10 of the block scale.
    let mut rng = Rng::new(77);
    for (name, law) in laws() {
        for case in 0..20 {
            let (k, c) = (1000.0, rng.range(0.1, 5.0));
            let rest = 0.02;
            let xa = rng.vec3(0.05);
            let dir = rng.vec3(1.0).normalize();
            let xb = xa + dir * rest * rng.range(0.5, 1.5);
            let v = rng.vec3(1.0);
            let (kx, kv) = spring_blocks(law, xa, xb, rest, k, c);
            let r = xa.distance(xb);
            let (g, dg) = law.magnitude(r, rest, k);
            let scale = (g / r).abs() + dg.abs();
            let h = 1e-7 * rest;
            for col in 0..3 {
                let e = DVec3::AXES[col];
                let fx = (spring_force(law, xa + e * h, xb, v, v, rest, k, c)
                    - spring_force(law, xa - e * h, xb, v, v, rest, k, c))
                    / (2.0 * h);
                assert_vec_close!(kx.col(col), fx, 1e-6 * scale, "{name} case {case}: ∂f_a/∂x_a column {col}");
                let hv = 1e-6;
                let fv = (spring_force(law, xa, xb, v + e * hv, v, rest, k, c)
                    - spring_force(law, xa, xb, v - e * hv, v, rest, k, c))
                    / (2.0 * hv);
                assert_vec_close!(kv.col(col), fv, 1e-6 * c, "{name} case {case}: ∂f_a/∂v_a column {col}");
            }
            if let SpringLaw::Cubic(cl) = law {
                let [a, b, cc, d] = cl.coefficients(rest, k);
                let n = (xb - xa) / r;
                let nn = DMat3::from_cols(n * n.x, n * n.y, n * n.z);
                let i = DMat3::IDENTITY;
                let eq9 = -(i * cc + (i + nn * 2.0) * (a * r * r) + (i + nn) * (b * r) + (i - nn) * (d / r));
                for col in 0..3 {
                    assert_vec_close!(kx.col(col), eq9.col(col), 1e-10 * scale, "{name} case {case}: eq. 9 col {col}");
                }
            }
        }
    }
}

#[test]
fn jacobian_damping_scales_b_and_d_in_the_jacobian_only() {
    // With factor s, the blocks must equal those of the same polynomial with b and
    // d multiplied by s (eq. 9 is linear in the coefficients), while the force stays
    // the undamped one. Tolerance 1e-12 of the block scale.
    let (k, rest) = (1000.0, 0.02);
    let s = DEFAULT_JACOBIAN_DAMPING;
    assert_eq!(s, 0.99, "the paper's default");
    let damped = CubicLaw::new(k, 1.1, 6000.0, 0.9, 2000.0, s).unwrap();
    let plain = CubicLaw { jacobian_damping: 1.0, ..damped };
    let mut rng = Rng::new(3);
    for case in 0..10 {
        let xa = rng.vec3(0.05);
        let xb = xa + rng.vec3(1.0).normalize() * rest * rng.range(0.6, 2.0);
        let r = xa.distance(xb);
        let (kx, _) = spring_blocks(SpringLaw::Cubic(damped), xa, xb, rest, k, 0.0);
        let [a, b, c, d] = damped.coefficients(rest, k);
        let n = (xb - xa) / r;
        let nn = DMat3::from_cols(n * n.x, n * n.y, n * n.z);
        let i = DMat3::IDENTITY;
        let expect = -(i * c + (i + nn * 2.0) * (a * r * r) + (i + nn) * (s * b * r) + (i - nn) * (s * d / r));
        let scale = expect.to_cols_array().iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for col in 0..3 {
            assert_vec_close!(kx.col(col), expect.col(col), 1e-12 * scale, "case {case}: column {col}");
        }
        let f = |law| spring_force(SpringLaw::Cubic(law), xa, xb, DVec3::ZERO, DVec3::ZERO, rest, k, 0.0);
        assert_eq!(f(damped), f(plain), "case {case}: the force ignores the Jacobian damping");
        let (kp, _) = spring_blocks(SpringLaw::Cubic(plain), xa, xb, rest, k, 0.0);
        assert!((kp - kx).to_cols_array().iter().any(|v| v.abs() > 1e-6 * scale), "case {case}: damping had no effect");
    }
}

/// A jittered cloth whose springs all use `law`, with random velocities.
fn cloth_with_law(law: SpringLaw, n: usize, seed: u64) -> WorldBuilder {
    let mut rng = Rng::new(seed);
    let s = SpringParams::linear(1000.0, 0.5).with_law(law);
    let mut b = WorldBuilder::new();
    Cloth { nx: n, ny: n, structural: s, shear: Some(s), bend: Some(s), ..Cloth::default() }
        .build(&mut b, "cloth")
        .unwrap();
    for i in 0..b.particle_count() {
        let x = b.state.x.get(i) + rng.vec3(0.002);
        b.state.x.set(i, x);
        b.state.v.set(i, rng.vec3(0.5));
    }
    b
}

#[test]
fn kernel_matches_reference_and_is_bitwise_identical_for_every_law() {
    // The kernel's law arms against the plain reference loop (same per-spring
    // operations, different summation order: 1e-12 of Σ|f| per particle), and every
    // instruction set and thread count against each other bit for bit. 72 × 72 is
    // above the parallel threshold so several blocks run.
    for (name, law) in laws() {
        let b = cloth_with_law(law, 72, 31);
        let n = b.particle_count();
        let mut net = SpringNetwork::new(&b.springs, n).unwrap();
        assert_eq!(net.vectorised_len(), net.len(), "{name}: every cloth spring forms a run");
        let mut reference = Vec3s::zeros(n);
        net.add_forces_reference(&b.state, &mut reference);
        let mut scale = vec![0.0; n];
        for s in 0..net.len() {
            let (a, c) = net.ends(s);
            let f = net.spring_force(s, &b.state.x, &b.state.v).length();
            scale[a] += f;
            scale[c] += f;
        }
        let mut first: Option<Vec3s> = None;
        for kernel in Kernel::available() {
            for threads in [1, 3] {
                let mut f = Vec3s::zeros(n);
                pool(threads).install(|| net.add_forces_with(kernel, &b.state, &mut f));
                for (i, &sum) in scale.iter().enumerate() {
                    let diff = (f.get(i) - reference.get(i)).length();
                    assert!(diff <= 1e-12 * sum, "{name} {kernel:?}/{threads}: particle {i} off by {diff:e}");
                }
                match &first {
                    None => first = Some(f),
                    Some(f0) => assert!(
                        flat(&f).iter().zip(flat(f0)).all(|(a, b)| a.to_bits() == b.to_bits()),
                        "{name} {kernel:?}/{threads}: not bitwise identical"
                    ),
                }
            }
        }
    }
}

/// One jittered triangle membrane: a 4 × 4 cloth with a StVK membrane, positions
/// stretched and moved off its rest shape.
fn membrane(seed: u64) -> (TriangleStvk, State, Particles) {
    let mut b = WorldBuilder::new();
    let material = Membrane::from_young(500.0, 0.3);
    Cloth { nx: 4, ny: 4, spacing: 0.02, shear: None, bend: None, membrane: Some(material), ..Cloth::default() }
        .build(&mut b, "cloth")
        .unwrap();
    let tris = b.topology.triangles.clone();
    let term = TriangleStvk::new("m", tris, &b.state.x, material).unwrap();
    let mut rng = Rng::new(seed);
    let mut state = b.state.clone();
    for i in 0..state.len() {
        let x = state.x.get(i) * DVec3::new(1.2, 0.9, 1.0) + rng.vec3(0.004);
        state.x.set(i, x);
    }
    (term, state, b.particles.clone())
}

fn term_forces(term: &mut TriangleStvk, particles: &Particles, state: &State) -> Vec3s {
    let mut loads = wobble::force::Loads::zeros(state.len());
    term.add_forces(&ForceContext { particles, state, t: 0.0 }, &mut loads);
    loads.f
}

#[test]
fn membrane_is_at_rest_undeformed_and_invariant_under_rigid_motion() {
    // Zero force and energy at rest and after a rotation plus translation (the Green
    // strain is rotation-invariant): tolerance 1e-10 of μ times the edge length.
    let (mut term, _, particles) = membrane(1);
    let mut b = WorldBuilder::new();
    Cloth { nx: 4, ny: 4, spacing: 0.02, shear: None, bend: None, ..Cloth::default() }.build(&mut b, "c").unwrap();
    let rest = b.state.clone();
    let q = DQuat::from_axis_angle(DVec3::new(1.0, 2.0, -0.5).normalize(), 1.1);
    let mut moved = rest.clone();
    for i in 0..moved.len() {
        moved.x.set(i, q * rest.x.get(i) + DVec3::new(0.3, -1.0, 2.0));
    }
    let scale = term.material().mu * 0.02;
    for (label, s) in [("rest", &rest), ("rotated", &moved)] {
        let f = term_forces(&mut term, &particles, s);
        for i in 0..f.len() {
            assert!(f.get(i).length() <= 1e-10 * scale, "{label}: force {:?} on {i}", f.get(i));
        }
        let e = term.potential_energy(&ForceContext { particles: &particles, state: s, t: 0.0 });
        assert!(e.abs() <= 1e-12 * scale * 0.02, "{label}: energy {e}");
    }
}

#[test]
fn membrane_forces_are_the_energy_gradient_and_sum_to_zero() {
    // f = −∂W/∂x by central differences (step 1e-7 m: tolerance 1e-6 of max |f|);
    // Σ f = 0 (translation invariance) to 1e-12 of Σ|f|.
    let (mut term, state, particles) = membrane(2);
    let f = term_forces(&mut term, &particles, &state);
    let fmax = (0..f.len()).map(|i| f.get(i).length()).fold(0.0, f64::max);
    assert!(fmax > 1e-3, "the test needs a deformed membrane (max |f| = {fmax})");
    let h = 1e-7;
    let energy = |s: &State| term.potential_energy(&ForceContext { particles: &particles, state: s, t: 0.0 });
    for i in 0..state.len() {
        for c in 0..3 {
            let (mut p, mut m) = (state.clone(), state.clone());
            *comp_mut(&mut p.x, i, c) += h;
            *comp_mut(&mut m.x, i, c) -= h;
            let grad = (energy(&p) - energy(&m)) / (2.0 * h);
            assert_close!(flat(&f)[3 * i + c], -grad, 1e-6 * fmax, "particle {i} component {c}");
        }
    }
    let total: DVec3 = (0..f.len()).map(|i| f.get(i)).sum();
    let sum_abs: f64 = (0..f.len()).map(|i| f.get(i).length()).sum();
    assert!(total.length() <= 1e-12 * sum_abs, "Σ f = {total:?}");
}

#[test]
fn membrane_jacobian_matches_finite_differences_and_is_symmetric() {
    // Every entry of ∂f/∂x against central differences of the forces (step 1e-7 m:
    // tolerance 1e-6 of the largest entry), and the assembled matrix symmetric to
    // 1e-12 of it.
    let (mut term, state, particles) = membrane(3);
    let n = state.len();
    let mut dense = DenseJacobian::new(n);
    term.add_jacobian(&ForceContext { particles: &particles, state: &state, t: 0.0 }, &mut dense);
    let scale = dense.dfdx.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let h = 1e-7;
    for j in 0..n {
        for c in 0..3 {
            let (mut p, mut m) = (state.clone(), state.clone());
            *comp_mut(&mut p.x, j, c) += h;
            *comp_mut(&mut m.x, j, c) -= h;
            let (fp, fm) =
                (flat(&term_forces(&mut term, &particles, &p)), flat(&term_forces(&mut term, &particles, &m)));
            for row in 0..3 * n {
                let fd = (fp[row] - fm[row]) / (2.0 * h);
                assert_close!(dense.dfdx[row * 3 * n + 3 * j + c], fd, 1e-6 * scale, "entry ({row}, {})", 3 * j + c);
            }
        }
    }
    for r in 0..3 * n {
        for c in 0..3 * n {
            assert_close!(dense.dfdx[r * 3 * n + c], dense.dfdx[c * 3 * n + r], 1e-12 * scale, "symmetry ({r}, {c})");
        }
    }
}

#[test]
fn membrane_matches_lame_parameters_under_uniaxial_stretch() {
    // A single right triangle (legs 1 m) stretched by s along x and left alone along
    // y has E = diag(e, 0) with e = (s² − 1)/2, so W = A0 (μ + λ/2) e² with A0 = ½:
    // exact, to 1e-13 relative.
    let mut x = Vec3s::zeros(3);
    x.set(1, DVec3::X);
    x.set(2, DVec3::Y);
    let m = Membrane { mu: 30.0, lambda: 20.0 };
    let term = TriangleStvk::new("t", vec![[0, 1, 2]], &x, m).unwrap();
    let s = 1.3;
    x.set(1, DVec3::X * s);
    let e = 0.5 * (s * s - 1.0);
    assert_rel!(term.triangle_energy(0, &x), 0.5 * (m.mu + 0.5 * m.lambda) * e * e, 1e-13, "uniaxial energy");
    let yl = Membrane::from_young(100.0, 0.25);
    assert_rel!(yl.mu, 40.0, 1e-15, "μ = E/(2(1+ν))");
    assert_rel!(yl.lambda, 100.0 * 0.25 / (1.0 - 0.0625), 1e-15, "λ = Eν/(1−ν²)");
    let degenerate = TriangleStvk::new("t", vec![[0, 1, 1]], &x, m);
    assert!(degenerate.is_err(), "a degenerate triangle must be rejected");
}

#[test]
fn stiffness_bound_follows_the_law_at_the_current_length() {
    // For a non-linear law the stable-step bound uses max(k, |g'|, |g/r|) at the
    // current length: a cubic spring stretched to a1 L has slope K1 = 6k there, so
    // its bound must be 6 times the linear spring's (two equal masses: each row
    // gets k (w + w)).
    use wobble::force::{SpringKind, SpringSet};
    let (k, rest, m) = (100.0, 1.0, 2.0);
    let law = SpringLaw::Cubic(CubicLaw::new(k, 1.1, 6.0 * k, 0.9, 2.0 * k, 1.0).unwrap());
    for (law, factor) in [(SpringLaw::Linear, 1.0), (law, 6.0)] {
        let mut state = State::default();
        let mut particles = Particles::default();
        state.push(DVec3::ZERO, DVec3::ZERO);
        state.push(DVec3::new(1.1 * rest, 0.0, 0.0), DVec3::ZERO);
        particles.push(m, 0.0);
        particles.push(m, 0.0);
        let mut set = SpringSet::new();
        let g = set.group("pair");
        set.push(0, 1, rest, SpringParams::linear(k, 0.0).with_law(law), SpringKind::Structural, g);
        let net = SpringNetwork::new(&set, 2).unwrap();
        let (mut kr, mut cr) = (vec![0.0; 2], vec![0.0; 2]);
        net.add_stiffness_bound(&ForceContext { particles: &particles, state: &state, t: 0.0 }, &mut kr, &mut cr);
        assert_rel!(kr[0], factor * k * 2.0 / m, 1e-9, "{} bound", law.name());
    }
}

/// Smallest eigenvalue bound of a symmetric 3×3 matrix via its quadratic form on
/// many directions (enough to catch a clearly negative eigenvalue).
fn min_quadratic_form(m: DMat3, rng: &mut Rng) -> f64 {
    (0..200).map(|_| rng.vec3(1.0).normalize()).map(|d| d.dot(m * d)).fold(f64::INFINITY, f64::min)
}

#[test]
fn definite_spring_blocks_are_semi_definite_and_exact_when_stretched() {
    // −∂f_a/∂x_a from the definite variant must be positive semi-definite (its
    // quadratic form ≥ −1e-12 of the scale) for compressed springs of every law,
    // where the exact block is not; for stretched springs with g' > 0 both agree to
    // the last bit of arithmetic (1e-14 of the scale).
    use wobble::force::spring::spring_blocks_definite;
    let mut rng = Rng::new(41);
    for (name, law) in laws() {
        for case in 0..20 {
            let (k, rest) = (1000.0, 0.02);
            let xa = rng.vec3(0.05);
            let dir = rng.vec3(1.0).normalize();
            let ratio = if case % 2 == 0 { rng.range(0.3, 0.95) } else { rng.range(1.01, 1.3) };
            let xb = xa + dir * rest * ratio;
            let (exact, _) = spring_blocks(law, xa, xb, rest, k, 0.0);
            let (def, _) = spring_blocks_definite(law, xa, xb, rest, k, 0.0);
            let scale = exact.to_cols_array().iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let q = min_quadratic_form(-def, &mut rng);
            assert!(q >= -1e-12 * scale, "{name} case {case} (ratio {ratio:.3}): −block has quadratic form {q}");
            if ratio > 1.0 {
                for col in 0..3 {
                    assert_vec_close!(def.col(col), exact.col(col), 1e-14 * scale, "{name} case {case}: column {col}");
                }
            } else {
                let qe = min_quadratic_form(-exact, &mut rng);
                assert!(qe < 0.0, "{name} case {case}: the exact block of a compressed spring should be indefinite");
            }
        }
    }
}

#[test]
fn definite_membrane_jacobian_is_semi_definite_and_exact_under_stretch() {
    // A compressed membrane: −∂f/∂x (dense) from the definite variant has a
    // non-negative quadratic form on random vectors (≥ −1e-12 of its scale), the
    // exact one does not; stretched in both directions (S positive definite) the two
    // are equal.
    let material = Membrane::from_young(500.0, 0.3);
    let mut b = WorldBuilder::new();
    Cloth { nx: 4, ny: 4, spacing: 0.02, shear: None, bend: None, ..Cloth::default() }.build(&mut b, "c").unwrap();
    let term = TriangleStvk::new("m", b.topology.triangles.clone(), &b.state.x, material).unwrap();
    let n = b.particle_count();
    let mut rng = Rng::new(5);
    for (label, scale_xy, definite_should_differ) in [("compressed", 0.8, true), ("stretched", 1.2, false)] {
        let mut x = b.state.x.clone();
        for i in 0..n {
            x.set(i, x.get(i) * scale_xy + rng.vec3(1e-4));
        }
        let dense = |definite: bool| {
            let mut m = vec![0.0; 9 * n * n];
            for t in 0..term.len() {
                let j = term.triangle_jacobian(t, &x, definite);
                let p = b.topology.triangles[t];
                for k in 0..3 {
                    for l in 0..3 {
                        for r in 0..3 {
                            for c in 0..3 {
                                m[(3 * p[k] as usize + r) * 3 * n + 3 * p[l] as usize + c] -= j[k][l].col(c)[r];
                            }
                        }
                    }
                }
            }
            m
        };
        let (def, exact) = (dense(true), dense(false));
        let scale = exact.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let form = |m: &[f64], v: &[f64]| -> f64 {
            (0..3 * n).map(|r| v[r] * (0..3 * n).map(|c| m[r * 3 * n + c] * v[c]).sum::<f64>()).sum()
        };
        let mut worst_def = f64::INFINITY;
        let mut worst_exact = f64::INFINITY;
        for _ in 0..300 {
            let v: Vec<f64> = (0..3 * n).map(|_| rng.range(-1.0, 1.0)).collect();
            let norm2: f64 = v.iter().map(|a| a * a).sum();
            worst_def = worst_def.min(form(&def, &v) / norm2);
            worst_exact = worst_exact.min(form(&exact, &v) / norm2);
        }
        assert!(worst_def >= -1e-12 * scale, "{label}: definite form {worst_def:e}");
        let differs = def.iter().zip(&exact).any(|(a, b)| (a - b).abs() > 1e-12 * scale);
        assert_eq!(differs, definite_should_differ, "{label}: definite variant differs from exact: {differs}");
        if definite_should_differ {
            assert!(worst_exact < 0.0, "{label}: the exact Hessian should be indefinite (min form {worst_exact:e})");
        }
    }
}
