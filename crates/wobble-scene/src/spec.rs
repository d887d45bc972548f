//! The scene description as plain data, mirroring the builders: what a scene file
//! says, after reading and checking (`scene.rs` reads it, `build.rs` and the
//! per-kind modules turn it into a world). A leaf: it depends on no other module of
//! this crate but the source spans of `error.rs`.

use glam::DVec3;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;
use wobble::build::jelly::JellyCube;
use wobble::build::mobile::Mobile;
use wobble::build::rigid::RigidBody;
use wobble::build::rod::Rod;
use wobble::build::sheet::Sheet;
use wobble::build::twolayer::TwoLayerParams;
use wobble::force::GeneralizedParams;

use crate::error::Source;
use wobble::build::chain::Chain;
use wobble::build::cloth::Cloth;
use wobble::build::grid::ElasticGrid;
use wobble::build::lattice::Lattice;
use wobble::build::sphere::Ball;
use wobble::constraint::collider::Surface;
use wobble::constraint::{Motion, Shape};
use wobble::force::{SpringKind, SpringParams};
use wobble::integrate::IntegratorKind;

/// The whole scene.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    /// The file it came from.
    pub source: Source,
    /// Directory that relative paths (mesh files) are resolved against.
    pub base_dir: PathBuf,
    /// Stepping parameters.
    pub simulation: Simulation,
    /// What `wobble run` writes.
    pub output: OutputSpec,
    /// Bodies, in file order.
    pub bodies: Vec<BodySpec>,
    /// Prescribed motions.
    pub drivers: Vec<DriverSpec>,
    /// Floors, walls, spheres.
    pub colliders: Vec<ColliderSpec>,
    /// Scripted drags.
    pub drags: Vec<DragSpec>,
    /// Springs tying rigid bodies to particles (`[[attach]]`).
    pub attachments: Vec<AttachSpec>,
    /// Camera for renders (`[camera]`), if given.
    pub camera: Option<CameraSpec>,
    /// `[contact]`: restitution, friction and iteration counts of contact between
    /// bodies (`wobble::contact`).
    pub contact: wobble::contact::ContactSettings,
}

/// `[camera]`: where renders look from.
#[derive(Clone, Debug, PartialEq)]
pub struct CameraSpec {
    /// Eye position, m.
    pub position: DVec3,
    /// Point looked at, m (default origin).
    pub target: DVec3,
    /// Up direction (default +y).
    pub up: DVec3,
    /// Vertical field of view, degrees (default 40).
    pub fov_deg: f64,
    /// Image width, pixels.
    pub width: Option<usize>,
    /// Image height, pixels.
    pub height: Option<usize>,
}

/// `[simulation]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Simulation {
    /// Integration method (default `symplectic-euler`).
    pub integrator: IntegratorKind,
    /// Time step, s (default 1e-3).
    pub dt: f64,
    /// Simulated time, s (default 2 s unless `steps` is given).
    pub duration: Option<f64>,
    /// Number of steps (overrides `duration`).
    pub steps: Option<u64>,
    /// Gravitational acceleration, m/s² (default [0, −9.81, 0]).
    pub gravity: DVec3,
    /// Air-drag rate, 1/s (default 0).
    pub air_drag: f64,
    /// Jakobsen's δ for Verlet (default 0.01).
    pub verlet_drag: f64,
    /// Constraint passes per step (default 1).
    pub constraint_iterations: u32,
    /// Linear-solver settings for implicit integrators (`solver`, `cg_tolerance`,
    /// `cg_max_iterations`, `cg_accept_unconverged`, `newton_iterations`,
    /// `newton_tolerance`, `warm_start_order`).
    pub solver: wobble::solve::CgSettings,
}

/// Default simulated time when neither `duration` nor `steps` is given, s.
pub const DEFAULT_DURATION: f64 = 2.0;

impl Simulation {
    /// Steps to run: `steps`, else ⌈duration / dt⌉.
    #[must_use]
    pub fn total_steps(&self) -> u64 {
        self.steps
            .unwrap_or_else(|| (self.duration.unwrap_or(DEFAULT_DURATION) / self.dt - 1e-9).ceil().max(0.0) as u64)
    }
}

