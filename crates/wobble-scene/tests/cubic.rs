//! Scene keys of paper 000's models: spring laws per kind, the cubic's parameters,
//! the membrane, implicit Euler and its CG settings — read correctly, and every
//! inconsistent value rejected at its line with the reason.

use std::path::PathBuf;

use wobble::force::{CubicLaw, SpringLaw, SpringNetwork, TriangleStvk};
use wobble::integrate::IntegratorKind;
use wobble_scene::{Scene, SceneError, Source};

fn parse(text: &str) -> Result<Scene, SceneError> {
    Scene::parse(Source::new("test.toml", text), PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenes"))
}

fn error(text: &str) -> SceneError {
    match parse(text).and_then(|s| s.build().map(|_| s)) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    }
}

fn expect(text: &str, line: usize, fragments: &[&str]) {
    let e = error(text);
    let shown = e.to_string();
    assert_eq!(e.line(), line, "wrong line in: {shown}");
    for f in fragments {
        assert!(shown.contains(f), "`{f}` missing from: {shown}");
    }
}

const CLOTH: &str = "[[body]]\ntype = \"cloth\"\nnx = 4\nny = 4\n";

#[test]
fn laws_are_read_per_spring_kind() {
    let text = format!(
        "[simulation]\nintegrator = \"implicit-euler\"\ncg_tolerance = 1e-8\ncg_max_iterations = 77\nsolver = \"cg-jacobi\"\nnewton_iterations = 3\nnewton_tolerance = 1e-9\nwarm_start_order = 2\n{CLOTH}\
         springs.structural = {{ stiffness = 100, law = \"cubic\", a1 = 1.1, k1 = 600, a2 = 0.9, k2 = 200, jacobian_damping = 0.95 }}\n\
         springs.shear = {{ stiffness = 50, law = \"stvk\" }}\n\
         springs.bend = {{ stiffness = 10 }}\n"
    );
    let scene = parse(&text).unwrap();
    assert_eq!(scene.simulation.integrator, IntegratorKind::ImplicitEuler);
    let built = scene.build().unwrap();
    let w = &built.world;
    assert_eq!(w.solver_settings().tolerance, 1e-8);
    assert_eq!(w.solver_settings().max_iterations, 77);
    assert_eq!(w.solver_settings().solver, wobble::solve::SolverKind::CgJacobi);
    assert_eq!((w.solver_settings().newton_iterations, w.solver_settings().newton_tolerance), (3, 1e-9));
    assert_eq!(w.solver_settings().warm_start_order, 2);
    let net = w.force_of::<SpringNetwork>().unwrap();
    let expected = CubicLaw::new(100.0, 1.1, 600.0, 0.9, 200.0, 0.95).unwrap();
    for s in 0..net.len() {
        let law = net.law(s);
        match net.kind(s) {
            wobble::force::SpringKind::Structural => assert_eq!(law, SpringLaw::Cubic(expected)),
            wobble::force::SpringKind::Shear => assert_eq!(law, SpringLaw::StVK),
            _ => assert_eq!(law, SpringLaw::Linear),
        }
    }
}

#[test]
fn membrane_is_read_from_young_or_lame() {
    let text = format!("{CLOTH}membrane = \"stvk\"\nyoungs_modulus = 100\npoisson = 0.25\n");
    let built = parse(&text).unwrap().build().unwrap();
    let m = built.world.force_of::<TriangleStvk>().expect("a membrane term");
    assert_eq!(m.len(), 2 * 3 * 3, "two triangles per cell");
    assert!((m.material().mu - 40.0).abs() < 1e-12);
    let net = built.world.force_of::<SpringNetwork>().unwrap();
    assert_eq!(net.count(wobble::force::SpringKind::Structural), 0, "the membrane replaces structural springs");
    let text = format!("{CLOTH}membrane = \"stvk\"\nlame_mu = 3\nlame_lambda = 4\n");
    let built = parse(&text).unwrap().build().unwrap();
    let m = built.world.force_of::<TriangleStvk>().unwrap().material();
    assert_eq!((m.mu, m.lambda), (3.0, 4.0));
}

