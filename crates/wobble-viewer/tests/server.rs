//! The viewer server end to end over real sockets: static files, the WebSocket
//! protocol with a tungstenite client, several clients, garbage, blow-up and reset.
//! (Access checks: `security.rs`; bounds: `load.rs`, `hostile.rs`, `resources.rs`.)

use std::io::Write;
use std::net::TcpStream;

use serde_json::{Value, json};
use tungstenite::Message;
use wobble_scene::{Scene, Source};

mod support;
use support::{CLOTH, scenes_dir, start};

fn position(v: &Value, k: usize) -> [f64; 3] {
    let p = &v["x"][k];
    [p[0].as_f64().unwrap(), p[1].as_f64().unwrap(), p[2].as_f64().unwrap()]
}

#[test]
fn serves_the_page_and_its_vendored_scripts() {
    let server = start(CLOTH);
    let (head, body) = server.get("/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(String::from_utf8_lossy(&body).contains("/app.js"));
    for path in [
        "/app.js",
        "/style.css",
        "/vendor/three.module.min.js",
        "/vendor/three.core.min.js",
        "/vendor/OrbitControls.js",
    ] {
        let (head, body) = server.get(path);
        assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
        assert!(!body.is_empty(), "{path}");
    }
    let (head, _) = server.get("/../Cargo.toml");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    // A plain GET of /ws without the upgrade headers is refused, not fatal.
    let (head, _) = server.request(&format!(
        "GET /ws HTTP/1.1\r\nHost: {h}\r\nOrigin: http://{h}\r\nCookie: {c}",
        h = server.host(),
        c = server.cookie()
    ));
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    let (head, _) = server.get("/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

#[test]
fn a_new_page_gets_hello_topology_status_and_frames() {
    let server = start(CLOTH);
    let mut c = server.connect();
    let hello = c.next("hello");
    let scenes: Vec<&str> = hello["scenes"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(scenes.contains(&"default.toml") && scenes.contains(&"drag.toml"), "{scenes:?}");
    assert_eq!(hello["integrators"].as_array().unwrap().len(), wobble::integrate::IntegratorKind::ALL.len());
    let topo = c.next("topology");
    assert_eq!(topo["n"], 36);
    assert_eq!(topo["scene"], "test-cloth.toml");
    // 5 × 5 quads, two triangles each, three indices per triangle.
    assert_eq!(topo["triangles"].as_array().unwrap().len(), 5 * 5 * 2 * 3);
    let segments = topo["segments"].as_array().unwrap().len() / 2;
    assert_eq!(topo["rest"].as_array().unwrap().len(), segments);
    assert!(topo["rest"].as_array().unwrap().iter().all(|r| r.as_f64().is_some_and(|r| r > 0.0)));
    assert_eq!(topo["pinned"], json!([0, 5]));
    let keys: Vec<&str> = topo["params"].as_array().unwrap().iter().map(|p| p["key"].as_str().unwrap()).collect();
    assert!(
        keys.contains(&"gravity.g") && keys.contains(&"drag.stiffness") && keys.contains(&"drag.damping"),
        "{keys:?}"
    );
    let status = c.next("status");
    assert_eq!(status["generation"], topo["generation"]);
    let (header, x) = c.frame();
    assert_eq!(header.n, 36);
    assert_eq!(x.len(), 36);
    assert_eq!(header.generation as u64, topo["generation"].as_u64().unwrap());
}

#[test]
fn garbage_is_answered_with_an_error_and_the_server_keeps_serving() {
    let server = start(CLOTH);
    let mut c = server.connect();
    c.next("topology");
    for bad in ["not json", "{\"type\":\"fly\"}", "{\"type\":\"dt\",\"value\":\"fast\"}", "{\"type\":\"step\",\"n\":0}"]
    {
        c.send_raw(Message::text(bad));
        let e = c.next("error");
        assert!(e["message"].as_str().unwrap().starts_with("malformed message"), "{bad}: {e}");
    }
    c.send_raw(Message::binary(vec![1u8, 2, 3]));
    assert!(c.next("error")["message"].as_str().unwrap().contains("binary"));
    // Well-formed but wrong: named in the error.
    c.send(json!({"type": "param", "key": "gravity.gee", "value": 1.0}));
    let e = c.next("error");
    assert!(e["message"].as_str().unwrap().contains("gravity.gee"), "{e}");
    c.send(json!({"type": "load", "scene": "../../etc/passwd"}));
    assert!(c.next("error")["message"].as_str().unwrap().contains("unknown scene"));
    c.send(json!({"type": "query", "particles": [36]}));
    assert!(c.next("error")["message"].as_str().unwrap().contains("does not exist"));
    // Still serving this connection and new ones.
    c.send(json!({"type": "status"}));
    c.next("status");
    let mut d = server.connect();
    d.next("topology");
    // A raw socket that sends junk instead of a WebSocket frame only loses itself.
    let mut junk = TcpStream::connect(server.addr).unwrap();
    write!(
        junk,
        "GET /ws HTTP/1.1\r\nHost: {h}\r\nOrigin: http://{h}\r\nCookie: {c}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        h = server.host(),
        c = server.cookie()
    )
    .unwrap();
    junk.write_all(&[0xff; 64]).unwrap();
    drop(junk);
    d.send(json!({"type": "status"}));
    d.next("status");
}

#[test]
fn several_pages_watch_one_simulation_and_a_closed_page_changes_nothing() {
    let server = start(CLOTH);
    let mut a = server.connect();
    let mut b = server.connect();
    a.next("topology");
    b.next("topology");
    a.send(json!({"type": "pause"}));
    a.send(json!({"type": "step", "n": 10}));
    // Requests are applied in arrival order, so a query answers after the step.
    let steps = a.query(&[0])["steps"].as_u64().unwrap();
    assert_eq!(b.query(&[0])["steps"].as_u64(), Some(steps), "b sees the same simulation");
    b.wait_status(|s| s["clients"] == 2);
    // a vanishes without a close handshake; b goes on.
    drop(a);
    b.send(json!({"type": "step", "n": 5}));
    assert_eq!(b.query(&[0])["steps"].as_u64(), Some(steps + 5));
    b.wait_status(|s| s["clients"] == 1 && s["steps"].as_u64() == Some(steps + 5));
    // The frame of that step came after the step's status (it may already be read).
    if b.last_frame.is_none_or(|h| h.steps != steps + 5) {
        assert_eq!(b.frame().0.steps, steps + 5);
    }
}

#[test]
fn step_query_pin_and_parameters() {
    let server = start(CLOTH);
    let mut c = server.connect();
    c.next("topology");
    c.send(json!({"type": "pause"}));
    c.next("status");
    let before = c.query(&[14, 20]);
    c.send(json!({"type": "pin", "particle": 14}));
    assert_eq!(c.next("pins")["pinned"], json!([0, 5, 14]));
    c.send(json!({"type": "step", "n": 200}));
    let after = c.query(&[14, 20]);
    assert_eq!(after["steps"].as_u64().unwrap(), before["steps"].as_u64().unwrap() + 200);
    assert_eq!(after["pinned"], json!([true, false]));
    assert_eq!(position(&after, 0), position(&before, 0), "a pinned particle does not move");
    assert!(position(&after, 1)[1] < position(&before, 1)[1] - 0.01, "a free one falls: {after}");
    // Unpin; it falls again.
    c.send(json!({"type": "pin", "particle": 14}));
    assert_eq!(c.next("pins")["pinned"], json!([0, 5]));
    c.send(json!({"type": "step", "n": 100}));
    assert!(position(&c.query(&[14]), 0)[1] < position(&after, 0)[1] - 1e-3);

    // A live parameter: without gravity, a cloth at rest stays at rest.
    c.send(json!({"type": "reset"}));
    c.next("topology");
    c.send(json!({"type": "pause"}));
    c.send(json!({"type": "param", "key": "gravity.g", "value": 0.0}));
    let params = c.next("params");
    let g = params["params"].as_array().unwrap().iter().find(|p| p["key"] == "gravity.g").unwrap();
    assert_eq!(g["value"], 0.0);
    let rest = c.query(&[20]);
    c.send(json!({"type": "step", "n": 200}));
    assert_eq!(position(&c.query(&[20]), 0), position(&rest, 0));
}

#[test]
fn a_grab_pulls_the_particle_toward_the_cursor() {
    let server = start(CLOTH);
    let mut c = server.connect();
    c.next("topology");
    c.send(json!({"type": "pause"}));
    c.send(json!({"type": "param", "key": "gravity.g", "value": 0.0}));
    c.next("params");
    // Straight down onto the cloth's middle (it spans 0..0.5 in x and z at y = 1).
    c.send(json!({"type": "grab", "origin": [0.21, 2.0, 0.19], "dir": [0, -1, 0]}));
    let grabbed = c.next("grabbed");
    let i = grabbed["particle"].as_u64().expect("the ray hits the cloth") as usize;
    assert_eq!(i, 2 * 6 + 2, "nearest vertex to (0.2, 1, 0.2)");
    let cursor = [0.2, 1.15, 0.2];
    c.send(json!({"type": "drag", "cursor": cursor}));
    c.send(json!({"type": "step", "n": 500}));
    let x = position(&c.query(&[i]), 0);
    let dist =
        |p: [f64; 3]| ((p[0] - cursor[0]).powi(2) + (p[1] - cursor[1]).powi(2) + (p[2] - cursor[2]).powi(2)).sqrt();
    // The cloth's springs hold it back, so it settles short of the cursor where the
    // drag spring balances them; a stiffer drag spring (MKS) takes it closer.
    assert!(dist(x) < 0.8 * 0.15, "the particle moved from 0.15 m to {} m of the cursor", dist(x));
    c.send(json!({"type": "param", "key": "drag.stiffness", "value": 600.0}));
    c.send(json!({"type": "param", "key": "drag.damping", "value": 5.0}));
    c.send(json!({"type": "step", "n": 500}));
    let closer = position(&c.query(&[i]), 0);
    assert!(dist(closer) < 0.8 * dist(x), "MKS 150 N/m: {} m from the cursor; 600 N/m: {} m", dist(x), dist(closer));
    let status = {
        c.send(json!({"type": "status"}));
        c.next("status")
    };
    assert_eq!(status["grab"]["particle"], i);
    c.send(json!({"type": "release"}));
    c.send(json!({"type": "status"}));
    assert!(c.next("status")["grab"].is_null());
    // A ray that misses grabs nothing.
    c.send(json!({"type": "grab", "origin": [5, 2, 5], "dir": [0, 1, 0]}));
    assert!(c.next("grabbed")["particle"].is_null());
}

#[test]
fn a_blow_up_is_reported_with_the_cli_text_and_reset_recovers() {
    let server = start(CLOTH);
    let mut c = server.connect();
    let topo = c.next("topology");
    c.send(json!({"type": "pause"}));
    c.send(json!({"type": "dt", "value": 0.2}));
    c.send(json!({"type": "step", "n": 200}));
    let e = c.next("error");
    let text = e["message"].as_str().unwrap();
    assert!(text.starts_with("the simulation blew up at step"), "{text}");
    let halted = c.wait_status(|s| !s["halted"].is_null());
    assert_eq!(halted["halted"].as_str().unwrap(), text, "the status carries the same text");
    // Play is refused while halted, with the reason.
    c.send(json!({"type": "play"}));
    assert!(c.next("error")["message"].as_str().unwrap().contains("reset"));
    c.send(json!({"type": "reset"}));
    let again = c.next("topology");
    assert!(again["generation"].as_u64() > topo["generation"].as_u64());
    assert_eq!(again["dt"], 1e-3, "reset restores the scene's time step");
    let s = c.next("status");
    assert!(s["halted"].is_null());
    c.send(json!({"type": "pause"}));
    c.send(json!({"type": "step", "n": 10}));
    let q = c.query(&[20]);
    assert!(q["x"][0][1].as_f64().unwrap().is_finite());
}

#[test]
fn scenes_load_from_the_scene_directory_and_integrators_switch() {
    let server = start(CLOTH);
    let mut c = server.connect();
    c.next("topology");
    c.send(json!({"type": "load", "scene": "chain.toml"}));
    let topo = c.next("topology");
    assert_eq!(topo["scene"], "chain.toml");
    assert!(!topo["lines"].as_array().unwrap().is_empty(), "a chain draws as lines");
    // The default scene's colliders: the post (a sphere) and the room's six planes;
    // frames carry a displacement for each.
    c.send(json!({"type": "load", "scene": "default.toml"}));
    let topo = c.next("topology");
    let colliders = topo["colliders"].as_array().unwrap();
    assert_eq!(colliders.len(), 7, "{colliders:?}");
    assert_eq!(colliders[0]["shape"], "sphere");
    assert_eq!(colliders[0]["radius"], 0.2);
    assert!(colliders[1..].iter().all(|c| c["shape"] == "plane"));
    let header = loop {
        let (h, _) = c.frame();
        if u64::from(h.generation) == topo["generation"].as_u64().unwrap() {
            break h;
        }
    };
    assert_eq!(header.colliders, 7);
    c.send(json!({"type": "integrator", "name": "rk4"}));
    let s = c.wait_status(|s| s["integrator"] == "rk4");
    assert_eq!(s["generation"], topo["generation"]);
    c.send(json!({"type": "integrator", "name": "rk5"}));
    assert!(c.next("error")["message"].as_str().unwrap().contains("unknown integrator `rk5`"));
}

#[test]
fn the_starting_drag_spring_is_stable_for_the_lightest_particle() {
    use wobble::force::DragSpringParams;
    use wobble_viewer::sim::{DRAG_DAMPING_LIMIT, DRAG_STIFFNESS_LIMIT, starting_drag};
    // The default scene's cloth: 0.5 kg over 32 × 32 particles, h = 0.2 ms.
    let scene =
        Scene::parse(Source::new("default", include_str!("../../../scenes/default.toml")), scenes_dir()).unwrap();
    let world = scene.build().unwrap().world;
    let drag = starting_drag(&world);
    let (m, h) = (0.5 / 1024.0, 2e-4);
    assert!((drag.damping - DRAG_DAMPING_LIMIT * m / h).abs() < 1e-12, "{drag:?}");
    assert_eq!(drag.stiffness, DragSpringParams::default().stiffness, "150 N/m is within h² k/m ≤ 0.05");
    assert!(h * h * drag.stiffness / m <= DRAG_STIFFNESS_LIMIT);
    // Heavy particles keep 004's constants.
    let heavy = Scene::parse(Source::new("heavy", CLOTH.replace("mass = 0.5", "mass = 500")), scenes_dir()).unwrap();
    assert_eq!(starting_drag(&heavy.build().unwrap().world), DragSpringParams::default());
}

#[test]
fn every_integrator_steps_the_cloth() {
    let server = start(CLOTH);
    let mut c = server.connect();
    let hello = c.next("hello");
    c.next("topology");
    c.send(json!({"type": "pause"}));
    for name in hello["integrators"].as_array().unwrap() {
        c.send(json!({"type": "reset"}));
        c.next("topology");
        c.send(json!({"type": "integrator", "name": name}));
        c.send(json!({"type": "step", "n": 20}));
        let q = c.query(&[20]);
        assert_eq!(q["steps"], 20, "{name}: {q}");
        assert!(q["x"][0][1].as_f64().is_some_and(|y| y.is_finite() && y < 1.0), "{name} lets the cloth fall: {q}");
        c.send(json!({"type": "status"}));
        let s = c.wait_status(|s| s["integrator"] == *name);
        assert!(s["halted"].is_null(), "{name}: {s}");
    }
}

#[test]
fn tubes_and_rigid_shapes_are_drawn_after_the_particles() {
    let server = start(CLOTH);
    let mut c = server.connect();
    c.next("topology");
    c.send(json!({"type": "pause"}));
    for scene in ["heavy-ball.toml", "twisted-bar.toml"] {
        c.send(json!({"type": "load", "scene": scene}));
        let topo = c.next("topology");
        let (n, vertices) = (topo["n"].as_u64().unwrap(), topo["vertices"].as_u64().unwrap());
        assert!(vertices > n, "{scene}: {vertices} vertices for {n} particles");
        let tris = topo["triangles"].as_array().unwrap();
        assert!(tris.iter().any(|i| i.as_u64().unwrap() >= n), "{scene}: no triangle on the drawn surface");
        assert!(tris.iter().all(|i| i.as_u64().unwrap() < vertices), "{scene}: a triangle index out of range");
        c.send(json!({"type": "step", "n": 1}));
        let frame = loop {
            let (h, x) = c.frame();
            if u64::from(h.generation) == topo["generation"].as_u64().unwrap() {
                break (h, x);
            }
        };
        assert_eq!(u64::from(frame.0.n), vertices);
        assert!(frame.1.iter().flatten().all(|c| c.is_finite()));
    }
}
