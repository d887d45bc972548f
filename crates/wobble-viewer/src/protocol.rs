//! The viewer's wire protocol.
//!
//! Pages send control messages as JSON text ([`Request`], tagged by `"type"`). The
//! server answers with JSON text ([`Reply`]) and streams the state as binary frames
//! ([`encode_frame`]): a 40-byte little-endian header followed by the particles'
//! positions and the colliders' displacements as `f32` triples. Everything that
//! does not change while stepping — the surface triangles, the segments and their
//! rest lengths, the bodies, the colliders, the parameters — travels once per scene
//! or reset in a [`Topology`] message whose `generation` the frames repeat, so a
//! page never draws positions against the wrong triangles.
//!
//! Parsing never panics: a message that is not valid JSON, has an unknown `type`, a
//! missing or ill-typed field, or a non-finite number is a [`ProtocolError`] whose
//! text goes back to the page as an `error` reply.

use serde::{Deserialize, Serialize};
use wobble::force::Parameter;

/// Magic number opening every binary frame: `"WBF1"` read as a little-endian `u32`.
pub const FRAME_MAGIC: u32 = u32::from_le_bytes(*b"WBF1");
/// Size of a binary frame's header, bytes (a multiple of 4, so the positions that
/// follow can be read as a `Float32Array` in place).
pub const FRAME_HEADER: usize = 40;
/// Largest control message accepted, bytes.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;
/// Most steps one `step` request may ask for (a fifth of a second of the default
/// scene). The simulation thread runs them in slices of
/// [`crate::limits::STEP_SLICE`], serving the other pages' commands in between.
pub const MAX_STEPS_PER_REQUEST: u64 = 1000;

/// A control message from a page.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Run at real time.
    Play,
    /// Stop stepping.
    Pause,
    /// Pause and take `n` steps (default 1).
    Step {
        /// Number of steps.
        #[serde(default = "one")]
        n: u64,
    },
    /// Rebuild the current scene from its file (clears a blow-up).
    Reset,
    /// Load a scene from the scene directory by file name (`"drag.toml"`).
    Load {
        /// File name, one of the `scenes` listed in `hello`.
        scene: String,
    },
    /// Switch the integration method (`"rk4"`).
    Integrator {
        /// Method name as in scene files.
        name: String,
    },
    /// Set the time step, s.
    Dt {
        /// The new step.
        value: f64,
    },
    /// Set a live parameter (`"gravity.g"`, `"drag.stiffness"`).
    Param {
        /// Full key as listed in the topology's `params`.
        key: String,
        /// New value.
        value: f64,
    },
    /// Grab the surface particle under a ray with the drag spring.
    Grab {
        /// Ray origin (the camera), m.
        origin: [f64; 3],
        /// Ray direction.
        dir: [f64; 3],
    },
    /// Move the grab's cursor.
    Drag {
        /// Cursor position, m.
        cursor: [f64; 3],
    },
    /// Let go of the grabbed particle.
    Release,
    /// Toggle the pin of a particle: the one given, or the one under the ray.
    Pin {
        /// Particle index.
        #[serde(default)]
        particle: Option<usize>,
        /// Ray origin, m.
        #[serde(default)]
        origin: Option<[f64; 3]>,
        /// Ray direction.
        #[serde(default)]
        dir: Option<[f64; 3]>,
    },
    /// Ask for the positions of some particles (answered by `particles`).
    Query {
        /// Particle indices.
        particles: Vec<usize>,
    },
    /// Ask for a status message now.
    Status,
}

fn one() -> u64 {
    1
}

/// Why a control message was rejected.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProtocolError {
    /// Larger than [`MAX_REQUEST_BYTES`].
    #[error("message of {0} bytes is larger than the limit of {MAX_REQUEST_BYTES} bytes")]
    TooLarge(usize),
    /// Not JSON, unknown type, or wrong fields.
    #[error("malformed message: {0}")]
    Malformed(String),
    /// A number that must be finite is not (JSON has no NaN, but 1e999 parses as ∞).
    #[error("malformed message: `{0}` must be finite")]
    NotFinite(&'static str),
    /// A field outside its range.
    #[error("malformed message: {0}")]
    OutOfRange(String),
    /// Binary messages carry no requests.
    #[error("malformed message: binary messages are not accepted; send JSON text")]
    Binary,
}

