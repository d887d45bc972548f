//! Connections: the accept loop, HTTP requests and WebSocket pages, on std threads.
//!
//! - The **accept thread** takes a connection slot for each new socket (at most
//!   [`Limits::max_connections`], and at most [`Limits::max_per_peer`] for one
//!   address other than loopback); without a free slot it writes `503` on the spot
//!   and closes, starting no thread. Failed accepts (out of file descriptors) back
//!   off up to [`crate::limits::BACKOFF_MAX`] instead of spinning.
//! - A **connection thread** reads the request head within
//!   [`Limits::head_timeout`], runs the [`Gate`]'s checks (`403` on failure), then
//!   answers with a compiled-in file and closes, or upgrades `/ws`.
//! - A page's WebSocket has two threads: the connection thread goes on as its
//!   **reader** (blocking reads; silence is pinged, and twice the silence drops a
//!   half-open peer), which turns messages into commands for the [`Inbox`] under a
//!   size and a rate limit; a **writer** sleeps on the page's [`Outbox`] and writes
//!   what the simulation queues there, with a write timeout of
//!   [`Limits::slow_page`], after which a page that does not read is dropped.
//!
//! The slot is held until both of a page's threads end, so threads number at most
//! 2 × the cap, plus the accept and simulation threads.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, BufWriter, Cursor, Read, Write};
use std::net::{IpAddr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crate::assets;
use crate::http::{self, FORBIDDEN, Head, HeadError};
use crate::limits::{Backoff, Limits, RateLimiter};
use crate::protocol::{self, ProtocolError, Reply};
use crate::queues::{Inbox, Outbox, Outgoing, PageId};
use crate::security::{Access, Gate};
use crate::socket::{self, FrameError, Incoming, MessageReader};

/// What every connection thread shares.
pub struct Shared {
    /// The access checks.
    pub gate: Gate,
    /// The bounds.
    pub limits: Limits,
    /// Commands to the simulation.
    pub inbox: Arc<Inbox>,
    /// Connections being served, and how many from each address other than
    /// loopback (addresses with none are removed).
    active: AtomicUsize,
    per_peer: Mutex<HashMap<IpAddr, usize>>,
    next_page: AtomicU64,
}

impl Shared {
    /// State for a server with these checks, bounds and simulation inbox.
    #[must_use]
    pub fn new(gate: Gate, limits: Limits, inbox: Arc<Inbox>) -> Self {
        Self {
            gate,
            limits,
            inbox,
            active: AtomicUsize::new(0),
            per_peer: Mutex::new(HashMap::new()),
            next_page: AtomicU64::new(1),
        }
    }
}

/// A connection slot, given back when dropped; it counts against its peer's
/// share unless the peer is loopback (`None`).
struct Slot(Arc<Shared>, Option<IpAddr>);

impl Slot {
    fn take(shared: &Arc<Shared>, peer: IpAddr) -> Option<Slot> {
        let cap = shared.limits.max_connections;
        // (An IPv4 peer of a dual-stack socket arrives as ::ffff:a.b.c.d.)
        let peer = peer.to_canonical();
        let counted = (!peer.is_loopback()).then_some(peer);
        // The peer's share first, under its lock; the total after, given back on
        // refusal.
        if let Some(ip) = counted {
            let mut per_peer = shared.per_peer.lock().unwrap_or_else(PoisonError::into_inner);
            let n = per_peer.entry(ip).or_insert(0);
            if *n >= shared.limits.max_per_peer.max(1) {
                return None;
            }
            *n += 1;
        }
        if shared.active.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < cap).then_some(n + 1)).is_err() {
            release_peer(shared, counted);
            return None;
        }
        Some(Slot(Arc::clone(shared), counted))
    }
}

/// Gives back a connection's share of its peer's slots.
fn release_peer(shared: &Shared, peer: Option<IpAddr>) {
    if let Some(ip) = peer {
        let mut per_peer = shared.per_peer.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = per_peer.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                per_peer.remove(&ip);
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        release_peer(&self.0, self.1);
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Accepts connections forever.
pub fn serve(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut backoff = Backoff::default();
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                backoff.succeeded();
                admit(stream, shared);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => std::thread::sleep(backoff.failed()),
        }
    }
}

