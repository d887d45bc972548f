//! The simulation thread: owns the world, applies the pages' commands in turn,
//! steps at real time where it can, and broadcasts frames and status to every
//! connected page. With no page connected it sleeps (the world does not advance)
//! until one connects.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use glam::DVec3;
use wobble::World;
use wobble::constraint::collider::{Collider, Shape};
use wobble::force::DragSpringParams;
use wobble::integrate::IntegratorKind;
use wobble::world::StepError;
use wobble_scene::{Scene, SceneError};

use crate::protocol::{
    BodyInfo, ColliderInfo, Energy, FrameHeader, GrabInfo, Reply, Request, Status, Topology, encode_frame,
};
use crate::queues::{Event, Inbox, Outbox, Outgoing, PageId, Work};

/// Frames per second broadcast while running.
pub const FRAME_RATE: f64 = 60.0;
/// Status messages per second.
const STATUS_RATE: f64 = 4.0;
/// Most wall-clock time spent stepping per frame, as a fraction of the frame period:
/// the rest is left for encoding, the sockets and the other core's work.
const STEP_BUDGET: f64 = 0.75;
/// What the simulation thread tells whoever runs the viewer (the CLI prints it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// No page is connected: the world stands still and the thread sleeps.
    Paused,
    /// A page connected: the world runs again (unless the user paused it).
    Resumed,
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Notice::Paused => "no page connected: the simulation is paused until one connects",
            Notice::Resumed => "a page connected: the simulation runs",
        })
    }
}

/// What a command did, for the page and the others.
enum Outcome {
    /// Every page's overlay changed: broadcast a status.
    Broadcast,
    /// Nothing more to send.
    Quiet,
    /// Not finished within its slice: this is what is left.
    Unfinished(Request),
}

pub use wobble::force::pointer::{DRAG_DAMPING_LIMIT, DRAG_STIFFNESS_LIMIT};

/// The drag spring a scene starts with in the viewer ([`World::starting_drag`]):
/// 004's MKS and MKD, each reduced where it would make the lightest grabbable
/// particle unstable on its own at the scene's time step. The user's sliders may go
/// beyond.
#[must_use]
pub fn starting_drag(world: &World) -> DragSpringParams {
    world.starting_drag()
}

/// The world and where it came from.
struct Session {
    scene: Scene,
    name: String,
    world: World,
    generation: u32,
    playing: bool,
    /// Drag spring constants the user chose (kept across resets, dropped when
    /// another scene is loaded).
    user_drag: Option<DragSpringParams>,
}

/// The simulation thread's state.
pub struct Simulator {
    session: Session,
    scenes_dir: Option<PathBuf>,
    clients: BTreeMap<PageId, Arc<Outbox>>,
    frame_buf: Vec<u8>,
    dirty: bool,
    /// Simulated time owed to real time, s.
    owed: f64,
    rate: RateMeter,
    last_status: Instant,
}

/// Steps, simulated time and frames over a sliding second.
struct RateMeter {
    since: Instant,
    steps: u64,
    sim_time: f64,
    frames: u64,
    steps_per_second: f64,
    realtime_ratio: f64,
    frames_per_second: f64,
}

impl RateMeter {
    fn new() -> Self {
        Self {
            since: Instant::now(),
            steps: 0,
            sim_time: 0.0,
            frames: 0,
            steps_per_second: 0.0,
            realtime_ratio: 0.0,
            frames_per_second: 0.0,
        }
    }

    fn tick(&mut self) {
        let wall = self.since.elapsed().as_secs_f64();
        if wall >= 1.0 {
            self.steps_per_second = self.steps as f64 / wall;
            self.realtime_ratio = self.sim_time / wall;
            self.frames_per_second = self.frames as f64 / wall;
            *self = Self { since: Instant::now(), steps: 0, sim_time: 0.0, frames: 0, ..*self };
        }
    }
}

