//! Just enough HTTP/1.1 for the viewer: reading a request head within a deadline
//! and a size limit, and writing small `Connection: close` responses.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

/// Largest request head accepted, bytes.
pub const MAX_HEAD: usize = 16 * 1024;

/// A parsed request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// `GET`, ...
    pub method: String,
    /// The path without the query (`/app.js`).
    pub path: String,
    /// The query after `?`, if any (`t=…`).
    pub query: Option<String>,
    /// Header names and values, trimmed, in order.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// Parses a head (request line and header lines, `\r\n`-separated; the blank line
    /// may be included). `None` when the request line is not `METHOD TARGET VERSION`.
    #[must_use]
    pub fn parse(text: &str) -> Option<Head> {
        let mut lines = text.split("\r\n");
        let mut first = lines.next()?.split(' ');
        let (method, target, version) = (first.next()?, first.next()?, first.next()?);
        if first.next().is_some() || method.is_empty() || !target.starts_with('/') || !version.starts_with("HTTP/") {
            return None;
        }
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p, Some(q.to_owned())),
            None => (target, None),
        };
        let headers = lines
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .collect();
        Some(Head { method: method.to_owned(), path: path.to_owned(), query, headers })
    }

    /// The first header called `name` (case-insensitive).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The value of query parameter `name` (no percent-decoding: the viewer's own
    /// parameters are plain hex).
    #[must_use]
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query.as_deref()?.split('&').filter_map(|kv| kv.split_once('=')).find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// The value of cookie `name` in the `Cookie` headers.
    #[must_use]
    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("cookie"))
            .flat_map(|(_, v)| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }
}

/// Why a request head could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    /// The deadline passed first (answered 408).
    #[error("the request head did not arrive in time")]
    Timeout,
    /// Over [`MAX_HEAD`] bytes, or not HTTP (answered 400).
    #[error("malformed request head")]
    Malformed,
    /// The peer closed or the socket failed (nothing to answer).
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Reads up to the blank line ending the request head, giving up at `deadline`
/// however the bytes trickle in. Returns the head and any bytes read past it.
pub fn read_head(stream: &mut TcpStream, deadline: Instant) -> Result<(Head, Vec<u8>), HeadError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let end = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(HeadError::Timeout);
        }
        stream.set_read_timeout(Some(left))?;
        let n = match stream.read(&mut chunk) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                return Err(HeadError::Timeout);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        // Only the new bytes and the three before them can complete the terminator.
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            break from + i + 4;
        }
        if buf.len() > MAX_HEAD {
            return Err(HeadError::Malformed);
        }
    };
    let text = std::str::from_utf8(&buf[..end]).map_err(|_| HeadError::Malformed)?;
    let head = Head::parse(text).ok_or(HeadError::Malformed)?;
    Ok((head, buf[end..].to_vec()))
}

/// Headers every response carries: no caching, no sniffing, no referrer (the page's
/// address never leaves it), no framing by other sites.
const COMMON: &str = "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n\
                      X-Frame-Options: DENY\r\nConnection: close\r\n";

/// The whole bytes of a response: status line, `extra` header lines (each ending
/// in `\r\n`), the common headers, then the body.
#[must_use]
pub fn response(status: &str, content_type: &str, extra: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}{COMMON}\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// Writes a response and flushes.
pub fn respond(stream: &mut TcpStream, status: &str, content_type: &str, extra: &str, body: &[u8]) -> io::Result<()> {
    stream.write_all(&response(status, content_type, extra, body))?;
    stream.flush()
}

/// Writes a short plain-text response (errors and refusals).
pub fn respond_text(stream: &mut TcpStream, status: &str, body: &str) -> io::Result<()> {
    respond(stream, status, "text/plain; charset=utf-8", "", body.as_bytes())
}

/// The answer to a request that fails the checks of [`crate::security`]: the status
/// and a one-word body, nothing about which check failed.
pub const FORBIDDEN: (&str, &str) = ("403 Forbidden", "forbidden\n");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_head_with_query_and_cookies() {
        let text = "GET /app.js?t=ab12&x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nCookie: a=1; wobble-8080=cafe\r\n\
                    cookie: b=2\r\n\r\n";
        let head = Head::parse(text).expect("parses");
        assert_eq!(head.method, "GET");
        assert_eq!(head.path, "/app.js");
        assert_eq!(head.query_param("t"), Some("ab12"));
        assert_eq!(head.query_param("y"), None);
        assert_eq!(head.header("HOST"), Some("127.0.0.1:8080"));
        assert_eq!(head.cookie("wobble-8080"), Some("cafe"));
        assert_eq!(head.cookie("b"), Some("2"));
        assert_eq!(head.cookie("c"), None);
    }

    #[test]
    fn rejects_what_is_not_a_request_line() {
        for bad in ["", "GET\r\n\r\n", "GET / \r\n\r\n", "GET x HTTP/1.1\r\n\r\n", "GET / HTTP/1.1 extra\r\n\r\n"] {
            assert_eq!(Head::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn responses_state_their_length_and_close() {
        let r = String::from_utf8(response("403 Forbidden", "text/plain", "", b"forbidden\n")).unwrap();
        assert!(r.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{r}");
        assert!(r.contains("Content-Length: 10\r\n") && r.contains("Connection: close\r\n"), "{r}");
        assert!(r.ends_with("\r\n\r\nforbidden\n"), "{r}");
    }
}
