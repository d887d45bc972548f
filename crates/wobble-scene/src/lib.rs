//! Scene files for wobble: a TOML description of bodies, materials, pins, drivers,
//! colliders, drags, stepping and outputs, checked with errors that name the file,
//! line and column and say what to do.
//!
//! ```
//! use wobble_scene::{Scene, Source};
//!
//! let text = r#"
//! [simulation]
//! dt = 1e-3
//! steps = 10
//!
//! [[body]]
//! type = "cloth"
//! nx = 8
//! ny = 8
//! pin = { edge = ["top"] }
//! "#;
//! let scene = Scene::parse(Source::new("example.toml", text), ".".into()).unwrap();
//! let mut built = scene.build().unwrap();
//! built.world.run(scene.simulation.total_steps()).unwrap();
//! ```
//!
//! The format is documented in `scenes/README.md`.

mod build;
pub mod doc;
pub mod error;
mod fields;
pub mod input;
pub mod oriented;
pub mod rigid;
mod scene;
pub mod set;
mod spec;
pub mod twolayer;

pub use build::{Built, BuiltBody, Grid};
pub use error::{SceneError, Source};
pub use set::Override;
pub use spec::*;