/// Frame file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameFormat {
    /// Stanford PLY, binary little-endian, positions and faces.
    Ply,
    /// Wavefront OBJ, positions, faces and polylines.
    Obj,
    /// Legacy VTK polydata (ASCII) for ParaView, with point data.
    Vtk,
    /// VTK XML unstructured grid, binary and compressed, with a `.pvd` index of
    /// the run for ParaView's time series.
    Vtu,
}

impl FrameFormat {
    /// Every format with its name.
    pub const ALL: [(FrameFormat, &'static str); 4] =
        [(FrameFormat::Ply, "ply"), (FrameFormat::Obj, "obj"), (FrameFormat::Vtk, "vtk"), (FrameFormat::Vtu, "vtu")];

    /// File extension.
    #[must_use]
    pub fn extension(self) -> &'static str {
        match self {
            FrameFormat::Ply => "ply",
            FrameFormat::Obj => "obj",
            FrameFormat::Vtk => "vtk",
            FrameFormat::Vtu => "vtu",
        }
    }
}

/// `[output]`.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputSpec {
    /// Write a frame every this many steps (0: no frames; default: 25 frames per
    /// simulated second).
    pub frame_every: Option<u64>,
    /// Frame formats (default PLY).
    pub formats: Vec<FrameFormat>,
    /// Write a metrics row every this many steps (default: 100 rows per simulated
    /// second, at least every step).
    pub metrics_every: Option<u64>,
    /// Write a checkpoint every this many simulated seconds (rounded to whole
    /// steps; default: none, only when interrupted).
    pub checkpoint_every: Option<f64>,
}

/// One `[[body]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct BodySpec {
    /// Unique name.
    pub name: String,
    /// Shape and builder parameters.
    pub shape: BodyShape,
    /// Particles to pin.
    pub pin: Option<Selection>,
    /// Initial velocity of every particle, m/s.
    pub velocity: DVec3,
    /// Spring kinds turned into Jakobsen sticks (constraints instead of forces).
    pub sticks: Vec<SpringKind>,
    /// Provot's stretch limit on some spring kinds.
    pub stretch_limit: Option<LimitSpec>,
    /// `collide`, `self_collide` and `thickness` (see `wobble::contact`).
    pub contact: wobble::contact::ContactOptions,
    /// Span of the body's table.
    pub span: Range<usize>,
    /// Spans of its keys, for builder errors.
    pub key_spans: BTreeMap<String, Range<usize>>,
}

/// `stretch_limit = { tau, iterations, kinds }` of a body.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitSpec {
    /// Allowed relative stretch τ (default 0.1).
    pub tau: f64,
    /// Most correction passes per step (default 10).
    pub iterations: u32,
    /// Spring kinds limited (default: every kind the body has).
    pub kinds: Vec<SpringKind>,
}

/// The builder a body uses.
#[derive(Clone, Debug, PartialEq)]
pub enum BodyShape {
    /// `type = "chain"`.
    Chain(Chain),
    /// `type = "cloth"`.
    Cloth(Cloth),
    /// `type = "lattice"`.
    Lattice(Lattice),
    /// `type = "mesh"`: a closed or open triangle mesh from an OBJ file.
    Mesh {
        /// Path as written in the file.
        file: String,
        /// Uniform scale.
        scale: f64,
        /// Translation, m.
        translate: DVec3,
        /// Total mass, kg.
        mass: f64,
        /// Edge springs.
        structural: SpringParams,
        /// Collision radius, m.
        radius: f64,
        /// Merge vertices closer than this (file units) before building.
        weld: Option<f64>,
    },
    /// `type = "ball"`.
    Ball(Ball),
    /// `type = "grid"`: Terzopoulos's elastic surface or solid (002).
    Grid(ElasticGrid),
    /// `type = "pair"`: the thesis's 1D object (two particles, one spring).
    Pair(wobble::build::pair::Pair),
    /// `type = "ring"`: the thesis's 2D object, one or two layers, with gas.
    Ring(wobble::build::ring::Ring),
    /// `type = "pressure-sphere"`: the thesis's 3D object, one or two layers.
    PressureSphere(wobble::build::twolayer::PressureSphere),
    /// `type = "pressure-mesh"`: a closed OBJ surface as a pressure body.
    PressureMesh(PressureMeshSpec),
    /// Oriented particles and generalized springs (001): `rod`, `mobile`,
    /// `jelly-cube`, `sheet`, `generalized-mesh`.
    Oriented(OrientedSpec),
    /// `type = "rigid"`: a sphere or box with 6 degrees of freedom (000).
    Rigid(RigidSpec),
}

