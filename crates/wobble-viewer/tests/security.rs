//! Who gets in: the page, an asset and the WebSocket each refuse, with a bare 403,
//! a wrong Host (DNS rebinding), a foreign Origin, a missing token and a wrong token
//! of the right length; the token in the URL is traded for an HttpOnly,
//! SameSite=Strict cookie; `load` takes only the scenes the server lists.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;

mod support;
use support::{CLOTH, Server, start};

/// What a request carries, each part replaceable.
struct Ask<'a> {
    path: &'a str,
    host: String,
    origin: Option<String>,
    cookie: Option<String>,
}

impl Ask<'_> {
    /// As the viewer's own page sends it: right Host, the cookie, and for `/ws` the
    /// upgrade headers and our Origin.
    fn own<'a>(server: &Server, path: &'a str) -> Ask<'a> {
        let origin = (path == "/ws").then(|| format!("http://{}", server.host()));
        Ask { path, host: server.host(), origin, cookie: Some(server.cookie()) }
    }

    /// Sends it; returns the response head and body.
    fn send(&self, server: &Server) -> (String, Vec<u8>) {
        let mut head = format!("GET {} HTTP/1.1\r\nHost: {}", self.path, self.host);
        if let Some(o) = &self.origin {
            head += &format!("\r\nOrigin: {o}");
        }
        if let Some(c) = &self.cookie {
            head += &format!("\r\nCookie: {c}");
        }
        if !self.path.starts_with("/ws") {
            return server.request(&head);
        }
        head += "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==";
        // A successful upgrade keeps the socket open: read the head and what came with it.
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "{head}\r\n\r\n").unwrap();
        let mut buf = vec![0u8; 4096];
        let mut got = Vec::new();
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut buf).unwrap_or(0);
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        if !got.starts_with(b"HTTP/1.1 101") {
            let _ = s.read_to_end(&mut got); // a refusal closes: take the whole body
        }
        let split = got.windows(4).position(|w| w == b"\r\n\r\n").map_or(got.len(), |i| i + 4);
        (String::from_utf8_lossy(&got[..split]).into_owned(), got[split..].to_vec())
    }
}

