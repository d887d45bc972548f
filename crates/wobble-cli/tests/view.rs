//! `wobble view`: starts, prints its URL with the launch token and says the
//! simulation waits for a page; serves the page only through the token; `--listen`
//! warns, `--max-connections` caps; a bad scene is refused with the scene error and
//! status 2; out of file descriptors, the accept loop backs off instead of spinning.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Kills the server when the test ends, pass or fail.
struct Server {
    child: Child,
    stdout: BufReader<ChildStdout>,
    /// `127.0.0.1:PORT`.
    addr: String,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Runs `command` (a `wobble view …` invocation) and reads the URL it prints.
    fn start(mut command: Command) -> Server {
        let mut child = command.current_dir(repo()).stdout(Stdio::piped()).spawn().expect("starts");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("reads");
        let url = line.trim().strip_prefix("wobble viewer: ").expect("prints the URL").to_owned();
        let (addr, token) = url
            .strip_prefix("http://")
            .and_then(|rest| rest.split_once("/?t="))
            .unwrap_or_else(|| panic!("an http URL with the token: {url}"));
        assert_eq!(token.len(), 32, "128 bits in hex: {url}");
        Server { addr: addr.to_owned(), token: token.to_owned(), child, stdout }
    }

    fn next_line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("reads");
        line.trim().to_owned()
    }

    /// GETs `target` with the right Host and `extra` header lines; the response.
    fn get(&self, target: &str, extra: &str) -> String {
        let mut s = TcpStream::connect(&self.addr).expect("connects");
        // A server that refuses the connection (over --max-connections) may answer
        // and close before the request is written: the write then fails with a
        // broken pipe, and the answer is still there to read.
        let _ = write!(s, "GET {target} HTTP/1.1\r\nHost: {}\r\n{extra}\r\n", self.addr);
        let mut response = String::new();
        let _ = s.read_to_string(&mut response);
        response
    }
}

fn view(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wobble"));
    c.arg("view").args(args);
    c
}

#[test]
fn view_prints_its_token_url_and_serves_the_page_through_it() {
    let mut server = Server::start(view(&["scenes/chain.toml", "--port", "0"]));
    assert!(server.addr.starts_with("127.0.0.1:"), "{}", server.addr);
    assert_eq!(server.next_line(), "wobble viewer: no page connected: the simulation is paused until one connects");
    let refused = server.get("/", "");
    assert!(refused.starts_with("HTTP/1.1 403"), "no token: {refused}");
    let redirect = server.get(&format!("/?t={}", server.token), "");
    assert!(redirect.starts_with("HTTP/1.1 303"), "{redirect}");
    let cookie = redirect.lines().find_map(|l| l.strip_prefix("Set-Cookie: ")).expect("a cookie");
    let cookie = cookie.split(';').next().unwrap();
    let page = server.get("/", &format!("Cookie: {cookie}\r\n"));
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("wobble viewer"));
}

#[test]
fn listen_beyond_localhost_warns_and_still_needs_the_token() {
    let mut command = view(&["scenes/chain.toml", "--listen", "0.0.0.0:0"]);
    command.stderr(Stdio::piped());
    let mut server = Server::start(command);
    let mut warning = String::new();
    BufReader::new(server.child.stderr.take().unwrap()).read_line(&mut warning).unwrap();
    assert!(warning.starts_with("warning: serving on 0.0.0.0:"), "{warning}");
    assert!(warning.contains("ssh -L"), "points at SSH forwarding: {warning}");
    assert!(server.addr.starts_with("127.0.0.1:"), "the printed URL is still the local one: {}", server.addr);
    assert!(server.get("/", "").starts_with("HTTP/1.1 403"), "the token is still required");
    assert!(server.get(&format!("/?t={}", server.token), "").starts_with("HTTP/1.1 303"));
    // Loopback needs no warning.
    let mut quiet = view(&["scenes/chain.toml", "--listen", "127.0.0.1:0"]);
    quiet.stderr(Stdio::piped());
    let mut server = Server::start(quiet);
    let _ = server.child.kill();
    let mut err = String::new();
    server.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(!err.contains("warning"), "{err}");
}

#[test]
fn max_connections_caps_simultaneous_connections() {
    let server = Server::start(view(&["scenes/chain.toml", "--port", "0", "--max-connections", "2"]));
    let held: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(&server.addr).unwrap()).collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    let answer = loop {
        let answer = server.get("/", "");
        if answer.starts_with("HTTP/1.1 503") || Instant::now() > deadline {
            break answer;
        }
    };
    assert!(answer.starts_with("HTTP/1.1 503"), "a third connection: {answer}");
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server.get("/", "").starts_with("HTTP/1.1 403") {
        assert!(Instant::now() < deadline, "served again once the two closed");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// CPU time of process `pid`, s (user + system, clock ticks of 10 ms).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<u64> = after.split(' ').take(13).map(|f| f.parse().unwrap_or(0)).collect();
    (fields[11] + fields[12]) as f64 / 100.0
}

#[test]
fn out_of_file_descriptors_the_accept_loop_backs_off() {
    // 24 descriptors: the server's own few, then a handful of connections, and
    // accept fails with EMFILE while more wait in the backlog. A loop that retried
    // at once would burn a core until the idle connections time out (5 s).
    let mut command = Command::new("bash");
    command.args([
        "-c",
        &format!("ulimit -n 24 && exec {} view scenes/chain.toml --port 0", env!("CARGO_BIN_EXE_wobble")),
    ]);
    let server = Server::start(command);
    let pid = server.child.id();
    let _idle: Vec<TcpStream> = (0..40).map(|_| TcpStream::connect(&server.addr).expect("queued")).collect();
    std::thread::sleep(Duration::from_millis(300));
    let (cpu0, t0) = (cpu_seconds(pid), Instant::now());
    std::thread::sleep(Duration::from_secs(3));
    let share = (cpu_seconds(pid) - cpu0) / t0.elapsed().as_secs_f64();
    println!("out of descriptors with 40 connections waiting: {:.1} % of a core", 100.0 * share);
    assert!(share < 0.1, "{:.0} % of a core while out of descriptors", 100.0 * share);
}

#[test]
fn view_refuses_a_bad_scene_with_its_location() {
    let dir = std::env::temp_dir().join(format!("wobble-view-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("bad.toml");
    std::fs::write(&scene, "[simulation]\ndt = -1\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_wobble"))
        .args(["view", scene.to_str().unwrap(), "--port", "0"])
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:2:"), "{err}");
}