impl BodyShape {
    /// How many particles the body will have at most, from its parameters alone
    /// (before anything is allocated): exact but for elastic grids with points
    /// left out. `None` for bodies read from mesh files, whose size the file's own
    /// limit bounds, and for mobiles (a few dozen particles).
    #[must_use]
    pub fn particle_count(&self) -> Option<u64> {
        let product = |n: &[usize]| n.iter().fold(1u64, |a, &k| a.saturating_mul(k as u64));
        let sphere = |mesh: &wobble::build::sphere::SphereMesh| match *mesh {
            wobble::build::sphere::SphereMesh::Uniform { level } => {
                4u64.saturating_pow(level).saturating_mul(4).saturating_add(2)
            }
            wobble::build::sphere::SphereMesh::LatLong { slices, stacks } => {
                u64::from(slices).saturating_mul(u64::from(stacks).saturating_sub(1)).saturating_add(2)
            }
        };
        let layers = |inner: bool| if inner { 2 } else { 1 };
        Some(match self {
            BodyShape::Chain(c) => c.count as u64,
            BodyShape::Cloth(c) => product(&[c.nx, c.ny]),
            BodyShape::Lattice(l) => product(&l.n),
            BodyShape::Grid(g) => product(&g.n),
            BodyShape::Ball(b) => sphere(&b.mesh).saturating_add(1),
            BodyShape::Pair(_) => 2,
            BodyShape::Ring(r) => (r.count as u64).saturating_mul(layers(r.inner_radius.is_some())),
            BodyShape::PressureSphere(p) => sphere(&p.mesh).saturating_mul(layers(p.inner_radius.is_some())),
            BodyShape::Oriented(OrientedSpec::Rod(r)) => r.count as u64,
            BodyShape::Oriented(OrientedSpec::JellyCube(j)) => product(&j.n),
            BodyShape::Oriented(OrientedSpec::Sheet(sh)) => product(&[sh.nx, sh.nz]),
            BodyShape::Rigid(_) => 1,
            BodyShape::Mesh { .. }
            | BodyShape::PressureMesh(_)
            | BodyShape::Oriented(OrientedSpec::Mesh { .. } | OrientedSpec::Mobile(_)) => return None,
        })
    }
}

/// Body type names, for messages.
pub const BODY_TYPES: [&str; 16] = [
    "chain",
    "cloth",
    "lattice",
    "mesh",
    "ball",
    "grid",
    "pair",
    "ring",
    "pressure-sphere",
    "pressure-mesh",
    "rod",
    "mobile",
    "jelly-cube",
    "sheet",
    "generalized-mesh",
    "rigid",
];

/// A set of particles of one body.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Selection {
    /// Every particle.
    pub all: bool,
    /// Body-local indices.
    pub indices: Vec<usize>,
    /// Grid coordinates (cloth: [i, j]; lattice: [i, j, k]).
    pub grid: Vec<Vec<usize>>,
    /// The particle nearest to each point, m.
    pub near: Vec<DVec3>,
    /// Every particle inside the box [min, max], m.
    pub boxes: Vec<(DVec3, DVec3)>,
    /// Named edges of a cloth (`top`, `bottom`, `left`, `right`) or chain ends
    /// (`first`, `last`).
    pub edges: Vec<String>,
    /// Span of the selection table.
    pub span: Range<usize>,
}

/// One `[[driver]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct DriverSpec {
    /// Name for reports.
    pub name: String,
    /// The body whose particles it drives.
    pub body: String,
    /// Which particles.
    pub select: Selection,
    /// The path.
    pub motion: Motion,
    /// Span of the table.
    pub span: Range<usize>,
}

/// Collider geometry in a scene: one engine shape, or a room of six planes.
#[derive(Clone, Debug, PartialEq)]
pub enum ColliderShape {
    /// A plane or a sphere (normals normalised on read).
    Single(Shape),
    /// Six inward planes bounding a box.
    Room {
        /// Minimum corner, m.
        min: DVec3,
        /// Maximum corner, m.
        max: DVec3,
    },
    /// A triangle mesh from an OBJ file, loaded when the scene is built.
    Mesh {
        /// Path relative to the scene file.
        file: String,
        /// Uniform scale applied to the file's coordinates.
        scale: f64,
        /// Translation after scaling, m.
        offset: DVec3,
        /// Shell thickness of an open mesh, m.
        thickness: f64,
        /// Span of the `file` key.
        file_span: Range<usize>,
    },
}

