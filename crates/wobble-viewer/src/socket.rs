//! The WebSocket wire format (RFC 6455), server side: the handshake's accept key,
//! reading a page's frames into messages under a size limit, and writing frames.
//!
//! Reading works on a blocking socket with a read timeout: a timeout before the
//! first byte of a frame is [`FrameError::Idle`] (the caller may ping and read
//! again); once a frame has begun, its bytes must follow (a timeout is a broken
//! connection). Payload sizes are checked from the frame header, before anything
//! is allocated.

use std::io::{self, BufRead, Write};

/// Continuation of a fragmented message.
const OP_CONTINUATION: u8 = 0x0;
/// A UTF-8 text message.
pub const OP_TEXT: u8 = 0x1;
/// A binary message.
pub const OP_BINARY: u8 = 0x2;
/// Closing handshake.
pub const OP_CLOSE: u8 = 0x8;
/// Ping (answered by a pong with the same payload).
pub const OP_PING: u8 = 0x9;
/// Pong.
pub const OP_PONG: u8 = 0xA;

/// Close code: going away.
pub const CLOSE_NORMAL: u16 = 1000;
/// Close code: the peer broke the protocol.
pub const CLOSE_PROTOCOL: u16 = 1002;
/// Close code: a text message that is not UTF-8.
pub const CLOSE_NOT_UTF8: u16 = 1007;
/// Close code: a message over the size limit.
pub const CLOSE_TOO_BIG: u16 = 1009;

/// Largest control frame payload (RFC 6455 §5.5).
const MAX_CONTROL: usize = 125;

/// A complete message from a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Incoming {
    /// Text, valid UTF-8.
    Text(String),
    /// Binary, of this many bytes (the viewer takes none; the bytes are discarded).
    Binary(usize),
    /// A ping with its payload.
    Ping(Vec<u8>),
    /// A pong.
    Pong,
    /// The page closes the connection.
    Close,
}

