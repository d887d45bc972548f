//! Shared helpers for the viewer's server tests: starting a viewer on a free port,
//! a WebSocket page (tungstenite, an implementation independent of the server's)
//! that carries the token and the viewer's own Origin, raw HTTP requests, and
//! readings of this process's threads and CPU time from /proc.
//!
//! Every test file includes this with `mod support;`; not every file uses every
//! helper.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::Value;
use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};
use wobble_scene::{Scene, Source};
use wobble_viewer::protocol::{FrameHeader, decode_frame, decode_header};
use wobble_viewer::{Limits, Notice, Options, Viewer};

/// A 6 × 6 horizontal cloth held at two corners.
pub const CLOTH: &str = r#"
[simulation]
integrator = "symplectic-euler"
dt = 1e-3
gravity = [0, -9.81, 0]

[[body]]
name = "cloth"
type = "cloth"
nx = 6
ny = 6
spacing = 0.1
origin = [0, 1, 0]
u = [1, 0, 0]
v = [0, 0, 1]
mass = 0.5
pin = { grid = [[0, 0], [5, 0]] }
springs.structural = { stiffness = 800, damping = 0.2 }
springs.shear = { stiffness = 400, damping = 0.1 }
"#;

/// The repository's `scenes/`.
pub fn scenes_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenes")
}

/// The built-in default scene (1091 particles, h = 0.2 ms).
pub fn default_scene() -> Scene {
    Scene::load(&scenes_dir().join("default.toml")).expect("the default scene loads")
}

/// A running viewer.
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its launch token.
    pub token: String,
    /// What it said about pausing and resuming.
    pub notices: Receiver<Notice>,
}

/// Serves the scene in `text` on 127.0.0.1 with the default limits.
pub fn start(text: &str) -> Server {
    let scene = Scene::parse(Source::new("test-cloth.toml", text), PathBuf::from(".")).expect("scene parses");
    start_with(scene, Limits::default())
}

/// Serves `scene` on a free port of 127.0.0.1 within `limits`.
pub fn start_with(scene: Scene, limits: Limits) -> Server {
    let listen = SocketAddr::from(([127, 0, 0, 1], 0));
    let viewer = Viewer::bind_with(scene, Some(scenes_dir()), Options { listen, limits }).expect("binds");
    let (tx, notices) = mpsc::channel();
    let viewer = viewer.on_notice(move |n| {
        let _ = tx.send(n);
    });
    let addr = viewer.local_addr().expect("address");
    let token = viewer.token().to_owned();
    let url = viewer.url().expect("url");
    assert_eq!(url, format!("http://{addr}/?t={token}"));
    std::thread::spawn(move || viewer.run());
    Server { addr, token, notices }
}

impl Server {
    /// `127.0.0.1:PORT`, the Host the viewer expects.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// The `Cookie` header value the page holds after trading the token.
    pub fn cookie(&self) -> String {
        format!("wobble-{}={}", self.addr.port(), self.token)
    }

    /// Sends `head` (request line and header lines, without the blank line) and
    /// reads the whole response: (head, body). A server at its connection cap
    /// answers 503 and closes at once, possibly before the request is written
    /// (broken pipe, seen under CI load): the write's error is ignored and the
    /// answer read anyway, so callers see the 503 (or nothing) and may retry.
    pub fn request(&self, head: &str) -> (String, Vec<u8>) {
        let mut s = TcpStream::connect(self.addr).expect("connects");
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = write!(s, "{head}\r\n\r\n");
        read_response(&mut s)
    }

    /// GET `path` as the viewer's own page would: right Host, the cookie.
    pub fn get(&self, path: &str) -> (String, Vec<u8>) {
        self.request(&format!("GET {path} HTTP/1.1\r\nHost: {}\r\nCookie: {}", self.host(), self.cookie()))
    }

    /// A page connected over `/ws` with the cookie and the viewer's Origin.
    pub fn connect(&self) -> Client {
        self.try_connect(&[("Cookie", &self.cookie()), ("Origin", &format!("http://{}", self.host()))], "/ws")
            .unwrap_or_else(|e| panic!("handshake: {e}"))
    }

    /// A WebSocket handshake on `path` with these extra headers (Host is the
    /// viewer's own unless given).
    pub fn try_connect(&self, headers: &[(&str, &str)], path: &str) -> Result<Client, String> {
        let mut request = format!("ws://{}{path}", self.addr).into_client_request().map_err(|e| e.to_string())?;
        for (k, v) in headers {
            let name: tungstenite::http::HeaderName = k.parse().map_err(|_| format!("bad header {k}"))?;
            request.headers_mut().insert(name, v.parse().map_err(|_| format!("bad value {v}"))?);
        }
        let stream = TcpStream::connect(self.addr).map_err(|e| e.to_string())?;
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let (ws, _) = tungstenite::client(request, stream).map_err(|e| e.to_string())?;
        Ok(Client { ws, last_frame: None })
    }

    /// The next notice within `timeout`.
    pub fn notice(&self, timeout: Duration) -> Option<Notice> {
        self.notices.recv_timeout(timeout).ok()
    }
}

/// Reads a whole `Connection: close` response: (head, body).
pub fn read_response(s: &mut TcpStream) -> (String, Vec<u8>) {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").map_or(out.len(), |i| i + 4);
    (String::from_utf8_lossy(&out[..split]).into_owned(), out[split..].to_vec())
}