/// Starts a thread for `stream` if a slot is free, else answers 503 from here.
fn admit(stream: TcpStream, shared: &Arc<Shared>) {
    let peer = stream.peer_addr().map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    let Some(slot) = Slot::take(shared, peer) else {
        // Never block the accept thread on a client: one non-blocking write of a
        // response far smaller than any socket buffer, then close.
        let body = "too many connections; try again later\n";
        let response = http::response("503 Service Unavailable", "text/plain; charset=utf-8", "", body.as_bytes());
        if stream.set_nonblocking(true).is_ok() {
            let _ = (&stream).write(&response);
            let _ = stream.shutdown(Shutdown::Write);
        }
        return;
    };
    let shared = Arc::clone(shared);
    // A failed spawn drops the closure, and with it the socket and the slot.
    let _ = std::thread::Builder::new().name("wobble-view-conn".into()).spawn(move || {
        let _ = handle(stream, &shared, slot);
    });
}

fn handle(mut stream: TcpStream, shared: &Shared, slot: Slot) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let deadline = Instant::now() + shared.limits.head_timeout;
    let (head, rest) = match http::read_head(&mut stream, deadline) {
        Ok(read) => read,
        Err(HeadError::Timeout) => return http::respond_text(&mut stream, "408 Request Timeout", "too slow\n"),
        Err(HeadError::Malformed) => return http::respond_text(&mut stream, "400 Bad Request", "bad request\n"),
        Err(HeadError::Io(_)) => return Ok(()),
    };
    let websocket = head.path == "/ws";
    let access = shared.gate.check(&head, websocket);
    if access == Access::Denied {
        return http::respond_text(&mut stream, FORBIDDEN.0, FORBIDDEN.1);
    }
    if head.method != "GET" {
        return http::respond_text(&mut stream, "405 Method Not Allowed", "only GET\n");
    }
    if websocket {
        return page(stream, &head, rest, shared, slot);
    }
    if access == Access::Query && (head.path == "/" || head.path == "/index.html") {
        // Trade the token for the cookie, and take it out of the address bar.
        let extra = format!("Location: /\r\n{}", shared.gate.set_cookie());
        return http::respond(&mut stream, "303 See Other", "text/plain; charset=utf-8", &extra, b"");
    }
    if head.path == "/favicon.ico" {
        return http::respond(&mut stream, "204 No Content", "image/x-icon", "", b"");
    }
    match assets::get(&head.path) {
        Some((content_type, body)) => http::respond(&mut stream, "200 OK", content_type, "", body),
        None => http::respond_text(&mut stream, "404 Not Found", "not found\n"),
    }
}