/// One `[[collider]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ColliderSpec {
    /// Name for reports and parameter keys.
    pub name: String,
    /// Geometry.
    pub shape: ColliderShape,
    /// Restitution and friction.
    pub surface: Surface,
    /// Motion of the collider.
    pub motion: Motion,
    /// Span of the table.
    pub span: Range<usize>,
}

/// What a scripted drag grabs.
#[derive(Clone, Debug, PartialEq)]
pub enum DragPick {
    /// The grabbable particle nearest to a point, m.
    Near(DVec3),
    /// Particle `index` of body `body`.
    Particle {
        /// Body name.
        body: String,
        /// Body-local index.
        index: usize,
    },
}

/// One `[[drag]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct DragSpec {
    /// Grab time, s.
    pub start: f64,
    /// Release time, s.
    pub end: f64,
    /// What to grab.
    pub pick: DragPick,
    /// Where to pull: `to` (absolute) or `by` (offset).
    pub target: wobble::interact::CursorTarget,
    /// Seconds to move the cursor to the target.
    pub ramp: f64,
    /// Drag stiffness, N/m.
    pub stiffness: f64,
    /// Drag damping, N s/m.
    pub damping: f64,
    /// Span of the table.
    pub span: Range<usize>,
}

/// A body of oriented particles, as read.
#[derive(Clone, Debug, PartialEq)]
pub enum OrientedSpec {
    /// `type = "rod"`.
    Rod(Rod),
    /// `type = "mobile"`.
    Mobile(Mobile),
    /// `type = "jelly-cube"`.
    JellyCube(JellyCube),
    /// `type = "sheet"`.
    Sheet(Sheet),
    /// `type = "generalized-mesh"`: the OBJ file is read when building.
    Mesh {
        /// Path as written in the scene (relative to the scene's directory).
        file: String,
        /// Uniform scale.
        scale: f64,
        /// Translation, m.
        translate: DVec3,
        /// Total mass, kg.
        mass: f64,
        /// Particle radius, m.
        radius: f64,
        /// Edge springs.
        springs: GeneralizedParams,
    },
}

/// `type = "rigid"`: the body and its contact with particles.
#[derive(Clone, Debug, PartialEq)]
pub struct RigidSpec {
    /// The engine's builder.
    pub body: RigidBody,
    /// Restitution and friction against other bodies' particles.
    pub contact: Surface,
}

/// One `[[attach]]`: springs from particles of `body` to points of rigid body
/// `rigid`.
#[derive(Clone, Debug, PartialEq)]
pub struct AttachSpec {
    /// Name of the force term (default `attach-N`).
    pub name: String,
    /// The rigid body.
    pub rigid: String,
    /// The body whose particles are attached.
    pub body: String,
    /// Which particles.
    pub select: Selection,
    /// Anchors in the rigid body's frame, one per selected particle in index order
    /// (`None`: the point of the body's surface nearest to each particle at the
    /// start).
    pub offsets: Option<Vec<DVec3>>,
    /// Rest length, m (`None`: each link's initial length).
    pub rest: Option<f64>,
    /// Stiffness, damping and law.
    pub spring: SpringParams,
    /// Span of the table.
    pub span: Range<usize>,
}

/// `type = "pressure-mesh"`: an OBJ file made a pressure body.
#[derive(Clone, Debug, PartialEq)]
pub struct PressureMeshSpec {
    /// Path as written in the scene (relative to the scene's directory).
    pub file: String,
    /// Uniform scale.
    pub scale: f64,
    /// Translation, m.
    pub translate: DVec3,
    /// Merge vertices closer than this (file units) before building.
    pub weld: Option<f64>,
    /// 1 or 2.
    pub layers: u32,
    /// Inward offset of the inner layer, m (`None`: `twolayer::DEFAULT_THICKNESS_FRACTION`
    /// of the mesh's mean radius).
    pub thickness: Option<f64>,
    /// Materials and gas.
    pub params: TwoLayerParams,
}