/// Parses one control message.
pub fn parse(text: &str) -> Result<Request, ProtocolError> {
    if text.len() > MAX_REQUEST_BYTES {
        return Err(ProtocolError::TooLarge(text.len()));
    }
    let request: Request = serde_json::from_str(text).map_err(|e| ProtocolError::Malformed(e.to_string()))?;
    validate(&request)?;
    Ok(request)
}

fn finite3(name: &'static str, v: &[f64; 3]) -> Result<(), ProtocolError> {
    if v.iter().all(|c| c.is_finite()) { Ok(()) } else { Err(ProtocolError::NotFinite(name)) }
}

fn validate(request: &Request) -> Result<(), ProtocolError> {
    match request {
        Request::Step { n } if *n == 0 || *n > MAX_STEPS_PER_REQUEST => {
            Err(ProtocolError::OutOfRange(format!("`n` = {n} must be between 1 and {MAX_STEPS_PER_REQUEST}")))
        }
        Request::Dt { value } | Request::Param { value, .. } if !value.is_finite() => {
            Err(ProtocolError::NotFinite("value"))
        }
        Request::Grab { origin, dir } => {
            finite3("origin", origin)?;
            finite3("dir", dir)
        }
        Request::Drag { cursor } => finite3("cursor", cursor),
        Request::Pin { particle, origin, dir } => match (particle, origin, dir) {
            (Some(_), None, None) => Ok(()),
            (None, Some(o), Some(d)) => {
                finite3("origin", o)?;
                finite3("dir", d)
            }
            _ => Err(ProtocolError::OutOfRange("`pin` takes either `particle` or both `origin` and `dir`".into())),
        },
        Request::Query { particles } if particles.len() > 4096 => {
            Err(ProtocolError::OutOfRange("`query` asks for at most 4096 particles".into()))
        }
        _ => Ok(()),
    }
}

/// A body as the page sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BodyInfo {
    /// Name from the scene.
    pub name: String,
    /// Builder kind (`"cloth"`, `"ball"`, ...).
    pub kind: String,
    /// First particle.
    pub start: usize,
    /// One past the last particle.
    pub end: usize,
    /// True for closed surfaces.
    pub closed: bool,
}

/// What does not change while stepping; sent on connect and after every reset or
/// load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Topology {
    /// Increases with every rebuild; frames carry it.
    pub generation: u32,
    /// Scene name (file name, or the built-in default's name).
    pub scene: String,
    /// Number of particles.
    pub n: usize,
    /// Number of vertices in a frame: the particles, then the vertices of surfaces
    /// drawn around them (rods' tubes, thick sheets, rigid bodies' shapes).
    pub vertices: usize,
    /// Surface triangles over the vertices, flattened (3 indices each).
    pub triangles: Vec<u32>,
    /// Polyline segments of chains and rings, flattened (2 indices each).
    pub lines: Vec<u32>,
    /// Segments of every force term (springs), flattened (2 indices each).
    pub segments: Vec<u32>,
    /// Rest length of each segment, m (`null` where the term does not say; the page
    /// then measures strain from the first frame).
    pub rest: Vec<Option<f32>>,
    /// Bodies.
    pub bodies: Vec<BodyInfo>,
    /// Pinned particles.
    pub pinned: Vec<usize>,
    /// Live parameters of the force terms, the drag spring and the constraints.
    pub params: Vec<Parameter>,
    /// Integration method.
    pub integrator: String,
    /// Time step, s.
    pub dt: f64,
    /// Colliders, placed as at t = 0 (frames carry their displacements).
    pub colliders: Vec<ColliderInfo>,
    /// Centre of what the camera should frame, m: the bodies, sphere colliders, and a
    /// floor not far below.
    pub center: [f64; 3],
    /// Diagonal of that box, m.
    pub size: f64,
}

