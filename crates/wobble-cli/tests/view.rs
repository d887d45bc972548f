//! `wobble view`: starts, prints its URL, serves the page; a bad scene is refused
//! with the scene error and status 2.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Kills the server when the test ends, pass or fail.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn view_prints_its_url_and_serves_the_page() {
    let child = Command::new(env!("CARGO_BIN_EXE_wobble"))
        .args(["view", "scenes/chain.toml", "--port", "0"])
        .current_dir(repo())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut server = Server(child);
    let mut line = String::new();
    BufReader::new(server.0.stdout.take().expect("stdout")).read_line(&mut line).expect("reads");
    let url = line.trim().strip_prefix("wobble viewer: ").expect("prints the URL").to_owned();
    let addr = url.strip_prefix("http://").and_then(|a| a.strip_suffix('/')).expect("http URL");
    assert!(addr.starts_with("127.0.0.1:"), "{url}");
    let mut s = TcpStream::connect(addr).expect("connects");
    write!(s, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("wobble viewer"));
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