fn status(head: &str) -> u16 {
    head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// A refusal is 403 with the one-word body and no cookie.
fn assert_forbidden(what: &str, (head, body): (String, Vec<u8>)) {
    assert_eq!(status(&head), 403, "{what}: {head}");
    assert_eq!(body, b"forbidden\n", "{what}: the body says nothing more");
    assert!(!head.to_ascii_lowercase().contains("set-cookie"), "{what}: {head}");
}

const TARGETS: [(&str, u16); 3] = [("/", 200), ("/app.js", 200), ("/ws", 101)];

#[test]
fn the_viewers_own_requests_are_served() {
    // The control for every refusal below: the same requests with everything right.
    let server = start(CLOTH);
    for (path, want) in TARGETS {
        let (head, _) = Ask::own(&server, path).send(&server);
        assert_eq!(status(&head), want, "{path}: {head}");
    }
    // localhost names the same server.
    let ask = Ask { host: format!("localhost:{}", server.addr.port()), ..Ask::own(&server, "/app.js") };
    assert_eq!(status(&ask.send(&server).0), 200);
}

#[test]
fn a_wrong_host_is_refused_on_the_page_an_asset_and_the_socket() {
    let server = start(CLOTH);
    let port = server.addr.port();
    for (path, _) in TARGETS {
        for host in [format!("attacker.example:{port}"), format!("127.0.0.1:{}", port.wrapping_add(1)), String::new()] {
            let origin = (path == "/ws").then(|| format!("http://{host}"));
            let ask = Ask { host: host.clone(), origin, ..Ask::own(&server, path) };
            assert_forbidden(&format!("{path} with Host `{host}`"), ask.send(&server));
        }
    }
}

#[test]
fn a_foreign_origin_is_refused_on_the_page_an_asset_and_the_socket() {
    let server = start(CLOTH);
    for (path, _) in TARGETS {
        for origin in ["http://attacker.example", "null", &format!("https://{}", server.host())] {
            let ask = Ask { origin: Some(origin.to_owned()), ..Ask::own(&server, path) };
            assert_forbidden(&format!("{path} from {origin}"), ask.send(&server));
        }
    }
    // A socket must say where it comes from (browsers always do).
    let ask = Ask { origin: None, ..Ask::own(&server, "/ws") };
    assert_forbidden("/ws without Origin", ask.send(&server));
}

#[test]
fn a_missing_token_is_refused_on_the_page_an_asset_and_the_socket() {
    let server = start(CLOTH);
    for (path, _) in TARGETS {
        let ask = Ask { cookie: None, ..Ask::own(&server, path) };
        assert_forbidden(&format!("{path} without a token"), ask.send(&server));
    }
}

#[test]
fn a_wrong_token_of_the_right_length_is_refused_on_the_page_an_asset_and_the_socket() {
    let server = start(CLOTH);
    let port = server.addr.port();
    // Same length, one digit changed: the comparison must look at every digit.
    let mut wrong: Vec<u8> = server.token.clone().into_bytes();
    let last = wrong.len() - 1;
    wrong[last] = if wrong[last] == b'0' { b'1' } else { b'0' };
    let wrong = String::from_utf8(wrong).unwrap();
    assert_eq!(wrong.len(), 32, "128 bits in hex");
    for (path, _) in TARGETS {
        let by_cookie = Ask { cookie: Some(format!("wobble-{port}={wrong}")), ..Ask::own(&server, path) };
        assert_forbidden(&format!("{path} with a wrong cookie"), by_cookie.send(&server));
        let query = format!("{path}?t={wrong}");
        let by_query = Ask { path: &query, cookie: None, ..Ask::own(&server, path) };
        assert_forbidden(&format!("{path} with a wrong ?t="), by_query.send(&server));
        // The right token under another viewer's cookie name does not count either.
        let other = Ask { cookie: Some(format!("wobble-{}={}", port ^ 1, server.token)), ..Ask::own(&server, path) };
        assert_forbidden(&format!("{path} with another port's cookie"), other.send(&server));
    }
}

#[test]
fn the_token_in_the_url_is_traded_for_a_strict_http_only_cookie() {
    let server = start(CLOTH);
    let query = format!("/?t={}", server.token);
    let (head, body) = Ask { path: &query, cookie: None, ..Ask::own(&server, "/") }.send(&server);
    assert_eq!(status(&head), 303, "{head}");
    assert!(head.contains("\r\nLocation: /\r\n"), "the token leaves the address bar: {head}");
    let cookie = head.lines().find_map(|l| l.strip_prefix("Set-Cookie: ")).expect("sets the cookie");
    assert!(cookie.starts_with(&format!("{}; ", server.cookie())), "{cookie}");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.split("; ").any(|a| a == attribute), "{attribute} missing: {cookie}");
    }
    assert!(body.is_empty());
    // The token also opens an asset and the socket directly (tools without cookies).
    for path in ["/app.js", "/ws"] {
        let with_token = format!("{path}?t={}", server.token);
        let (head, _) = Ask { path: &with_token, cookie: None, ..Ask::own(&server, path) }.send(&server);
        assert!(matches!(status(&head), 200 | 101), "{path}: {head}");
    }
    // The page itself never carries the token.
    let (_, page) = server.get("/");
    assert!(!String::from_utf8_lossy(&page).contains(&server.token));
}

#[test]
fn two_launches_draw_different_tokens() {
    let (a, b) = (start(CLOTH), start(CLOTH));
    assert_ne!(a.token, b.token);
    assert!(a.token.bytes().all(|c| c.is_ascii_hexdigit()) && a.token.len() == 32);
}

#[test]
fn load_takes_only_the_scenes_the_server_lists() {
    let server = start(CLOTH);
    let mut c = server.connect();
    let hello = c.next("hello");
    let listed: Vec<&str> = hello["scenes"].as_array().unwrap().iter().filter_map(|s| s.as_str()).collect();
    c.next("topology");
    let absolute = support::scenes_dir().join("drag.toml").canonicalize().unwrap();
    for bad in ["../scenes/drag.toml", absolute.to_str().unwrap(), "/etc/hostname", "drag.toml/../chain.toml", ""] {
        assert!(!listed.contains(&bad));
        c.send(json!({"type": "load", "scene": bad}));
        let e = c.next("error");
        assert!(e["message"].as_str().unwrap().starts_with("unknown scene"), "{bad}: {e}");
    }
    c.send(json!({"type": "load", "scene": "drag.toml"}));
    assert_eq!(c.next("topology")["scene"], "drag.toml", "a listed name loads");
}