/// A collider as the page draws it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "shape", rename_all = "snake_case")]
pub enum ColliderInfo {
    /// A half-space's boundary.
    Plane {
        /// Name from the scene (`"room-floor"`).
        name: String,
        /// A point on it, m.
        point: [f64; 3],
        /// Unit normal into the free side.
        normal: [f64; 3],
    },
    /// A ball.
    Sphere {
        /// Name.
        name: String,
        /// Centre, m.
        center: [f64; 3],
        /// Radius, m.
        radius: f64,
    },
    /// A box or a triangle mesh, as triangles placed at t = 0.
    Mesh {
        /// Name.
        name: String,
        /// Vertex positions, m, three numbers each.
        vertices: Vec<f32>,
        /// Triangles, three vertex indices each.
        triangles: Vec<u32>,
    },
}

/// Energies and volume in a status message.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Energy {
    /// Kinetic energy, J.
    pub kinetic: f64,
    /// Potential energy, J.
    pub potential: f64,
    /// Their sum, J.
    pub total: f64,
}

/// The current grab.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GrabInfo {
    /// Grabbed particle.
    pub particle: usize,
    /// Cursor, m.
    pub cursor: [f64; 3],
}

/// Periodic state summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Status {
    /// Topology generation.
    pub generation: u32,
    /// Simulation time, s.
    pub time: f64,
    /// Steps taken since the last rebuild.
    pub steps: u64,
    /// True while running.
    pub playing: bool,
    /// Steps per wall-clock second over the last second.
    pub steps_per_second: f64,
    /// Simulated seconds per wall-clock second over the last second (1 = real time).
    pub realtime_ratio: f64,
    /// Frames broadcast per second.
    pub frames_per_second: f64,
    /// Energies.
    pub energy: Energy,
    /// Volume enclosed by closed bodies, m³ (`null` when none is closed).
    pub volume: Option<f64>,
    /// The grab, if any.
    pub grab: Option<GrabInfo>,
    /// The blow-up's text, exactly as `wobble run` prints it, while halted.
    pub halted: Option<String>,
    /// Integration method.
    pub integrator: String,
    /// Time step, s.
    pub dt: f64,
    /// Pages connected.
    pub clients: usize,
}

/// A JSON message from the server.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    /// First message on a connection.
    Hello {
        /// Scene files the chooser offers.
        scenes: Vec<String>,
        /// Integration methods.
        integrators: Vec<String>,
    },
    /// See [`Topology`].
    Topology(Topology),
    /// See [`Status`].
    Status(Status),
    /// Parameters after a change (keeps every page's sliders in step).
    Params {
        /// All parameters.
        params: Vec<Parameter>,
    },
    /// Pinned particles after a change.
    Pins {
        /// Pinned particle indices.
        pinned: Vec<usize>,
    },
    /// Answer to `grab`.
    Grabbed {
        /// The particle taken, `null` when the ray missed.
        particle: Option<usize>,
        /// Its position, m.
        point: Option<[f64; 3]>,
    },
    /// Answer to `query`.
    Particles {
        /// Topology generation.
        generation: u32,
        /// Simulation time, s.
        time: f64,
        /// Steps taken.
        steps: u64,
        /// Positions, m, in the order asked.
        x: Vec<[f64; 3]>,
        /// Whether each is pinned.
        pinned: Vec<bool>,
    },
    /// The page's command queue was full: the command was dropped, not run. Wait
    /// for replies to earlier commands before sending more.
    Busy {
        /// What happened.
        message: String,
    },
    /// A request failed or was malformed.
    Error {
        /// What went wrong.
        message: String,
    },
}

