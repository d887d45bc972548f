//! `wobble view`: the simulation in the browser.
//!
//! [`Viewer::bind`] opens a listener on 127.0.0.1; [`Viewer::run`] serves the page
//! (HTML, JavaScript and a vendored three.js, all compiled in) and upgrades `/ws`
//! to a WebSocket. A simulation thread owns the world, steps it at real time where
//! the machine can (reporting the achieved ratio), and streams positions to every
//! connected page as binary frames; pages send JSON control messages (see
//! [`protocol`]). Threads, not an async runtime: one for the simulation, one for
//! the listener, one per connection.
//!
//! A page that closes, stalls or sends garbage affects only its own connection: the
//! simulation thread never blocks on a page (each has a bounded queue; a full one
//! skips frames), and a malformed message is answered with an `error` reply.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::mpsc;

use wobble_scene::{Scene, SceneError};

pub mod assets;
pub mod protocol;
pub mod server;
pub mod sim;

/// Why the viewer could not start.
#[derive(Debug, thiserror::Error)]
pub enum ViewerError {
    /// The scene does not build.
    #[error("{0}")]
    Scene(#[from] SceneError),
    /// The port could not be bound.
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// Port asked for.
        port: u16,
        /// The failure.
        source: std::io::Error,
    },
}

/// A bound viewer, not yet serving.
pub struct Viewer {
    listener: TcpListener,
    simulator: sim::Simulator,
}

impl Viewer {
    /// Builds `scene` and binds 127.0.0.1:`port` (0 picks a free port). The scene
    /// chooser lists the `.toml` files of `scenes_dir`.
    pub fn bind(scene: Scene, scenes_dir: Option<PathBuf>, port: u16) -> Result<Viewer, ViewerError> {
        let simulator = sim::Simulator::new(scene, scenes_dir)?;
        let listener = server::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .map_err(|source| ViewerError::Bind { port, source })?;
        Ok(Viewer { listener, simulator })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The page's URL.
    pub fn url(&self) -> std::io::Result<String> {
        Ok(format!("http://{}/", self.local_addr()?))
    }

    /// Serves until the process ends.
    pub fn run(self) {
        let (tx, rx) = mpsc::channel();
        let simulator = self.simulator;
        let sim = std::thread::Builder::new().name("wobble-view-sim".into()).spawn(move || simulator.run(rx));
        if sim.is_err() {
            return;
        }
        server::serve(self.listener, tx);
    }
}