/// Completes a WebSocket upgrade and serves the page until it goes away.
fn page(mut stream: TcpStream, head: &Head, rest: Vec<u8>, shared: &Shared, slot: Slot) -> io::Result<()> {
    let upgrade = head.header("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let version = head.header("sec-websocket-version") == Some("13");
    let Some(key) = head.header("sec-websocket-key").filter(|_| upgrade && version) else {
        return http::respond_text(&mut stream, "400 Bad Request", "expected a WebSocket upgrade (version 13)\n");
    };
    write!(
        stream,
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        socket::accept_key(key)
    )?;
    stream.flush()?;

    let id: PageId = shared.next_page.fetch_add(1, Ordering::Relaxed);
    let outbox = Arc::new(Outbox::new());
    let out_stream = stream.try_clone()?;
    out_stream.set_write_timeout(Some(shared.limits.slow_page))?;
    let slot = Arc::new(slot);
    let writer = {
        let (outbox, slot) = (Arc::clone(&outbox), Arc::clone(&slot));
        std::thread::Builder::new().name("wobble-view-write".into()).spawn(move || {
            write_loop(&out_stream, &outbox);
            drop(slot);
        })
    };
    if writer.is_err() {
        let _ = stream.shutdown(Shutdown::Both);
        return Ok(());
    }
    stream.set_read_timeout(Some(shared.limits.ping_after))?;
    shared.inbox.join(id, Arc::clone(&outbox));
    let reader = BufReader::new(Cursor::new(rest).chain(stream));
    read_loop(reader, id, &outbox, shared);
    shared.inbox.leave(id);
    drop(slot);
    Ok(())
}

/// Reads the page's messages until it closes, breaks the protocol or falls silent.
fn read_loop(reader: impl BufRead, id: PageId, outbox: &Outbox, shared: &Shared) {
    let limits = &shared.limits;
    let mut messages = MessageReader::new(reader, limits.max_message_bytes);
    let mut rate = RateLimiter::new(limits.messages_per_second);
    let mut pinged = false;
    let reply = |r: &Reply| outbox.send(Outgoing::from(r));
    loop {
        let message = match messages.read() {
            Ok(m) => m,
            Err(FrameError::Idle) if !pinged => {
                pinged = true;
                outbox.send(Outgoing::Ping);
                continue;
            }
            Err(e) => {
                // Say why before hanging up, where there is something to say.
                match e.close_code() {
                    Some(code) => {
                        reply(&Reply::error(format!("malformed message: {e}; closing")));
                        outbox.close(code, "malformed message");
                    }
                    None => outbox.shut(),
                }
                return;
            }
        };
        pinged = false;
        // Every message counts against the rate, pings too (each would cost a pong).
        let allowed = matches!(message, Incoming::Close) || rate.allow(Instant::now());
        match message {
            _ if !allowed => {
                reply(&Reply::error(format!(
                    "rate limit: at most {} messages a second; this one was dropped",
                    limits.messages_per_second
                )));
            }
            Incoming::Text(text) => match protocol::parse(&text) {
                Ok(request) => {
                    if let Err(busy) = shared.inbox.push(id, request) {
                        reply(&Reply::Busy { message: busy.to_string() });
                    }
                }
                Err(e) => {
                    reply(&Reply::error(e));
                }
            },
            Incoming::Binary(_) => {
                reply(&Reply::error(ProtocolError::Binary));
            }
            Incoming::Ping(payload) => {
                outbox.send(Outgoing::Pong(payload));
            }
            Incoming::Pong => {}
            Incoming::Close => {
                outbox.close(socket::CLOSE_NORMAL, "");
                return;
            }
        }
    }
}

/// Writes what the simulation queues for the page until the outbox closes or the
/// socket fails (including a write that makes no progress for the slow-page
/// limit); then hangs up, which also ends the reader.
fn write_loop(stream: &TcpStream, outbox: &Outbox) {
    let mut w = BufWriter::with_capacity(64 * 1024, stream);
    let mut write_batch = |batch: Vec<Outgoing>| -> io::Result<bool> {
        for message in batch {
            match message {
                Outgoing::Text(text) => socket::write_frame(&mut w, socket::OP_TEXT, text.as_bytes())?,
                Outgoing::Frame(frame) => socket::write_frame(&mut w, socket::OP_BINARY, &frame)?,
                Outgoing::Ping => socket::write_frame(&mut w, socket::OP_PING, b"")?,
                Outgoing::Pong(payload) => socket::write_frame(&mut w, socket::OP_PONG, &payload)?,
                Outgoing::Close(code, reason) => {
                    socket::write_close(&mut w, code, &reason)?;
                    w.flush()?;
                    return Ok(false);
                }
            }
        }
        w.flush()?;
        Ok(true)
    };
    loop {
        let batch = outbox.take();
        if batch.is_empty() || !matches!(write_batch(batch), Ok(true)) {
            break;
        }
    }
    outbox.shut();
    let _ = stream.shutdown(Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(max_connections: usize, max_per_peer: usize) -> Arc<Shared> {
        let limits = Limits { max_connections, max_per_peer, ..Limits::default() };
        let gate = Gate::new(
            crate::security::Token::from_bytes([7; crate::security::TOKEN_BYTES]),
            ([127, 0, 0, 1], 0).into(),
        );
        Arc::new(Shared::new(gate, limits, Arc::new(Inbox::new(4))))
    }

    #[test]
    fn one_address_takes_at_most_its_share_of_the_slots() {
        let s = shared(5, 2);
        let (a, b) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
        let a1 = Slot::take(&s, a).expect("first from a");
        let _a2 = Slot::take(&s, a).expect("second from a");
        assert!(Slot::take(&s, a).is_none(), "a third from a is refused");
        let _b1 = Slot::take(&s, b).expect("another address still gets in");
        // Loopback is bounded by the total alone.
        let local = IpAddr::from([127, 0, 0, 1]);
        let _l1 = Slot::take(&s, local).expect("loopback");
        let _l2 = Slot::take(&s, local).expect("loopback, beyond a peer's share");
        assert!(Slot::take(&s, local).is_none(), "the total cap of 5 holds");
        assert!(Slot::take(&s, b).is_none(), "the total cap holds for b too");
        assert_eq!(s.per_peer.lock().unwrap().get(&b), Some(&1), "a refusal by the total gives the share back");
        // A closed connection gives its slot and its share back.
        drop(a1);
        let _a3 = Slot::take(&s, a).expect("a's share freed");
        assert_eq!(s.active.load(Ordering::Acquire), 5);
        drop(_a3);
        drop(_a2);
        assert!(s.per_peer.lock().unwrap().get(&a).is_none(), "an address with no connection is forgotten");
        // Loopback seen through a dual-stack socket (::ffff:127.0.0.1) is loopback.
        let s = shared(5, 1);
        let mapped = IpAddr::from(std::net::Ipv4Addr::new(127, 0, 0, 1).to_ipv6_mapped());
        let held: Vec<Slot> = (0..3).map(|_| Slot::take(&s, mapped).expect("mapped loopback")).collect();
        assert_eq!(held.len(), 3);
    }
}