/// Why no message was read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The read timed out between frames: nothing was lost.
    #[error("no data")]
    Idle,
    /// The peer broke the protocol.
    #[error("protocol error: {0}")]
    Protocol(&'static str),
    /// A message over the limit (its declared size).
    #[error("message of {0} bytes is larger than the limit")]
    TooLarge(u64),
    /// A text message that is not UTF-8.
    #[error("text message is not UTF-8")]
    NotUtf8,
    /// The socket failed or closed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl FrameError {
    /// The close code to send the peer before hanging up, if any.
    #[must_use]
    pub fn close_code(&self) -> Option<u16> {
        match self {
            FrameError::Protocol(_) => Some(CLOSE_PROTOCOL),
            FrameError::TooLarge(_) => Some(CLOSE_TOO_BIG),
            FrameError::NotUtf8 => Some(CLOSE_NOT_UTF8),
            FrameError::Idle | FrameError::Io(_) => None,
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

/// Reads a page's messages from a buffered socket, joining fragments.
#[derive(Debug)]
pub struct MessageReader<R> {
    inner: R,
    max: usize,
    /// Opcode and payload of a fragmented message still arriving.
    partial: Option<(u8, Vec<u8>)>,
}

impl<R: BufRead> MessageReader<R> {
    /// Reads messages of at most `max` bytes from `inner`.
    pub fn new(inner: R, max: usize) -> Self {
        Self { inner, max, partial: None }
    }

    /// The next complete message.
    pub fn read(&mut self) -> Result<Incoming, FrameError> {
        loop {
            let (fin, opcode, payload) = self.frame()?;
            match opcode {
                OP_PING => return Ok(Incoming::Ping(payload)),
                OP_PONG => return Ok(Incoming::Pong),
                OP_CLOSE => return Ok(Incoming::Close),
                OP_CONTINUATION => {
                    let Some((_, buf)) = self.partial.as_mut() else {
                        return Err(FrameError::Protocol("continuation without a message"));
                    };
                    buf.extend_from_slice(&payload);
                    if !fin {
                        continue;
                    }
                    let (op, buf) = self.partial.take().unwrap_or_default();
                    return complete(op, buf);
                }
                OP_TEXT | OP_BINARY => {
                    if self.partial.is_some() {
                        return Err(FrameError::Protocol("new message inside a fragmented one"));
                    }
                    if fin {
                        return complete(opcode, payload);
                    }
                    self.partial = Some((opcode, payload));
                }
                _ => return Err(FrameError::Protocol("unknown opcode")),
            }
        }
    }

    /// One frame: FIN, opcode, unmasked payload.
    fn frame(&mut self) -> Result<(bool, u8, Vec<u8>), FrameError> {
        // Wait for the first byte without consuming anything: a timeout here is idle.
        match self.inner.fill_buf() {
            Ok([]) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
            Ok(_) => {}
            Err(e) if is_timeout(&e) => return Err(FrameError::Idle),
            Err(e) => return Err(e.into()),
        }
        let mut head = [0u8; 2];
        self.inner.read_exact(&mut head)?;
        let fin = head[0] & 0x80 != 0;
        if head[0] & 0x70 != 0 {
            return Err(FrameError::Protocol("reserved bits set"));
        }
        let opcode = head[0] & 0x0F;
        if head[1] & 0x80 == 0 {
            return Err(FrameError::Protocol("unmasked frame from a client"));
        }
        let len = match head[1] & 0x7F {
            126 => {
                let mut b = [0u8; 2];
                self.inner.read_exact(&mut b)?;
                u64::from(u16::from_be_bytes(b))
            }
            127 => {
                let mut b = [0u8; 8];
                self.inner.read_exact(&mut b)?;
                u64::from_be_bytes(b)
            }
            n => u64::from(n),
        };
        let control = opcode & 0x8 != 0;
        if control && (!fin || len > MAX_CONTROL as u64) {
            return Err(FrameError::Protocol("fragmented or oversized control frame"));
        }
        let so_far = self.partial.as_ref().map_or(0, |(_, b)| b.len() as u64);
        // A declared length near 2^64 must not wrap the sum past the limit.
        let total = so_far.saturating_add(len);
        if total > self.max as u64 {
            return Err(FrameError::TooLarge(total));
        }
        let mut mask = [0u8; 4];
        self.inner.read_exact(&mut mask)?;
        let mut payload = vec![0u8; len as usize];
        self.inner.read_exact(&mut payload)?;
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= mask[i % 4];
        }
        Ok((fin, opcode, payload))
    }
}

fn complete(opcode: u8, payload: Vec<u8>) -> Result<Incoming, FrameError> {
    if opcode == OP_BINARY {
        return Ok(Incoming::Binary(payload.len()));
    }
    String::from_utf8(payload).map(Incoming::Text).map_err(|_| FrameError::NotUtf8)
}

/// Writes one unfragmented, unmasked frame (the server's side never masks).
pub fn write_frame(w: &mut impl Write, opcode: u8, payload: &[u8]) -> io::Result<()> {
    let mut head = Vec::with_capacity(10);
    head.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => head.push(n as u8),
        n if n <= usize::from(u16::MAX) => {
            head.push(126);
            head.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            head.push(127);
            head.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    w.write_all(&head)?;
    w.write_all(payload)
}

/// Writes a close frame with `code` and a short reason.
pub fn write_close(w: &mut impl Write, code: u16, reason: &str) -> io::Result<()> {
    let mut payload = code.to_be_bytes().to_vec();
    // Control frames hold 125 bytes; cut the reason at a character boundary.
    let mut end = reason.len().min(MAX_CONTROL - 2);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    payload.extend_from_slice(&reason.as_bytes()[..end]);
    write_frame(w, OP_CLOSE, &payload)
}

/// `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key`: base64 of the SHA-1 of
/// the key and the protocol's fixed GUID (RFC 6455 §4.2.2).
#[must_use]
pub fn accept_key(key: &str) -> String {
    const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    base64(&sha1(format!("{}{GUID}", key.trim()).as_bytes()))
}

/// SHA-1 (FIPS 180-4). Used only for the handshake, where the protocol fixes it;
/// it protects nothing here.
fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0];
    let mut message = data.to_vec();
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in message.chunks_exact(64) {
        let mut w = [0u32; 80];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, &wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..20 => ((b & c) | (!b & d), 0x5A82_7999),
                20..40 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..60 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t = a.rotate_left(5).wrapping_add(f).wrapping_add(e).wrapping_add(k).wrapping_add(wi);
            (e, d, c, b, a) = (d, c, b.rotate_left(30), a, t);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 20];
    for (chunk, x) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&x.to_be_bytes());
    }
    out
}

