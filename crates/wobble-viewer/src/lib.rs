//! `wobble view`: the simulation in the browser.
//!
//! [`Viewer::bind`] opens a listener (127.0.0.1 unless told otherwise) and draws a
//! launch token; [`Viewer::url`] is the address to open, token included;
//! [`Viewer::run`] serves the page (HTML, JavaScript and a vendored three.js, all
//! compiled in) and upgrades `/ws` to a WebSocket. A simulation thread owns the
//! world, steps it at real time where the machine can, and streams positions to
//! every connected page as binary frames; pages send JSON control messages (see
//! [`protocol`]).
//!
//! Threads, not an async runtime: the accept thread, the simulation thread, one
//! thread per HTTP request and two per page ([`server`]), all bounded by a
//! connection cap ([`limits`]). Only holders of the token get in ([`security`]).
//! Pages' commands wait in per-page bounded queues served in turn ([`queues`]), so
//! a page that floods the simulation delays itself; a page that closes, stalls or
//! sends garbage affects only its own connection.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;

use wobble_scene::{Scene, SceneError};

pub mod assets;
pub mod http;
pub mod limits;
pub mod protocol;
pub mod queues;
pub mod security;
pub mod server;
pub mod sim;
pub mod socket;

pub use limits::Limits;
pub use sim::Notice;

/// Why the viewer could not start.
#[derive(Debug, thiserror::Error)]
pub enum ViewerError {
    /// The scene does not build.
    #[error("{0}")]
    Scene(#[from] SceneError),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// Address asked for.
        addr: SocketAddr,
        /// The failure.
        source: std::io::Error,
    },
    /// The operating system's random source failed (no token, no server).
    #[error("cannot draw the launch token from the operating system's random source: {0}")]
    Random(getrandom::Error),
}

/// Where and within which bounds the viewer serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Address to listen on (default 127.0.0.1:8080; port 0 picks a free one).
    /// Anything but loopback exposes the viewer to the network: see the README.
    pub listen: SocketAddr,
    /// The server's bounds.
    pub limits: Limits,
}

impl Default for Options {
    fn default() -> Self {
        Self { listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 8080)), limits: Limits::default() }
    }
}

/// A bound viewer, not yet serving.
pub struct Viewer {
    listener: TcpListener,
    simulator: sim::Simulator,
    gate: security::Gate,
    limits: Limits,
    notify: Box<dyn Fn(Notice) + Send>,
}

impl Viewer {
    /// Builds `scene` and binds 127.0.0.1:`port` (0 picks a free port) with the
    /// default limits. The scene chooser lists the `.toml` files of `scenes_dir`.
    pub fn bind(scene: Scene, scenes_dir: Option<PathBuf>, port: u16) -> Result<Viewer, ViewerError> {
        let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        Viewer::bind_with(scene, scenes_dir, Options { listen, ..Options::default() })
    }

    /// Builds `scene` and binds as `options` say.
    pub fn bind_with(scene: Scene, scenes_dir: Option<PathBuf>, options: Options) -> Result<Viewer, ViewerError> {
        let simulator = sim::Simulator::new(scene, scenes_dir)?;
        let bind_error = |source| ViewerError::Bind { addr: options.listen, source };
        let listener = TcpListener::bind(options.listen).map_err(bind_error)?;
        let bound = listener.local_addr().map_err(bind_error)?;
        let token = security::Token::generate().map_err(ViewerError::Random)?;
        Ok(Viewer {
            listener,
            simulator,
            gate: security::Gate::new(token, bound),
            limits: options.limits,
            notify: Box::new(|_| {}),
        })
    }

    /// Calls `f` when the simulation pauses because no page is connected, and when
    /// it resumes (the CLI prints these).
    #[must_use]
    pub fn on_notice(self, f: impl Fn(Notice) + Send + 'static) -> Viewer {
        Viewer { notify: Box::new(f), ..self }
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The launch token, as the URL carries it. Whoever has it can drive the
    /// simulation: show it to the user, never write it to a log.
    #[must_use]
    pub fn token(&self) -> &str {
        self.gate.token().hex()
    }

    /// The page's URL with the token: `http://127.0.0.1:PORT/?t=…`, with the listen
    /// address in place of 127.0.0.1 when it is a specific one.
    pub fn url(&self) -> std::io::Result<String> {
        let addr = self.local_addr()?;
        let host = match addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::from((Ipv4Addr::LOCALHOST, addr.port())),
            IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::from((Ipv6Addr::LOCALHOST, addr.port())),
            _ => addr,
        };
        Ok(format!("http://{host}/?t={}", self.token()))
    }

    /// Serves until the process ends.
    pub fn run(self) {
        let Viewer { listener, simulator, gate, limits, notify } = self;
        let inbox = Arc::new(queues::Inbox::new(limits.command_queue));
        let sim_inbox = Arc::clone(&inbox);
        let sim = std::thread::Builder::new()
            .name("wobble-view-sim".into())
            .spawn(move || simulator.run(&sim_inbox, limits.step_slice, &*notify));
        if sim.is_err() {
            return;
        }
        server::serve(&listener, &Arc::new(server::Shared::new(gate, limits, inbox)));
    }
}