impl Reply {
    /// The reply as JSON text.
    #[must_use]
    pub fn to_json(&self) -> String {
        // Serialising these plain structs cannot fail; non-finite floats become null.
        serde_json::to_string(self).unwrap_or_else(|e| format!(r#"{{"type":"error","message":"{e}"}}"#))
    }

    /// An error reply.
    #[must_use]
    pub fn error(message: impl std::fmt::Display) -> Reply {
        Reply::Error { message: message.to_string() }
    }
}

/// Header of a binary frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameHeader {
    /// Topology generation the positions belong to.
    pub generation: u32,
    /// Number of vertices (particles, then drawn-surface vertices; see
    /// [`Topology::vertices`]).
    pub n: u32,
    /// Bit 0: playing; bit 1: halted by a blow-up.
    pub flags: u32,
    /// Steps taken.
    pub steps: u64,
    /// Simulation time, s.
    pub time: f64,
    /// Number of colliders whose displacements follow the positions.
    pub colliders: u32,
}

/// Writes a binary frame into `out` (cleared first): magic `u32`, generation `u32`,
/// n `u32`, flags `u32`, steps `u64`, time `f64`, colliders `u32`, a reserved `u32`
/// — all little-endian, 40 bytes — then `3 n` positions and `3 colliders` collider
/// displacements (from their place at t = 0) as `f32`.
pub fn encode_frame(
    header: &FrameHeader,
    positions: impl Iterator<Item = [f64; 3]>,
    offsets: &[[f64; 3]],
    out: &mut Vec<u8>,
) {
    out.clear();
    out.extend_from_slice(&FRAME_MAGIC.to_le_bytes());
    out.extend_from_slice(&header.generation.to_le_bytes());
    out.extend_from_slice(&header.n.to_le_bytes());
    out.extend_from_slice(&header.flags.to_le_bytes());
    out.extend_from_slice(&header.steps.to_le_bytes());
    out.extend_from_slice(&header.time.to_le_bytes());
    out.extend_from_slice(&header.colliders.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    debug_assert_eq!(out.len(), FRAME_HEADER);
    for p in positions.chain(offsets.iter().copied()) {
        for c in p {
            out.extend_from_slice(&(c as f32).to_le_bytes());
        }
    }
}

/// A decoded binary frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// The header.
    pub header: FrameHeader,
    /// Particle positions, m.
    pub positions: Vec<[f32; 3]>,
    /// Collider displacements, m.
    pub offsets: Vec<[f32; 3]>,
}

/// Reads a binary frame's header (for tests and tools that skip the positions).
pub fn decode_header(bytes: &[u8]) -> Option<FrameHeader> {
    let word = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default()));
    let wide = |at: usize| bytes.get(at..at + 8).map(|b| <[u8; 8]>::try_from(b).unwrap_or_default());
    if word(0)? != FRAME_MAGIC {
        return None;
    }
    Some(FrameHeader {
        generation: word(4)?,
        n: word(8)?,
        flags: word(12)?,
        steps: u64::from_le_bytes(wide(16)?),
        time: f64::from_le_bytes(wide(24)?),
        colliders: word(32)?,
    })
}