/// A page.
pub struct Client {
    /// The socket.
    pub ws: WebSocket<TcpStream>,
    /// Header of the last frame read (also while looking for JSON messages).
    pub last_frame: Option<FrameHeader>,
}

impl Client {
    /// Sends a JSON message.
    pub fn send(&mut self, v: Value) {
        self.ws.send(Message::text(v.to_string())).expect("sends");
    }

    /// Sends any message.
    pub fn send_raw(&mut self, m: Message) {
        self.ws.send(m).expect("sends");
    }

    /// The next JSON message of type `kind` within 20 s, skipping others and frames.
    pub fn next(&mut self, kind: &str) -> Value {
        self.next_within(kind, Duration::from_secs(20)).unwrap_or_else(|| panic!("no `{kind}` message within 20 s"))
    }

    /// The next JSON message of type `kind` before `timeout` passes.
    pub fn next_within(&mut self, kind: &str, timeout: Duration) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            match self.ws.read().expect("reads") {
                Message::Text(t) => {
                    let v: Value = serde_json::from_str(t.as_str()).expect("server sends JSON");
                    if v["type"] == kind {
                        return Some(v);
                    }
                }
                Message::Binary(b) => {
                    self.last_frame = Some(decode_header(&b).expect("server frames decode"));
                }
                _ => {}
            }
        }
        None
    }

    /// Waits (up to 20 s) for a status message that satisfies `pred`.
    pub fn wait_status(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.next("status");
            if pred(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "no matching status within 20 s; last: {s}");
        }
    }

    /// The next binary frame (within 20 s).
    pub fn frame(&mut self) -> (FrameHeader, Vec<[f32; 3]>) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Message::Binary(b) = self.ws.read().expect("reads") {
                let frame = decode_frame(&b).expect("decodes");
                self.last_frame = Some(frame.header);
                return (frame.header, frame.positions);
            }
        }
        panic!("no frame within 20 s");
    }

    /// Asks for particles' positions and waits for the answer.
    pub fn query(&mut self, particles: &[usize]) -> Value {
        self.send(serde_json::json!({"type": "query", "particles": particles}));
        self.next("particles")
    }

    /// Number of pages the server counts, from a fresh status.
    pub fn clients(&mut self) -> u64 {
        self.send(serde_json::json!({"type": "status"}));
        self.next("status")["clients"].as_u64().expect("status counts pages")
    }
}

/// Threads of this process now (`Threads:` of /proc/self/status).
pub fn thread_count() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|n| n.trim().parse().ok()).expect("a Threads line")
}

/// CPU time this process has used, user + system (fields 14 and 15 of
/// /proc/self/stat, in clock ticks of 10 ms: Linux's USER_HZ is 100 on every
/// architecture it exports to user space).
pub fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The command name is in parentheses and may hold spaces; count fields after it.
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<u64> = after.split(' ').take(13).map(|f| f.parse().unwrap_or(0)).collect();
    Duration::from_millis((fields[11] + fields[12]) * 10)
}

/// Polls `f` every 20 ms until it holds or `timeout` passes; whether it held.
pub fn eventually(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Server {
    /// A page on a raw socket: the WebSocket handshake done by hand (cookie, Origin),
    /// the `101` head read, nothing else.
    pub fn raw_page(&self) -> TcpStream {
        let mut s = TcpStream::connect(self.addr).expect("connects");
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(
            s,
            "GET /ws HTTP/1.1\r\nHost: {h}\r\nOrigin: http://{h}\r\nCookie: {c}\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
            h = self.host(),
            c = self.cookie()
        )
        .unwrap();
        // Byte by byte up to the blank line, so no frame bytes are swallowed.
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut byte).expect("handshake answer");
            head.push(byte[0]);
        }
        assert!(head.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&head));
        s
    }
}

/// A client frame (masked, as clients must) with first byte `first` (FIN and opcode).
pub fn masked(first: u8, payload: &[u8]) -> Vec<u8> {
    let mask = [0x12, 0x34, 0x56, 0x78];
    let mut out = vec![first];
    match payload.len() {
        n if n < 126 => out.push(0x80 | n as u8),
        n if n < 65536 => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// Reads one server frame from a raw socket: (opcode, payload).
pub fn read_frame(s: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 2];
    s.read_exact(&mut head)?;
    let len = match head[1] & 0x7F {
        126 => {
            let mut b = [0u8; 2];
            s.read_exact(&mut b)?;
            u64::from(u16::from_be_bytes(b))
        }
        127 => {
            let mut b = [0u8; 8];
            s.read_exact(&mut b)?;
            u64::from_be_bytes(b)
        }
        n => u64::from(n),
    };
    let mut payload = vec![0u8; len as usize];
    s.read_exact(&mut payload)?;
    Ok((head[0] & 0x0F, payload))
}

/// Reads server frames until a close frame; returns its code and the text messages
/// seen before it.
pub fn read_until_close(s: &mut TcpStream) -> (Option<u16>, Vec<String>) {
    let mut texts = Vec::new();
    while let Ok((opcode, payload)) = read_frame(s) {
        match opcode {
            0x1 => texts.push(String::from_utf8_lossy(&payload).into_owned()),
            0x8 => return (payload.get(..2).map(|c| u16::from_be_bytes([c[0], c[1]])), texts),
            _ => {}
        }
    }
    (None, texts)
}