/// Standard base64 with padding.
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client frame: masked with a fixed key.
    fn client_frame(first: u8, payload: &[u8]) -> Vec<u8> {
        let mask = [0x37, 0xfa, 0x21, 0x3d];
        let mut out = vec![first];
        match payload.len() {
            n if n < 126 => out.push(0x80 | n as u8),
            n => {
                out.push(0x80 | 126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
        }
        out.extend_from_slice(&mask);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        out
    }

    fn read_all(bytes: &[u8], max: usize) -> Vec<Result<Incoming, String>> {
        let mut r = MessageReader::new(bytes, max);
        let mut out = Vec::new();
        loop {
            match r.read() {
                Ok(m) => out.push(Ok(m)),
                Err(FrameError::Io(_)) => return out,
                Err(e) => {
                    out.push(Err(e.to_string()));
                    return out;
                }
            }
        }
    }

    #[test]
    fn the_accept_key_matches_rfc_6455() {
        assert_eq!(accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        // FIPS 180 two-block example.
        let digest = sha1(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq");
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    }

    #[test]
    fn reads_text_fragments_pings_and_close() {
        let mut bytes = client_frame(0x81, b"hello");
        bytes.extend(client_frame(0x01, b"wob"));
        bytes.extend(client_frame(0x89, b"p"));
        bytes.extend(client_frame(0x80, b"ble"));
        bytes.extend(client_frame(0x82, &[1, 2, 3]));
        bytes.extend(client_frame(0x81, &[b'x'; 300]));
        bytes.extend(client_frame(0x88, &1000u16.to_be_bytes()));
        let got = read_all(&bytes, 1000);
        assert_eq!(
            got,
            vec![
                Ok(Incoming::Text("hello".into())),
                Ok(Incoming::Ping(b"p".to_vec())),
                Ok(Incoming::Text("wobble".into())),
                Ok(Incoming::Binary(3)),
                Ok(Incoming::Text("x".repeat(300))),
                Ok(Incoming::Close),
            ]
        );
    }

    #[test]
    fn refuses_broken_frames_with_a_close_code() {
        let unmasked = [0x81, 0x02, b'h', b'i'];
        let cases: Vec<(Vec<u8>, &str, u16)> = vec![
            (unmasked.to_vec(), "unmasked", CLOSE_PROTOCOL),
            (client_frame(0xC1, b"x"), "reserved", CLOSE_PROTOCOL),
            (client_frame(0x83, b"x"), "unknown opcode", CLOSE_PROTOCOL),
            (client_frame(0x80, b"x"), "continuation without", CLOSE_PROTOCOL),
            (client_frame(0x09, b"x"), "control frame", CLOSE_PROTOCOL),
            (client_frame(0x81, &[0xff, 0xfe]), "UTF-8", CLOSE_NOT_UTF8),
            (client_frame(0x81, &[b'a'; 200]), "larger than the limit", CLOSE_TOO_BIG),
        ];
        for (bytes, want, code) in cases {
            let mut r = MessageReader::new(bytes.as_slice(), 100);
            let e = r.read().expect_err(want);
            assert!(e.to_string().contains(want), "{want}: {e}");
            assert_eq!(e.close_code(), Some(code), "{want}");
        }
        // Fragments add up against the limit.
        let mut bytes = client_frame(0x01, &[b'a'; 60]);
        bytes.extend(client_frame(0x80, &[b'a'; 60]));
        assert!(matches!(MessageReader::new(bytes.as_slice(), 100).read(), Err(FrameError::TooLarge(120))));
        // A continuation declaring a length that would wrap the running total
        // around 2^64 is too large, not a huge allocation.
        let mut bytes = client_frame(0x01, b"abc");
        bytes.extend([0x80, 0x80 | 127]);
        bytes.extend((u64::MAX - 1).to_be_bytes());
        bytes.extend([0u8; 4]);
        assert!(matches!(MessageReader::new(bytes.as_slice(), 100).read(), Err(FrameError::TooLarge(u64::MAX))));
    }

    #[test]
    fn written_frames_carry_their_length() {
        for n in [0usize, 125, 126, 65535, 65536] {
            let mut out = Vec::new();
            write_frame(&mut out, OP_BINARY, &vec![7u8; n]).unwrap();
            let head = match n {
                0..126 => 2,
                126..65536 => 4,
                _ => 10,
            };
            assert_eq!(out.len(), head + n, "{n}");
            assert_eq!(out[0], 0x82);
        }
        let mut out = Vec::new();
        write_close(&mut out, CLOSE_TOO_BIG, &"é".repeat(100)).unwrap();
        assert_eq!(out[1] as usize, out.len() - 2);
        assert!(out.len() - 2 <= MAX_CONTROL);
        assert_eq!(&out[2..4], &CLOSE_TOO_BIG.to_be_bytes());
    }
}