/// The drawn surfaces that are not made of particles — offset surfaces of oriented
/// particles (a rod's tube, a sheet's thickness) and rigid bodies' shapes — as
/// vertices that follow the particles (numbered from n) and triangles over all.
fn extra_surfaces(w: &World) -> (Vec<DVec3>, Vec<[u32; 3]>) {
    let drawn = wobble::model::DrawnSurfaces::of(&w.topology, &w.state);
    (drawn.x, drawn.triangles)
}

/// The world's colliders, in order.
fn colliders(w: &World) -> impl Iterator<Item = &Collider> {
    w.constraints.iter().filter_map(|c| (c.as_ref() as &dyn std::any::Any).downcast_ref::<Collider>())
}

/// Display name of a scene: its file name, or the source name of the built-in one.
fn scene_name(scene: &Scene) -> String {
    let name = &scene.source.name;
    if name.starts_with('<') {
        return name.clone();
    }
    std::path::Path::new(name).file_name().map_or_else(|| name.clone(), |f| f.to_string_lossy().into_owned())
}

impl Session {
    fn new(scene: Scene, generation: u32, user_drag: Option<DragSpringParams>) -> Result<Self, SceneError> {
        let mut world = scene.build()?.world;
        let drag = user_drag.unwrap_or_else(|| starting_drag(&world));
        world.set_drag_params(drag);
        Ok(Self { name: scene_name(&scene), scene, world, generation, playing: true, user_drag })
    }
}

impl Simulator {
    /// A simulator for `scene`, offering the `.toml` files of `scenes_dir` in the
    /// chooser.
    pub fn new(scene: Scene, scenes_dir: Option<PathBuf>) -> Result<Self, SceneError> {
        Ok(Self {
            session: Session::new(scene, 1, None)?,
            scenes_dir,
            clients: BTreeMap::new(),
            frame_buf: Vec::new(),
            dirty: true,
            owed: 0.0,
            rate: RateMeter::new(),
            last_status: Instant::now(),
        })
    }

