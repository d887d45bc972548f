//! What the server costs the machine: idle sockets take at most the connection cap
//! in threads and are let go after the head timeout; connections beyond the cap
//! get 503 without a thread; with no page connected the simulation stops and the
//! process uses next to no CPU.
//!
//! Thread counts and CPU time are read for the whole test process from /proc, so
//! the tests of this file run one at a time (the `SERIAL` lock).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use wobble_scene::{Scene, Source};
use wobble_viewer::{Limits, Notice};

mod support;
use support::{CLOTH, cpu_time, eventually, start_with, thread_count};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn cloth() -> Scene {
    Scene::parse(Source::new("test-cloth.toml", CLOTH), std::path::PathBuf::from(".")).expect("scene parses")
}

/// The status of an answer waiting on `s`, if one is there (without blocking).
fn status_waiting(s: &mut TcpStream) -> Option<u16> {
    s.set_nonblocking(true).ok()?;
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    s.set_nonblocking(false).ok()?;
    let line = std::str::from_utf8(&buf[..n]).ok()?;
    line.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// Threads beyond the connection cap that the server may add (slack for the
/// simulation thread's helpers and the test's own).
const SLACK: usize = 4;

#[test]
fn five_hundred_idle_sockets_take_at_most_the_cap_in_threads_and_time_out() {
    let _serial = serial();
    let limits = Limits { head_timeout: Duration::from_secs(2), ..Limits::default() };
    let cap = limits.max_connections;
    let server = start_with(cloth(), limits);
    std::thread::sleep(Duration::from_millis(200));
    let baseline = thread_count();
    let mut idle: Vec<TcpStream> = (0..500).map(|_| TcpStream::connect(server.addr).expect("connects")).collect();
    // Each socket is answered 503 at once (beyond the cap) or 408 after the head
    // timeout (it held a slot). Sockets the kernel could not queue for accept are
    // taken later, as its handshake retries come in.
    let mut answers: Vec<Option<u16>> = vec![None; idle.len()];
    let mut most_threads = thread_count();
    let t0 = Instant::now();
    while answers.contains(&None) && t0.elapsed() < Duration::from_secs(20) {
        most_threads = most_threads.max(thread_count());
        for (s, a) in idle.iter_mut().zip(&mut answers) {
            if a.is_none() {
                *a = status_waiting(s);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let count = |code| answers.iter().filter(|&&a| a == Some(code)).count();
    let (refused, timed_out) = (count(503), count(408));
    println!(
        "500 idle sockets: threads {baseline} → at most {most_threads} (cap {cap}); {refused} answered 503, \
         {timed_out} 408 after the head timeout, all within {:?}",
        t0.elapsed()
    );
    assert!(
        most_threads <= baseline + cap + SLACK,
        "{most_threads} threads with 500 idle sockets (baseline {baseline}, cap {cap})"
    );
    assert_eq!(refused + timed_out, 500, "every idle socket is refused or timed out: {answers:?}");
    assert!(timed_out >= cap && refused >= 250, "{refused} refused, {timed_out} timed out");
    // Their slots are free again: the threads are gone and real requests are served.
    assert!(
        eventually(Duration::from_secs(5), || thread_count() <= baseline + SLACK),
        "threads still {} after the head timeout",
        thread_count()
    );
    let (head, _) = server.get("/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

#[test]
fn connections_beyond_the_cap_get_503_without_a_thread() {
    let _serial = serial();
    let limits = Limits { max_connections: 4, ..Limits::default() };
    let server = start_with(cloth(), limits);
    let held: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(server.addr).unwrap()).collect();
    assert!(eventually(Duration::from_secs(5), || {
        let mut probe = TcpStream::connect(server.addr).unwrap();
        probe.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut answer = String::new();
        let _ = probe.read_to_string(&mut answer);
        answer.starts_with("HTTP/1.1 503")
    }));
    let threads = thread_count();
    for _ in 0..50 {
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{answer}");
        assert!(thread_count() <= threads, "a refused connection started a thread");
    }
    drop(held);
    assert!(
        eventually(Duration::from_secs(5), || server.get("/").0.starts_with("HTTP/1.1 200")),
        "served again once the held connections closed"
    );
}

#[test]
fn a_request_head_trickled_in_is_cut_off_at_the_timeout() {
    let _serial = serial();
    let limits = Limits { head_timeout: Duration::from_millis(500), ..Limits::default() };
    let server = start_with(cloth(), limits);
    let mut s = TcpStream::connect(server.addr).unwrap();
    let t0 = Instant::now();
    s.write_all(b"GET / HTTP/1.1\r\nX-Slow: ").unwrap();
    // One byte every 100 ms: every read succeeds, but the head never ends.
    let mut answer = Vec::new();
    s.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    while t0.elapsed() < Duration::from_secs(5) {
        let mut buf = [0u8; 256];
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(_) => {
                if s.write_all(b"a").is_err() {
                    break;
                }
            }
        }
    }
    let took = t0.elapsed();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(took >= Duration::from_millis(450) && took < Duration::from_secs(2), "cut off after {took:?}");
}

#[test]
fn with_no_page_connected_the_simulation_pauses_and_the_process_idles() {
    let _serial = serial();
    let server = start_with(support::default_scene(), Limits::default());
    assert_eq!(server.notice(Duration::from_secs(5)), Some(Notice::Paused), "says so at the start");
    let mut page = server.connect();
    assert_eq!(server.notice(Duration::from_secs(5)), Some(Notice::Resumed));
    page.next("topology");
    assert!(eventually(Duration::from_secs(20), || page.query(&[0])["steps"].as_u64() > Some(0)), "it runs");
    let steps_before = page.query(&[0])["steps"].as_u64().unwrap();
    drop(page);
    assert_eq!(server.notice(Duration::from_secs(5)), Some(Notice::Paused), "the last page left");

    std::thread::sleep(Duration::from_millis(300));
    let (cpu0, t0) = (cpu_time(), Instant::now());
    std::thread::sleep(Duration::from_secs(3));
    let (cpu, wall) = (cpu_time() - cpu0, t0.elapsed());
    let share = cpu.as_secs_f64() / wall.as_secs_f64();
    println!("no page connected: {cpu:?} of CPU in {wall:?} ({:.2} % of a core)", 100.0 * share);
    assert!(share < 0.02, "{:.1} % of a core with no page connected", 100.0 * share);

    // The world stood still meanwhile, and runs again for the next page.
    let mut page = server.connect();
    assert_eq!(server.notice(Duration::from_secs(5)), Some(Notice::Resumed));
    page.next("topology");
    let steps_after = page.query(&[0])["steps"].as_u64().unwrap();
    assert!(
        steps_after - steps_before < 200,
        "{} steps while no page was connected for 3 s",
        steps_after - steps_before
    );
}
