//! Who may use the viewer: whoever holds the launch token, through a browser that
//! addressed this server by a name we expect.
//!
//! Three checks, on every request (page, asset and `/ws` alike):
//! - **Host.** DNS rebinding points a name the attacker owns at 127.0.0.1, so the
//!   victim's browser sends the attacker's name in `Host`. Only `127.0.0.1:PORT`,
//!   `localhost:PORT` and `[::1]:PORT` are accepted, plus the `--listen` address;
//!   when that address is unspecified (`0.0.0.0`), any IP literal with our port
//!   (a literal cannot be rebound; names can).
//! - **Origin.** When a request carries `Origin` it must be our own
//!   (`http://` + the Host); a WebSocket upgrade must carry it, since browsers
//!   always do and a foreign page must not open the socket.
//! - **Token.** 128 random bits from the operating system, drawn at launch and
//!   printed in the URL (`/?t=HEX`). The page trades it for an `HttpOnly`,
//!   `SameSite=Strict` cookie and a redirect to `/` (so the token leaves the address
//!   bar); every later request must carry the cookie or the token. Compared in
//!   constant time; never formatted by `Debug` or written to a log.
//!
//! A request that fails any check gets `403` and a one-word body.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::http::Head;

/// Bytes of randomness in a token (128 bits).
pub const TOKEN_BYTES: usize = 16;

/// The per-launch secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    /// Lower-case hex of the random bytes, the form it travels in.
    hex: String,
}

impl Token {
    /// Draws a token from the operating system's random source.
    pub fn generate() -> Result<Token, getrandom::Error> {
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes)?;
        Ok(Token::from_bytes(bytes))
    }

    /// A token with the given bytes (for tests that need a known one).
    #[must_use]
    pub fn from_bytes(bytes: [u8; TOKEN_BYTES]) -> Token {
        Token { hex: bytes.iter().map(|b| format!("{b:02x}")).collect() }
    }

    /// The token as it appears in the URL and the cookie.
    #[must_use]
    pub fn hex(&self) -> &str {
        &self.hex
    }

    /// True when `candidate` is this token. The time taken depends only on the
    /// lengths, never on where the first difference lies.
    #[must_use]
    pub fn matches(&self, candidate: &str) -> bool {
        let (a, b) = (self.hex.as_bytes(), candidate.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | std::hint::black_box(x ^ y));
        std::hint::black_box(diff) == 0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<secret>)")
    }
}

/// How a request proved it holds the token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// It failed a check: answer 403.
    Denied,
    /// By `?t=` in the URL (the page answers with the cookie and a redirect).
    Query,
    /// By the cookie.
    Cookie,
}

/// The checks for one server: its token and the Host values it answers to.
#[derive(Clone, Debug)]
pub struct Gate {
    token: Token,
    port: u16,
    listen: SocketAddr,
}

impl Gate {
    /// The gate of a server listening on `listen` (with its real port).
    #[must_use]
    pub fn new(token: Token, listen: SocketAddr) -> Gate {
        Gate { token, port: listen.port(), listen }
    }

    /// The token.
    #[must_use]
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// The cookie's name. Browsers share cookies between the ports of a host, so the
    /// port is part of the name: two viewers on one machine keep their own.
    #[must_use]
    pub fn cookie_name(&self) -> String {
        format!("wobble-{}", self.port)
    }

    /// The `Set-Cookie` header line the page's redirect carries.
    #[must_use]
    pub fn set_cookie(&self) -> String {
        format!("Set-Cookie: {}={}; Path=/; HttpOnly; SameSite=Strict\r\n", self.cookie_name(), self.token.hex())
    }

    /// True when `host` (a `Host` header) names this server as we expect.
    #[must_use]
    pub fn host_allowed(&self, host: &str) -> bool {
        let (name, port) = match host.rsplit_once(':') {
            Some((name, port)) if !name.is_empty() && !port.contains(']') => (name, port.parse::<u16>().ok()),
            _ => (host, Some(80)),
        };
        if port != Some(self.port) {
            return false;
        }
        if name.eq_ignore_ascii_case("localhost") {
            return true;
        }
        // An IP literal: bracketed for v6 (as URLs write it), bare for v4.
        let literal = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')).unwrap_or(name);
        let Some(ip) = literal.parse::<IpAddr>().ok().filter(|ip| ip.is_ipv6() == name.starts_with('[')) else {
            return false;
        };
        ip == IpAddr::V4(Ipv4Addr::LOCALHOST)
            || ip == IpAddr::V6(Ipv6Addr::LOCALHOST)
            || self.listen.ip().is_unspecified()
            || ip == self.listen.ip()
    }