    /// Scene files offered by the chooser, sorted.
    #[must_use]
    pub fn scene_files(&self) -> Vec<String> {
        let Some(dir) = &self.scenes_dir else { return Vec::new() };
        let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_file())
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter(|n| n.ends_with(".toml"))
            .collect();
        names.sort();
        names
    }

    /// Serves the commands in `inbox` forever, stepping `step_slice` at most per
    /// turn of a `step` command, and telling `notify` when the simulation pauses for
    /// want of a page and resumes.
    pub fn run(mut self, inbox: &Inbox, step_slice: Duration, notify: &dyn Fn(Notice)) {
        let period = Duration::from_secs_f64(1.0 / FRAME_RATE);
        let mut next_frame = Instant::now();
        let mut last = Instant::now();
        notify(Notice::Paused);
        let mut connected = false;
        loop {
            match inbox.next(self.deadline(next_frame)) {
                Some(Work::Event(Event::Join(id, outbox))) => {
                    self.clients.insert(id, outbox);
                    self.guarded(|sim| sim.greet(id));
                }
                Some(Work::Event(Event::Leave(id))) => {
                    self.clients.remove(&id);
                }
                Some(Work::Command(id, request)) => self.guarded(|sim| {
                    if let Some(rest) = sim.command(id, request, step_slice) {
                        inbox.put_back(id, rest);
                    }
                }),
                None => {}
            }
            // Pages also drop out when a send finds them gone, so look at the set.
            if connected == self.clients.is_empty() {
                connected = !connected;
                notify(if connected { Notice::Resumed } else { Notice::Paused });
                // Real time restarts now: the pause is not a debt.
                (last, next_frame, self.owed) = (Instant::now(), Instant::now(), 0.0);
            }
            let now = Instant::now();
            if self.clients.is_empty() || now < next_frame {
                continue;
            }
            next_frame = (next_frame + period).max(now);
            let wall = (now - last).as_secs_f64().min(0.1);
            last = now;
            self.guarded(|sim| sim.advance(wall, period.as_secs_f64() * STEP_BUDGET));
            self.broadcast_frame();
            if self.last_status.elapsed().as_secs_f64() >= 1.0 / STATUS_RATE {
                self.broadcast(&Reply::Status(self.status()));
            }
            self.rate.tick();
        }
    }

    /// When the loop must wake even without commands: never without pages; at the
    /// next frame while running or with a frame to send; else for the next status.
    fn deadline(&self, next_frame: Instant) -> Option<Instant> {
        if self.clients.is_empty() {
            None
        } else if self.session.playing || self.dirty {
            Some(next_frame)
        } else {
            Some(next_frame.max(self.last_status + Duration::from_secs_f64(1.0 / STATUS_RATE)))
        }
    }

    /// Runs `f`; should it panic (an engine bug), tells every page and rebuilds the
    /// scene, so that one bad request or step never takes the viewer down.
    fn guarded(&mut self, f: impl FnOnce(&mut Self)) {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self)));
        if let Err(panic) = result {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            self.broadcast(&Reply::error(format!(
                "internal error (a bug; please report it): {what}; the scene was rebuilt"
            )));
            let scene = self.session.scene.clone();
            let user_drag = self.session.user_drag;
            if let Err(e) = self.rebuild(scene, user_drag) {
                self.broadcast(&Reply::error(e));
            }
            self.session.playing = false;
        }
    }

    /// Steps towards real time: `wall` seconds have passed; spend at most `budget`
    /// seconds stepping.
    fn advance(&mut self, wall: f64, budget: f64) {
        let s = &mut self.session;
        if !s.playing || s.world.halted().is_some() {
            self.owed = 0.0;
            return;
        }
        self.owed += wall;
        let h = s.world.params().dt;
        let t0 = Instant::now();
        let sim0 = s.world.time();
        let mut steps = 0;
        while self.owed >= h {
            if let Err(e) = s.world.step() {
                self.on_step_error(&e);
                break;
            }
            steps += 1;
            self.owed -= h;
            if t0.elapsed().as_secs_f64() > budget {
                // Slower than real time: drop the debt rather than chase it.
                self.owed = 0.0;
                break;
            }
        }
        let s = &self.session;
        self.rate.steps += steps;
        self.rate.sim_time += s.world.time() - sim0;
        self.dirty |= steps > 0;
    }

    fn on_step_error(&mut self, e: &StepError) {
        self.session.playing = false;
        self.dirty = true;
        let message = match e {
            StepError::BlowUp(b) | StepError::Halted(b) => b.to_string(),
            other => other.to_string(),
        };
        self.broadcast(&Reply::error(&message));
        self.broadcast(&Reply::Status(self.status()));
    }

    /// Sends the current positions to every page if they changed.
    fn broadcast_frame(&mut self) {
        if !self.dirty || self.clients.is_empty() {
            return;
        }
        self.dirty = false;
        let w = &self.session.world;
        let header = FrameHeader {
            generation: self.session.generation,
            n: w.state.len() as u32,
            flags: u32::from(self.session.playing) | (u32::from(w.halted().is_some()) << 1),
            steps: w.steps(),
            time: w.time(),
            colliders: 0,
        };
        let t = w.time();
        let offsets: Vec<[f64; 3]> = colliders(w).map(|c| c.motion.offset(t).to_array()).collect();
        let (extra, _) = extra_surfaces(w);
        let header = FrameHeader { n: (w.state.len() + extra.len()) as u32, colliders: offsets.len() as u32, ..header };
        let vertices = w.state.x.iter().chain(extra.iter().copied()).map(|p| p.to_array());
        encode_frame(&header, vertices, &offsets, &mut self.frame_buf);
        let message = Outgoing::Frame(Arc::from(self.frame_buf.as_slice()));
        self.rate.frames += 1;
        self.send_all(&message);
    }

    /// Queues `message` for every page, forgetting the pages that are gone.
    fn send_all(&mut self, message: &Outgoing) {
        self.clients.retain(|_, outbox| outbox.send(message.clone()));
    }

    fn broadcast(&mut self, reply: &Reply) {
        if matches!(reply, Reply::Status(_)) {
            self.last_status = Instant::now();
        }
        self.send_all(&Outgoing::from(reply));
    }

    /// Sends a JSON reply to one page.
    fn reply(&mut self, client: PageId, reply: &Reply) {
        if let Some(outbox) = self.clients.get(&client)
            && !outbox.send(Outgoing::from(reply))
        {
            self.clients.remove(&client);
        }
    }

    /// Welcomes a new page: the scene list, the topology and a status; a frame follows.
    fn greet(&mut self, id: PageId) {
        let hello = Reply::Hello {
            scenes: self.scene_files(),
            integrators: IntegratorKind::ALL.iter().map(|k| k.name().to_owned()).collect(),
        };
        self.reply(id, &hello);
        self.reply(id, &Reply::Topology(self.topology()));
        self.reply(id, &Reply::Status(self.status()));
        self.dirty = true;
    }

    /// Runs one command of page `client` (a `step` for at most `slice`); returns
    /// what is left of it, if anything.
    fn command(&mut self, client: PageId, request: Request, slice: Duration) -> Option<Request> {
        match self.apply(client, request, slice) {
            Ok(Outcome::Broadcast) => self.broadcast(&Reply::Status(self.status())),
            Ok(Outcome::Quiet) => {}
            Ok(Outcome::Unfinished(rest)) => return Some(rest),
            Err(message) => self.reply(client, &Reply::error(message)),
        }
        None
    }

    /// Applies one request; `Err` carries the error text for the page.
    fn apply(&mut self, client: PageId, request: Request, slice: Duration) -> Result<Outcome, String> {
        let world = &mut self.session.world;
        match request {
            Request::Play => {
                if let Some(b) = world.halted() {
                    return Err(format!("{b} Press reset to rebuild the scene."));
                }
                self.session.playing = true;
                self.owed = 0.0;
            }
            Request::Pause => self.session.playing = false,
            Request::Step { n } => {
                self.session.playing = false;
                self.dirty = true;
                let t0 = Instant::now();
                let mut done = 0;
                while done < n {
                    if let Err(e) = self.session.world.step() {
                        self.on_step_error(&e);
                        return Ok(Outcome::Quiet);
                    }
                    done += 1;
                    if t0.elapsed() >= slice && done < n {
                        return Ok(Outcome::Unfinished(Request::Step { n: n - done }));
                    }
                }
            }
            Request::Reset => self.rebuild(self.session.scene.clone(), self.session.user_drag)?,
            Request::Load { scene } => {
                if !self.scene_files().contains(&scene) {
                    return Err(format!(
                        "unknown scene `{scene}`; the scene directory has: {}",
                        self.scene_files().join(", ")
                    ));
                }
                let dir = self.scenes_dir.clone().unwrap_or_default();
                let loaded = Scene::load(&dir.join(&scene)).map_err(|e| e.to_string())?;
                self.rebuild(loaded, None)?;
            }
            Request::Integrator { name } => {
                let kind: IntegratorKind =
                    name.parse().map_err(|e: wobble::integrate::UnknownIntegrator| e.to_string())?;
                world.set_integrator(kind);
            }
            Request::Dt { value } => world.set_dt(value).map_err(|e| e.to_string())?,
            Request::Param { key, value } => {
                world.set_parameter(&key, value).map_err(|e| e.to_string())?;
                if key.starts_with("drag.") {
                    self.session.user_drag = Some(world.drag.params);
                }
                let params = Reply::Params { params: world.parameters() };
                self.broadcast(&params);
            }
            Request::Grab { origin, dir } => {
                let tolerance = 0.03 * self.bounds().1.max(1e-6);
                let world = &mut self.session.world;
                let picked = world.pick_ray(DVec3::from_array(origin), DVec3::from_array(dir), tolerance);
                let point = picked.map(|i| world.state.x.get(i));
                if let (Some(i), Some(p)) = (picked, point) {
                    world.grab(i, p);
                }
                self.reply(client, &Reply::Grabbed { particle: picked, point: point.map(|p| p.to_array()) });
            }
            Request::Drag { cursor } => {
                if world.drag.grab.is_none() {
                    return Err("nothing is grabbed: send `grab` first".into());
                }
                world.move_cursor(DVec3::from_array(cursor), DVec3::ZERO);
                // A drag sends a message per mouse move: the periodic status reports
                // the cursor; measuring the world for each would be wasted.
                return Ok(Outcome::Quiet);
            }
            Request::Release => world.release(),
            Request::Pin { particle, origin, dir } => {
                let n = world.state.len();
                let target = match (particle, origin, dir) {
                    (Some(i), _, _) if i < n => i,
                    (Some(i), _, _) => return Err(format!("particle {i} does not exist (the scene has {n})")),
                    (None, Some(o), Some(d)) => {
                        let tolerance = 0.03 * self.bounds().1.max(1e-6);
                        let world = &self.session.world;
                        match world.pick_ray(DVec3::from_array(o), DVec3::from_array(d), tolerance) {
                            Some(i) => i,
                            None => return Ok(Outcome::Quiet),
                        }
                    }
                    _ => return Err("`pin` takes `particle` or `origin` and `dir`".into()),
                };
                let world = &mut self.session.world;
                let pinned = !world.particles.pinned[target];
                world.set_pinned(target, pinned);
                if world.drag.grab.is_some_and(|g| g.particle == target) && pinned {
                    world.release();
                }
                let pins = Reply::Pins { pinned: self.pinned() };
                self.broadcast(&pins);
                self.dirty = true;
            }
            Request::Query { particles } => {
                let n = world.state.len();
                if let Some(&bad) = particles.iter().find(|&&i| i >= n) {
                    return Err(format!("particle {bad} does not exist (the scene has {n})"));
                }
                let reply = Reply::Particles {
                    generation: self.session.generation,
                    time: world.time(),
                    steps: world.steps(),
                    x: particles.iter().map(|&i| world.state.x.get(i).to_array()).collect(),
                    pinned: particles.iter().map(|&i| world.particles.pinned[i]).collect(),
                };
                self.reply(client, &reply);
                return Ok(Outcome::Quiet);
            }
            Request::Status => {
                self.reply(client, &Reply::Status(self.status()));
                return Ok(Outcome::Quiet);
            }
        }
        // Every other accepted request changes what the overlay shows: tell every page.
        Ok(Outcome::Broadcast)
    }

    /// Rebuilds the world from `scene` with the user's drag constants, if any,
    /// keeping whether it plays.
    fn rebuild(&mut self, scene: Scene, user_drag: Option<DragSpringParams>) -> Result<(), String> {
        let generation = self.session.generation.wrapping_add(1);
        let mut session = Session::new(scene, generation, user_drag).map_err(|e| e.to_string())?;
        // A paused page stays paused: the user may want to set things up first.
        session.playing = self.session.playing;
        self.session = session;
        self.owed = 0.0;
        self.dirty = true;
        self.broadcast(&Reply::Topology(self.topology()));
        Ok(())
    }

    fn pinned(&self) -> Vec<usize> {
        let p = &self.session.world.particles.pinned;
        (0..p.len()).filter(|&i| p[i]).collect()
    }

    /// Centre and diagonal of the current bounding box.
    fn bounds(&self) -> ([f64; 3], f64) {
        let (lo, hi) = wobble::metrics::bounding_box(&self.session.world.state.x);
        (((lo + hi) * 0.5).to_array(), (hi - lo).length())
    }

    /// Centre and diagonal of what the camera frames: the bodies' box, grown to take
    /// in sphere colliders near them and a floor less than three box sizes below.
    fn framing(&self) -> ([f64; 3], f64) {
        let w = &self.session.world;
        let (mut lo, mut hi) = wobble::metrics::bounding_box(&w.state.x);
        let size = (hi - lo).length().max(1e-3);
        for c in colliders(w) {
            match c.shape {
                Shape::Box { .. } | Shape::Mesh(_) => {}
                Shape::Sphere { center, radius } => {
                    let r = DVec3::splat(radius);
                    let near = (center - (lo + hi) * 0.5).length() < 2.0 * size + radius;
                    if near && radius < 4.0 * size {
                        lo = lo.min(center - r);
                        hi = hi.max(center + r);
                    }
                }
                Shape::Plane { point, normal } => {
                    if normal.y > 0.9 && point.y < lo.y && lo.y - point.y < 3.0 * size {
                        lo.y = point.y;
                    }
                }
            }
        }
        (((lo + hi) * 0.5).to_array(), (hi - lo).length())
    }

    fn topology(&self) -> Topology {
        let w = &self.session.world;
        let mut segments = Vec::new();
        let mut rest = Vec::new();
        for term in &w.forces {
            let before = segments.len();
            term.segments(&mut segments);
            let mut lengths = Vec::new();
            term.segment_rest_lengths(&mut lengths);
            let added = segments.len() - before;
            if lengths.len() == added {
                rest.extend(lengths.iter().map(|&l| (l.is_finite() && l > 0.0).then_some(l as f32)));
            } else {
                rest.extend(std::iter::repeat_n(None, added));
            }
        }
        let (center, size) = self.framing();
        let (extra, extra_triangles) = extra_surfaces(w);
        Topology {
            generation: self.session.generation,
            scene: self.session.name.clone(),
            n: w.state.len(),
            vertices: w.state.len() + extra.len(),
            triangles: w.topology.triangles.iter().chain(&extra_triangles).flatten().copied().collect(),
            lines: w.topology.lines.iter().flatten().copied().collect(),
            segments: segments.iter().flatten().copied().collect(),
            rest,
            bodies: w
                .topology
                .bodies
                .iter()
                .map(|b| BodyInfo {
                    name: b.name.clone(),
                    kind: b.kind.clone(),
                    start: b.particles.start,
                    end: b.particles.end,
                    closed: b.closed,
                })
                .collect(),
            pinned: self.pinned(),
            colliders: colliders(w)
                .map(|c| match &c.shape {
                    Shape::Plane { point, normal } => {
                        ColliderInfo::Plane { name: c.name.clone(), point: point.to_array(), normal: normal.to_array() }
                    }
                    Shape::Sphere { center, radius } => {
                        ColliderInfo::Sphere { name: c.name.clone(), center: center.to_array(), radius: *radius }
                    }
                    shape => {
                        let (vertices, triangles) = wobble::constraint::collider::surface_of(shape);
                        ColliderInfo::Mesh {
                            name: c.name.clone(),
                            vertices: vertices.iter().flat_map(|v| v.to_array().map(|x| x as f32)).collect(),
                            triangles: triangles.into_iter().flatten().collect(),
                        }
                    }
                })
                .collect(),
            params: w.parameters(),
            integrator: w.params().integrator.name().to_owned(),
            dt: w.params().dt,
            center,
            size,
        }
    }

    fn status(&self) -> Status {
        let w = &self.session.world;
        let m = w.metrics();
        Status {
            generation: self.session.generation,
            time: w.time(),
            steps: w.steps(),
            playing: self.session.playing,
            steps_per_second: self.rate.steps_per_second,
            realtime_ratio: self.rate.realtime_ratio,
            frames_per_second: self.rate.frames_per_second,
            energy: Energy { kinetic: m.kinetic, potential: m.potential, total: m.total },
            volume: m.volume,
            grab: w.drag.grab.map(|g| GrabInfo { particle: g.particle, cursor: g.cursor.to_array() }),
            halted: w.halted().map(|b| b.to_string()),
            integrator: w.params().integrator.name().to_owned(),
            dt: w.params().dt,
            clients: self.clients.len(),
        }
    }
}
