//! Slow and hostile pages: each breaks or blocks only its own connection.
//! Oversized, malformed, non-UTF-8 and binary messages are answered (an `error`,
//! then a close code where the stream cannot go on); a page that stops answering
//! pings (half-open) and a page that stops reading are dropped; a page's full
//! command queue answers `busy`, and a page over its rate gets an error per extra
//! message. In every case another page goes on being served.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::Message;
use wobble_scene::{Scene, Source};
use wobble_viewer::Limits;

mod support;
use support::{CLOTH, Client, masked, read_until_close, start, start_with};

fn cloth() -> Scene {
    Scene::parse(Source::new("test-cloth.toml", CLOTH), std::path::PathBuf::from(".")).expect("scene parses")
}

/// Another page is still served promptly.
fn still_served(c: &mut Client) {
    let t0 = Instant::now();
    let q = c.query(&[0]);
    assert!(q["x"][0][0].is_number(), "{q}");
    assert!(t0.elapsed() < Duration::from_secs(2), "the other page waited {:?}", t0.elapsed());
}

#[test]
fn an_oversized_message_is_answered_then_closed_with_1009() {
    let server = start(CLOTH);
    let mut other = server.connect();
    other.next("topology");
    let mut raw = server.raw_page();
    let big = format!(r#"{{"type":"load","scene":"{}"}}"#, "a".repeat(70 * 1024));
    raw.write_all(&masked(0x81, big.as_bytes())).unwrap();
    let (code, texts) = read_until_close(&mut raw);
    assert_eq!(code, Some(1009), "message too big");
    assert!(texts.iter().any(|t| t.contains("larger than the limit")), "{texts:?}");
    still_served(&mut other);
}

#[test]
fn text_that_is_not_utf8_closes_with_1007() {
    let server = start(CLOTH);
    let mut other = server.connect();
    other.next("topology");
    let mut raw = server.raw_page();
    raw.write_all(&masked(0x81, &[b'{', 0xff, 0xfe, b'}'])).unwrap();
    let (code, texts) = read_until_close(&mut raw);
    assert_eq!(code, Some(1007));
    assert!(texts.iter().any(|t| t.contains("not UTF-8")), "{texts:?}");
    still_served(&mut other);
}

#[test]
fn frames_that_break_the_protocol_close_with_1002() {
    let server = start(CLOTH);
    let mut other = server.connect();
    other.next("topology");
    let unmasked = vec![0x81, 0x02, b'h', b'i'];
    let reserved = masked(0xC1, b"{}");
    let unknown_opcode = masked(0x83, b"{}");
    let stray_continuation = masked(0x80, b"{}");
    for (what, bytes) in [
        ("unmasked", unmasked),
        ("reserved bits", reserved),
        ("opcode 3", unknown_opcode),
        ("continuation", stray_continuation),
    ] {
        let mut raw = server.raw_page();
        raw.write_all(&bytes).unwrap();
        let (code, texts) = read_until_close(&mut raw);
        assert_eq!(code, Some(1002), "{what}: {texts:?}");
    }
    still_served(&mut other);
}

#[test]
fn binary_and_malformed_messages_get_an_error_and_the_page_stays() {
    let server = start(CLOTH);
    let mut c = server.connect();
    c.next("topology");
    c.send_raw(Message::binary(vec![0u8; 1000]));
    assert!(c.next("error")["message"].as_str().unwrap().contains("binary"));
    for bad in ["{", "[]", r#"{"type":"step","n":1001}"#, r#"{"type":"query","particles":[-1]}"#] {
        c.send_raw(Message::text(bad));
        let e = c.next("error");
        assert!(e["message"].as_str().unwrap().starts_with("malformed message"), "{bad}: {e}");
    }
    // The cap on `step` is stated in the error.
    c.send(json!({"type": "step", "n": 5000}));
    assert!(c.next("error")["message"].as_str().unwrap().contains("between 1 and 1000"));
    still_served(&mut c);
}

#[test]
fn a_half_open_page_is_pinged_then_dropped() {
    let limits = Limits { ping_after: Duration::from_millis(300), ..Limits::default() };
    let server = start_with(cloth(), limits);
    let mut good = server.connect();
    good.next("topology");
    // Reads everything (so its writer never stalls) but answers nothing, not even pings.
    let mut silent = server.raw_page();
    let pings = std::thread::spawn(move || {
        let mut pings = 0;
        while let Ok((opcode, _)) = support::read_frame(&mut silent) {
            pings += usize::from(opcode == 0x9);
        }
        pings
    });
    assert!(support::eventually(Duration::from_secs(1), || good.clients() == 2));
    let t0 = Instant::now();
    assert!(support::eventually(Duration::from_secs(10), || good.clients() == 1), "the silent page is still counted");
    let dropped = t0.elapsed();
    assert!(pings.join().unwrap() >= 1, "it was pinged before being dropped");
    println!("half-open page dropped after {dropped:?} (ping after 300 ms of silence, drop after 600 ms)");
    // A page that answers pings (tungstenite does while reading) stays through many rounds.
    let _ = good.next_within("no such message", Duration::from_millis(1500));
    assert_eq!(good.clients(), 1);
}

#[test]
fn a_page_that_stops_reading_is_dropped_and_the_others_go_on() {
    // The default scene streams ~13 kB frames 60 times a second, filling the stalled
    // page's socket buffers in seconds; then its writer's sends make no progress.
    let limits = Limits { slow_page: Duration::from_secs(1), ..Limits::default() };
    let server = start_with(support::default_scene(), limits);
    let mut good = server.connect();
    good.next("topology");
    let stalled = server.raw_page();
    let t0 = Instant::now();
    let mut worst = Duration::ZERO;
    let dropped = support::eventually(Duration::from_secs(14), || {
        let q0 = Instant::now();
        good.query(&[0]);
        worst = worst.max(q0.elapsed());
        good.clients() == 1
    });
    // Before 15 s, so the silence rule (ping after 15 s, drop after 30 s) played no part.
    assert!(dropped, "the stalled page is still connected after {:?}", t0.elapsed());
    println!("stalled page dropped after {:?}; the other page's slowest query {worst:?}", t0.elapsed());
    assert!(worst < Duration::from_secs(1), "the other page waited {worst:?}");
    drop(stalled);
}

#[test]
fn a_full_command_queue_answers_busy_and_runs_the_rest() {
    // Each command asks for 20 of the default scene's steps (milliseconds each, in
    // a test build), so a burst of 20 commands outruns them: with one or two
    // running and four waiting, the rest are refused. (With one step per command
    // a loaded machine let the simulation keep up with the burst: 9 refused.)
    const STEPS: u64 = 20;
    let limits = Limits { command_queue: 4, ..Limits::default() };
    let server = start_with(support::default_scene(), limits);
    let mut c = server.connect();
    c.next("topology");
    c.send(json!({"type": "pause"}));
    let before = c.query(&[0])["steps"].as_u64().unwrap();
    for _ in 0..20 {
        c.send(json!({"type": "step", "n": STEPS}));
    }
    let replies = count_replies(&mut c, &["busy"], Duration::from_secs(2));
    let busy = replies["busy"];
    let after = c.query(&[0])["steps"].as_u64().unwrap();
    println!("{busy} of 20 commands answered busy; {} steps ran", after - before);
    assert!(busy >= 10, "only {busy} busy replies with a queue of 4");
    assert_eq!(after - before, (20 - busy) * STEPS, "every command not refused ran, and no refused one did");
}

#[test]
fn messages_over_the_rate_get_an_error_each_and_are_not_run() {
    let limits = Limits { messages_per_second: 20, ..Limits::default() };
    let server = start_with(cloth(), limits);
    let mut c = server.connect();
    c.next("topology");
    for _ in 0..100 {
        c.send(json!({"type": "query", "particles": [0]}));
    }
    let replies = count_replies(&mut c, &["particles", "error"], Duration::from_secs(2));
    println!("rate 20/s, burst of 100: {replies:?}");
    assert_eq!(replies["particles"] + replies["error"], 100, "each message answered once");
    assert!((20..=25).contains(&replies["particles"]), "one second's burst runs: {replies:?}");
}

#[test]
fn what_is_not_http_gets_400_and_the_server_goes_on() {
    let server = start(CLOTH);
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let (head, _) = server.get("/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

/// Counts the JSON replies of the given types until none has come for `quiet`.
fn count_replies(c: &mut Client, kinds: &[&str], quiet: Duration) -> std::collections::BTreeMap<String, u64> {
    let mut counts: std::collections::BTreeMap<String, u64> = kinds.iter().map(|k| ((*k).to_owned(), 0)).collect();
    c.ws.get_ref().set_read_timeout(Some(quiet)).unwrap();
    let mut last = Instant::now();
    while last.elapsed() < quiet {
        match c.ws.read() {
            Ok(Message::Text(t)) => {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                if let Some(n) = v["type"].as_str().and_then(|k| counts.get_mut(k)) {
                    *n += 1;
                    last = Instant::now();
                }
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    c.ws.get_ref().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    counts
}