    /// Runs the three checks on a request head; `websocket` for an upgrade, which
    /// must carry `Origin`.
    #[must_use]
    pub fn check(&self, head: &Head, websocket: bool) -> Access {
        let Some(host) = head.header("host").filter(|h| self.host_allowed(h)) else {
            return Access::Denied;
        };
        match head.header("origin") {
            Some(origin) if origin.strip_prefix("http://") != Some(host) => return Access::Denied,
            None if websocket => return Access::Denied,
            _ => {}
        }
        if head.query_param("t").is_some_and(|t| self.token.matches(t)) {
            Access::Query
        } else if head.cookie(&self.cookie_name()).is_some_and(|t| self.token.matches(t)) {
            Access::Cookie
        } else {
            Access::Denied
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(listen: &str) -> Gate {
        Gate::new(Token::from_bytes([0xab; TOKEN_BYTES]), listen.parse().unwrap())
    }

    fn head(lines: &str) -> Head {
        Head::parse(&format!("GET /app.js HTTP/1.1\r\n{lines}\r\n")).unwrap()
    }

    #[test]
    fn tokens_are_128_random_bits_in_hex_and_compare_exactly() {
        let a = Token::generate().unwrap();
        let b = Token::generate().unwrap();
        assert_eq!(a.hex().len(), 2 * TOKEN_BYTES);
        assert!(a.hex().bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b, "two launches draw different tokens");
        assert!(a.matches(a.hex()));
        assert!(!a.matches(b.hex()));
        assert!(!a.matches(&a.hex()[1..]));
        assert!(!a.matches(""));
        assert_eq!(format!("{a:?}"), "Token(<secret>)", "Debug never shows the token");
    }

    #[test]
    fn hosts_are_loopback_names_with_our_port_or_the_listen_address() {
        let g = gate("127.0.0.1:8080");
        for ok in ["127.0.0.1:8080", "localhost:8080", "LocalHost:8080", "[::1]:8080"] {
            assert!(g.host_allowed(ok), "{ok}");
        }
        for bad in
            ["127.0.0.1:8081", "evil.example:8080", "127.0.0.1", "localhost", "10.0.0.1:8080", "[::1]", "::1:8080"]
        {
            assert!(!g.host_allowed(bad), "{bad}");
        }
        let g = gate("10.0.0.5:8080");
        assert!(g.host_allowed("10.0.0.5:8080") && g.host_allowed("127.0.0.1:8080"));
        assert!(!g.host_allowed("10.0.0.6:8080"));
        let g = gate("0.0.0.0:8080");
        assert!(g.host_allowed("192.168.1.7:8080"), "any literal when listening everywhere");
        assert!(!g.host_allowed("rebound.example:8080"), "never a name");
        assert!(gate("127.0.0.1:80").host_allowed("localhost"), "port 80 may be left out");
    }

    #[test]
    fn a_request_needs_the_host_our_origin_and_the_token() {
        let g = gate("127.0.0.1:8080");
        let token = "ab".repeat(TOKEN_BYTES);
        let cookie = format!("Cookie: wobble-8080={token}\r\n");
        assert_eq!(g.check(&head(&format!("Host: 127.0.0.1:8080\r\n{cookie}")), false), Access::Cookie);
        let q = Head::parse(&format!("GET /?t={token} HTTP/1.1\r\nHost: localhost:8080\r\n\r\n")).unwrap();
        assert_eq!(g.check(&q, false), Access::Query);
        assert_eq!(g.check(&head("Host: 127.0.0.1:8080\r\n"), false), Access::Denied, "no token");
        let wrong = format!("Host: 127.0.0.1:8080\r\nCookie: wobble-8080={}\r\n", "cd".repeat(TOKEN_BYTES));
        assert_eq!(g.check(&head(&wrong), false), Access::Denied, "wrong token");
        let other_port = format!("Host: 127.0.0.1:8080\r\nCookie: wobble-9090={token}\r\n");
        assert_eq!(g.check(&head(&other_port), false), Access::Denied, "another viewer's cookie");
        assert_eq!(g.check(&head(&format!("Host: evil.example:8080\r\n{cookie}")), false), Access::Denied);
        let foreign = format!("Host: 127.0.0.1:8080\r\nOrigin: http://evil.example\r\n{cookie}");
        assert_eq!(g.check(&head(&foreign), false), Access::Denied);
        let own = format!("Host: 127.0.0.1:8080\r\nOrigin: http://127.0.0.1:8080\r\n{cookie}");
        assert_eq!(g.check(&head(&own), true), Access::Cookie);
        assert_eq!(g.check(&head(&format!("Host: 127.0.0.1:8080\r\n{cookie}")), true), Access::Denied, "no Origin");
    }
}
