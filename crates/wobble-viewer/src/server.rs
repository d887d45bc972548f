//! HTTP and WebSocket on a std `TcpListener`: one thread per connection. A
//! connection asks for a static file (answered and closed) or for `/ws`, which is
//! upgraded and then pumps requests to the simulation thread and its messages back.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender, TryRecvError};
use std::time::Duration;

use tungstenite::protocol::frame::Utf8Bytes;
use tungstenite::protocol::{Role, WebSocketConfig};
use tungstenite::{Message, WebSocket};

use crate::assets;
use crate::protocol::{self, MAX_REQUEST_BYTES, ProtocolError, Reply};
use crate::sim::{ClientId, Event, Outbox, QUEUE};

/// Largest HTTP request head accepted, bytes.
const MAX_HEAD: usize = 16 * 1024;
/// How long a connection thread waits for a page's message before it looks at its
/// outgoing queue again. Bounds the latency a frame waits in the queue.
const POLL: Duration = Duration::from_millis(4);

static NEXT_CLIENT: AtomicU64 = AtomicU64::new(1);

/// Accepts connections forever, one thread each.
pub fn serve(listener: TcpListener, events: Sender<Event>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let events = events.clone();
        // A failed spawn (out of threads) drops this connection, not the server.
        let _ = std::thread::Builder::new().name("wobble-view-conn".into()).spawn(move || {
            let _ = handle_connection(stream, &events);
        });
    }
}

/// A parsed HTTP request head.
struct Head {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Reads up to the blank line ending the request head; returns it and any bytes read
/// past it.
fn read_head(stream: &mut TcpStream) -> io::Result<(Head, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let end = loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed before the request head"));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > MAX_HEAD {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "request head too large"));
        }
    };
    let text = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = text.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split_whitespace();
    let method = first.next().unwrap_or_default().to_owned();
    let path = first.next().unwrap_or_default().to_owned();
    let headers =
        lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())).collect();
    Ok((Head { method, path, headers }, buf[end..].to_vec()))
}

fn respond(stream: &mut TcpStream, status: &str, content_type: &str, body: &[u8]) -> io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    stream.flush()
}

fn handle_connection(mut stream: TcpStream, events: &Sender<Event>) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.set_nodelay(true)?;
    let (head, rest) = read_head(&mut stream)?;
    if head.method != "GET" {
        return respond(&mut stream, "405 Method Not Allowed", "text/plain", b"only GET\n");
    }
    let path = head.path.split('?').next().unwrap_or_default();
    if path == "/ws" {
        return websocket(stream, &head, rest, events);
    }
    if path == "/favicon.ico" {
        return respond(&mut stream, "204 No Content", "image/x-icon", b"");
    }
    match assets::get(path) {
        Some((content_type, body)) => respond(&mut stream, "200 OK", content_type, body),
        None => respond(&mut stream, "404 Not Found", "text/plain", b"not found\n"),
    }
}

fn websocket(mut stream: TcpStream, head: &Head, rest: Vec<u8>, events: &Sender<Event>) -> io::Result<()> {
    let upgrade = head.header("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let Some(key) = head.header("sec-websocket-key").filter(|_| upgrade) else {
        return respond(&mut stream, "400 Bad Request", "text/plain", b"expected a WebSocket upgrade\n");
    };
    // A page from another site open in the same browser must not drive the
    // simulation: browsers always send Origin on WebSocket upgrades, and ours is the
    // host the page was served from. (Clients that send no Origin are not browsers.)
    if let Some(origin) = head.header("origin") {
        let same = head.header("host").is_some_and(|host| origin.strip_prefix("http://") == Some(host));
        if !same {
            return respond(&mut stream, "403 Forbidden", "text/plain", b"cross-origin WebSocket refused\n");
        }
    }
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    write!(
        stream,
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    )?;
    stream.flush()?;
    stream.set_read_timeout(Some(POLL))?;
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_REQUEST_BYTES * 4))
        .max_frame_size(Some(MAX_REQUEST_BYTES * 4));
    let mut ws = WebSocket::from_partially_read(stream, rest, Role::Server, Some(config));

    let id: ClientId = NEXT_CLIENT.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = mpsc::sync_channel::<Message>(QUEUE);
    let frames_queued = Arc::new(AtomicUsize::new(0));
    if events.send(Event::Join(id, Outbox { tx, frames_queued: frames_queued.clone() })).is_err() {
        return Ok(());
    }
    let result = pump(&mut ws, id, &rx, &frames_queued, events);
    let _ = events.send(Event::Leave(id));
    result
}

/// Moves messages both ways until the page goes away.
fn pump(
    ws: &mut WebSocket<TcpStream>,
    id: ClientId,
    rx: &mpsc::Receiver<Message>,
    frames_queued: &AtomicUsize,
    events: &Sender<Event>,
) -> io::Result<()> {
    use tungstenite::Error;
    loop {
        match ws.read() {
            Ok(Message::Text(text)) => match protocol::parse(text.as_str()) {
                Ok(request) => {
                    if events.send(Event::Request(id, request)).is_err() {
                        return Ok(());
                    }
                }
                Err(e) => send_error(ws, &e)?,
            },
            Ok(Message::Binary(_)) => send_error(ws, &ProtocolError::Binary)?,
            Ok(_) => {} // ping/pong are answered by tungstenite; close is seen next read
            Err(Error::Io(e)) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
            Err(Error::ConnectionClosed | Error::AlreadyClosed) => return Ok(()),
            Err(Error::Capacity(e)) => {
                // A message over the size limit: say so, then drop the connection
                // (its remaining bytes cannot be resynchronised).
                let _ = send_error(ws, &format!("malformed message: {e}"));
                return Ok(());
            }
            Err(e) => return Err(io::Error::other(e.to_string())),
        }
        loop {
            match rx.try_recv() {
                Ok(message) => {
                    if message.is_binary() {
                        frames_queued.fetch_sub(1, Ordering::AcqRel);
                    }
                    ws.send(message).map_err(|e| io::Error::other(e.to_string()))?;
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return Ok(()),
            }
        }
    }
}

fn send_error(ws: &mut WebSocket<TcpStream>, e: &dyn std::fmt::Display) -> io::Result<()> {
    let message = Message::Text(Utf8Bytes::from(Reply::error(e).to_json()));
    ws.send(message).map_err(|e| io::Error::other(e.to_string()))
}

/// Binds `addr` (use port 0 for a free port).
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    TcpListener::bind(addr)
}