/// Reads a binary frame back (for tests and tools).
pub fn decode_frame(bytes: &[u8]) -> Option<Frame> {
    let header = decode_header(bytes)?;
    let body = bytes.get(FRAME_HEADER..)?;
    let n = header.n as usize;
    if body.len() != (n + header.colliders as usize) * 12 {
        return None;
    }
    let mut triples = body.chunks_exact(12).map(|c| {
        let f = |k: usize| f32::from_le_bytes([c[k], c[k + 1], c[k + 2], c[k + 3]]);
        [f(0), f(4), f(8)]
    });
    let positions = triples.by_ref().take(n).collect();
    let offsets = triples.collect();
    Some(Frame { header, positions, offsets })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_request_kind() {
        let cases = [
            (r#"{"type":"play"}"#, Request::Play),
            (r#"{"type":"pause"}"#, Request::Pause),
            (r#"{"type":"step"}"#, Request::Step { n: 1 }),
            (r#"{"type":"step","n":250}"#, Request::Step { n: 250 }),
            (r#"{"type":"reset"}"#, Request::Reset),
            (r#"{"type":"load","scene":"drag.toml"}"#, Request::Load { scene: "drag.toml".into() }),
            (r#"{"type":"integrator","name":"rk4"}"#, Request::Integrator { name: "rk4".into() }),
            (r#"{"type":"dt","value":1e-4}"#, Request::Dt { value: 1e-4 }),
            (r#"{"type":"param","key":"gravity.g","value":0}"#, Request::Param { key: "gravity.g".into(), value: 0.0 }),
            (
                r#"{"type":"grab","origin":[0,1,2],"dir":[0,0,-1]}"#,
                Request::Grab { origin: [0.0, 1.0, 2.0], dir: [0.0, 0.0, -1.0] },
            ),
            (r#"{"type":"drag","cursor":[1,2,3]}"#, Request::Drag { cursor: [1.0, 2.0, 3.0] }),
            (r#"{"type":"release"}"#, Request::Release),
            (r#"{"type":"pin","particle":7}"#, Request::Pin { particle: Some(7), origin: None, dir: None }),
            (r#"{"type":"query","particles":[0,5]}"#, Request::Query { particles: vec![0, 5] }),
            (r#"{"type":"status"}"#, Request::Status),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn rejects_malformed_requests_with_a_reason() {
        let cases = [
            ("", "malformed"),
            ("not json", "malformed"),
            ("[1,2]", "malformed"),
            (r#"{"type":"fly"}"#, "unknown variant `fly`"),
            (r#"{"kind":"play"}"#, "missing field `type`"),
            (r#"{"type":"dt"}"#, "missing field `value`"),
            (r#"{"type":"dt","value":"fast"}"#, "invalid type"),
            (r#"{"type":"dt","value":1e999}"#, "out of range"),
            (r#"{"type":"step","n":0}"#, "between 1 and"),
            (r#"{"type":"step","n":-3}"#, "invalid value"),
            (r#"{"type":"grab","origin":[0,1],"dir":[0,0,-1]}"#, "invalid length"),
            (r#"{"type":"drag","cursor":[0,1e999,0]}"#, "out of range"),
            (r#"{"type":"pin"}"#, "either `particle`"),
            (r#"{"type":"pin","particle":1,"origin":[0,0,0]}"#, "either `particle`"),
            (r#"{"type":"dt","value":1,"extra":1}"#, "unknown field `extra`"),
        ];
        for (text, want) in cases {
            let err = parse(text).expect_err(text).to_string();
            assert!(err.contains(want), "{text}: {err}");
            assert!(err.starts_with("malformed message"), "{text}: {err}");
        }
        let big = format!(r#"{{"type":"load","scene":"{}"}}"#, "a".repeat(MAX_REQUEST_BYTES));
        assert!(matches!(parse(&big), Err(ProtocolError::TooLarge(_))));
    }

    #[test]
    fn frames_round_trip() {
        let header = FrameHeader { generation: 3, n: 2, flags: 1, steps: 12345, time: 0.5, colliders: 1 };
        let mut out = Vec::new();
        encode_frame(&header, [[1.0, 2.0, 3.0], [-0.25, 0.0, 1e-3]].into_iter(), &[[0.0, 0.5, 0.0]], &mut out);
        assert_eq!(out.len(), FRAME_HEADER + 3 * 12);
        let frame = decode_frame(&out).expect("decodes");
        assert_eq!(frame.header, header);
        assert_eq!(frame.positions, vec![[1.0, 2.0, 3.0], [-0.25, 0.0, 1e-3_f32]]);
        assert_eq!(frame.offsets, vec![[0.0, 0.5, 0.0_f32]]);
        assert!(decode_frame(&out[..out.len() - 1]).is_none());
        assert!(decode_frame(b"nope").is_none());
    }

    #[test]
    fn replies_are_tagged_json() {
        let v: serde_json::Value = serde_json::from_str(&Reply::error("boom").to_json()).unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["message"], "boom");
        let v: serde_json::Value = serde_json::from_str(&Reply::Pins { pinned: vec![1, 2] }.to_json()).unwrap();
        assert_eq!(v["type"], "pins");
        assert_eq!(v["pinned"], serde_json::json!([1, 2]));
    }
}