#[test]
fn inconsistent_laws_and_settings_are_rejected_at_their_line() {
    let spring = |body: &str| format!("{CLOTH}springs.structural = {{ {body} }}\n");
    expect(&spring("law = \"quadratic\""), 5, &["unknown spring law `quadratic`", "linear, stvk, cubic"]);
    expect(&spring("law = \"cubic\", k1 = 6, a2 = 0.9, k2 = 2"), 5, &["a1"]);
    expect(&spring("stiffness = 1, law = \"cubic\", a1 = 1.0, k1 = 6, a2 = 0.9, k2 = 2"), 5, &["a1 = 1", "> 1"]);
    expect(&spring("stiffness = 1, law = \"cubic\", a1 = 1.1, k1 = 6, a2 = 1.2, k2 = 2"), 5, &["a2 = 1.2"]);
    expect(&spring("stiffness = 0, law = \"cubic\", a1 = 1.1, k1 = 6, a2 = 0.9, k2 = 2"), 5, &["k = 0"]);
    expect(&spring("stiffness = 1, law = \"cubic\", a1 = 1.1, k1 = -6, a2 = 0.9, k2 = 2"), 5, &["k1"]);
    expect(
        &spring("stiffness = 1, law = \"cubic\", a1 = 1.1, k1 = 6, a2 = 0.9, k2 = 2, jacobian_damping = 0"),
        5,
        &["jacobian_damping"],
    );
    expect(&spring("stiffness = 1, a1 = 1.1"), 5, &["`a1` belongs to the cubic law", "`linear`"]);
    expect(&format!("{CLOTH}youngs_modulus = 5\n"), 5, &["this cloth has none"]);
    expect(&format!("{CLOTH}membrane = \"stvk\"\nyoungs_modulus = 5\nlame_mu = 2\n"), 5, &["not both"]);
    expect(&format!("{CLOTH}membrane = \"stvk\"\nyoungs_modulus = 5\npoisson = 0.5\n"), 7, &["`poisson`"]);
    expect(&format!("{CLOTH}membrane = \"fem\"\n"), 5, &["unknown membrane model `fem`"]);
    expect(&format!("[simulation]\ncg_tolerance = 2\n{CLOTH}"), 2, &["`cg_tolerance`"]);
    expect(&format!("[simulation]\ncg_max_iterations = 0\n{CLOTH}"), 2, &["cg_max_iterations"]);
    expect(&format!("[simulation]\ncg_tolerance = 0\n{CLOTH}"), 2, &["`cg_tolerance`"]);
    expect(&format!("[simulation]\ncg_tolerance = -1e-6\n{CLOTH}"), 2, &["`cg_tolerance`"]);
    expect(&format!("[simulation]\ncg_tolerance = 1\n{CLOTH}"), 2, &["`cg_tolerance`", "below 1"]);
    expect(&format!("[simulation]\nsolver = \"cg-jacobbi\"\n{CLOTH}"), 2, &["unknown linear solver", "`cg-jacobi`"]);
    expect(
        &format!("[simulation]\nnewton_iterations = 0\n{CLOTH}"),
        2,
        &["`newton_iterations` = 0 must be at least 1"],
    );
    expect(&format!("[simulation]\nnewton_tolerance = 1\n{CLOTH}"), 2, &["`newton_tolerance`", "below 1"]);
    expect(&format!("[simulation]\nnewton_tolerance = -1\n{CLOTH}"), 2, &["`newton_tolerance`"]);
    expect(&format!("[simulation]\nwarm_start_order = 5\n{CLOTH}"), 2, &["`warm_start_order` = 5 must be at most 4"]);
    expect(&format!("[simulation]\nwarm_start_order = -1\n{CLOTH}"), 2, &["`warm_start_order`"]);
}
