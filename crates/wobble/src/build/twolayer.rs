//! Pressure soft bodies with one or two layers (004 ch. 3–4; physics notes §9):
//! the thesis's two-layer ring and sphere, and any closed OBJ surface.
//!
//! # Layout
//! A body is an *outer* closed surface and, for two layers, an *inner* surface of
//! the same topology (inner particle i sits under outer particle i). Particles are
//! numbered outer layer first, then inner layer: outer i = first + i, inner i =
//! first + n + i. Springs (each kind with its own stiffness and damping, any kind
//! can be switched off):
//!
//! | kind | joins | count |
//! |---|---|---|
//! | `structural` | both ends of every surface edge, on each layer | 2E (E for one layer) |
//! | `radius` | inner i – outer i | n |
//! | `shear-left` | inner i – outer j for every edge (i, j) | E |
//! | `shear-right` | inner j – outer i for every edge (i, j) | E |
//!
//! A [`Pressure`] term fills the outer surface with gas (nRT = `pressure`) and,
//! optionally, the inner surface (`inner_pressure`). For two layers a
//! [`Containment`] constraint keeps the inner particles inside the outer layer.
//! The body's topology holds only the outer surface (triangles, or the ring's
//! loop), so frames draw the skin, metrics report the outer volume (area for a
//! ring) and only outer particles can be picked by a drag — as in the thesis,
//! which drags the outer layer only (§4.4). Colliders should act on outer particles
//! only (§4.6): set [`crate::constraint::Collider::only`] from
//! [`TwoLayerHandle::outer_mask`] (the scene layer does this).
//!
//! # Defaults and units
//! The defaults are the thesis's (004 §7.2.1): KS = 800 N/m, KD = 15 N s/m for
//! structural springs, RKS = 700 N/m, RKD = 50 N s/m for radius and shear springs,
//! PRESSURE (nRT) = 20 J, MASS = 1 kg per particle; the mouse spring's MKS and MKD
//! are [`crate::force::pointer`]'s defaults. The thesis gives no units. Its springs
//! and masses set time scales only (√(KS/MASS) = 28 rad/s, a 0.22 s period, and
//! damping ratios 0.4 and 1.3 for one spring between two particles), which are
//! those of a soft toy in seconds whatever the length unit. Length enters through
//! two ratios: the sag of a spring under one particle's weight against the body's
//! size, MASS·g / (KS·R), and the gas's push against the springs, nRT / (KS·R²)
//! (a free pressurised octahedron settles at R(R − R₀) = nRT/(8 KS), see the
//! tests). At R = 0.5 m they are 0.025 and 0.1: the gas inflates a free sphere by
//! about 1 %, and the thesis's two-layer sphere dropped on a floor settles at 96 %
//! of its volume and 81 % of its height (`wobble experiment twolayer-collapse`) — a
//! wobbly ball that keeps its shape, as the thesis shows. At R = 5 cm the same gas
//! would inflate the octahedron by 70 % and every spring would sag under its
//! particle's weight by a quarter of the radius; at R = 5 m the gas would do
//! nothing (nRT / (KS·R²) = 10⁻³). So the SI
//! defaults place the thesis's numbers on half-metre bodies: [`DEFAULT_RADIUS`] =
//! 0.5 m and an inner layer at [`DEFAULT_INNER_RATIO`] = 0.8 of it (the thesis's
//! ratio is lost in extraction). One caveat: a ring (2D) carries its whole weight on
//! a line of contact, and at this scale 20 J holds it at a third of its area;
//! `scenes/ring.toml` uses 100 J.
//!
//! # Normalising spring forces by spring count (004 §3.5.3)
//! On the uniform sphere the six octahedron vertices join four edges and every
//! other vertex six, so the same pressure pushes the kernel vertices out further.
//! The thesis suggests multiplying the spring force accumulated at a particle by
//! 1/n, n its spring count, but does not use it. Scaling the *sum* at one end and
//! not at the other would break Newton's third law (momentum would drift), so with
//! [`TwoLayerParams::normalise`] each spring's stiffness and damping are scaled at
//! build time by n̄ · 2/(n_a + n_b): the thesis's 1/n when both ends have the same
//! count, symmetric in the ends, and multiplied by the body's mean count n̄ so that
//! the given stiffness stays the stiffness of a typical spring (the thesis's
//! literal 1/n would also soften the whole body by n̄ ≈ 6 to 13). Live parameter
//! changes ([`crate::world::World::set_parameter`]) set one stiffness for every
//! spring of a kind and so drop the scaling.

use std::ops::Range;

use glam::DVec3;

use super::mesh_check;
use super::obj::ObjMesh;
use super::sphere::SphereMesh;
use super::{BuildError, WorldBuilder, check, check_count, check_mass, check_spring};
use crate::constraint::Containment;
use crate::constraint::containment::DEFAULT_MARGIN_FRACTION;
use crate::contact::narrow::point_triangle;
use crate::force::bending::Bending;
use crate::force::pressure::{ClosedSurface, DEFAULT_PRESSURE, PressureSurface};
use crate::force::{Pressure, SpringKind, SpringParams};
use crate::model::Vec3s;

/// Structural spring stiffness, N/m (004 §7.2.1, KS).
pub const DEFAULT_STRUCTURAL_STIFFNESS: f64 = 800.0;
/// Structural spring damping, N s/m (004 §7.2.1, KD).
pub const DEFAULT_STRUCTURAL_DAMPING: f64 = 15.0;
/// Radius and shear spring stiffness, N/m (004 §7.2.1, RKS).
pub const DEFAULT_RADIUS_STIFFNESS: f64 = 700.0;
/// Radius and shear spring damping, N s/m (004 §7.2.1, RKD).
pub const DEFAULT_RADIUS_DAMPING: f64 = 50.0;
/// Mass of each particle, kg (004 §7.2.1, MASS).
pub const DEFAULT_PARTICLE_MASS: f64 = 1.0;
/// Outer radius of rings and spheres, m (see the module docs for the scale).
pub const DEFAULT_RADIUS: f64 = 0.5;
/// Inner radius as a fraction of the outer radius (our choice; the thesis's is
/// lost).
pub const DEFAULT_INNER_RATIO: f64 = 0.8;

/// Materials, masses and gas of a one- or two-layer body.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TwoLayerParams {
    /// Mass of each outer particle, kg (default [`DEFAULT_PARTICLE_MASS`]).
    pub outer_mass: f64,
    /// Mass of each inner particle, kg (default [`DEFAULT_PARTICLE_MASS`]).
    pub inner_mass: f64,
    /// If set, the mass of each inner particle below the body's centre (at build
    /// time), kg: the thesis's balloon half filled with liquid (004 §8.1).
    pub inner_bottom_mass: Option<f64>,
    /// Edge springs on each layer (default KS, KD); `None` for none.
    pub structural: Option<SpringParams>,
    /// Inner i – outer i springs (default RKS, RKD).
    pub radius: Option<SpringParams>,
    /// Inner i – outer j springs per edge (i, j) (default RKS, RKD).
    pub shear_left: Option<SpringParams>,
    /// Inner j – outer i springs per edge (i, j) (default RKS, RKD).
    pub shear_right: Option<SpringParams>,
    /// Gas constant nRT of the outer surface, J (default [`DEFAULT_PRESSURE`]; 0: no
    /// gas).
    pub pressure: f64,
    /// Gas constant nRT of the inner surface, J (default 0: none).
    pub inner_pressure: f64,
    /// Scale each spring by the spring counts of its ends (module docs; default
    /// false, as in the thesis's own runs).
    pub normalise: bool,
    /// Keep inner particles inside the outer layer with this margin, as a fraction
    /// of the layer gap (default [`DEFAULT_MARGIN_FRACTION`]); `None`: no
    /// containment.
    pub containment: Option<f64>,
    /// Collision radius of every particle, m (default 0).
    pub particle_radius: f64,
    /// Material values instead of per-particle ones (module docs, "Materials"):
    /// when set, masses, springs and gas come from it and the per-particle fields
    /// above (masses, spring stiffness and damping, `pressure`) are not used.
    pub material: Option<Material>,
}

/// Resolution-independent materials of a body with a triangle surface; every
/// field left `None` takes the default the module docs derive ("Materials").
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Material {
    /// Total mass, kg (default: `density` × enclosed volume).
    pub mass: Option<f64>,
    /// Density of the enclosed volume, kg/m³, when `mass` is not given (default
    /// [`DEFAULT_DENSITY`]).
    pub density: Option<f64>,
    /// Gas over-pressure at the built shape, Pa.
    pub over_pressure: Option<f64>,
    /// Membrane stiffness of each layer (Young's modulus × skin thickness), N/m.
    pub membrane_stiffness: Option<f64>,
    /// Membrane viscosity, N s/m.
    pub membrane_damping: Option<f64>,
    /// Young's modulus of the lining between the layers, Pa.
    pub layer_stiffness: Option<f64>,
    /// Viscosity of the lining, Pa s.
    pub layer_damping: Option<f64>,
    /// Bending modulus of the outer surface, J (dihedral-angle hinges,
    /// [`crate::force::bending`]).
    pub bending_stiffness: Option<f64>,
    /// Bending viscosity, J s.
    pub bending_damping: Option<f64>,
}

/// Density of a body built from material values when neither mass nor density is
/// given, kg/m³: a soft foam toy.
pub const DEFAULT_DENSITY: f64 = 100.0;
/// Default over-pressure as a multiple of the weight over the body's cross-section
/// π R² (R the radius of the sphere of equal volume, weight at standard gravity
/// 9.81 m/s²): the gas then carries the weight on a contact patch a tenth of the
/// cross-section.
pub const DEFAULT_SUPPORT: f64 = 10.0;
/// Default pre-strain of the outer membrane at the built shape: the membrane
/// stiffness is chosen so that the tension σ₀ = p R / 2 that holds the gas
/// stretches it by this much.
///
/// It sets how a resting body shares its weight between the gas and its skin,
/// and with that whether the mesh resolves the answer. Pressed by a load F, a
/// pressurised shell gives way with two springs in parallel: the gas, which
/// carries the load on a flat patch (stiffness about 2π p R), and shell action,
/// bending and stretching together (Reissner's 8 √(κ E_s) / R), confined to a
/// ring of width ℓ = (κ R² / E_s)^¼ around the contact. With κ = σ₀ (f R)²
/// ([`DEFAULT_BENDING_LENGTH`] f) and E_s = σ₀ / (1.5 ε₀), ℓ = R √f (1.5 ε₀)^¼.
/// At ε₀ = 1 % the skin carried 57 % of the weight within ℓ = 0.18 R, one and a
/// half edges of a level-4 sphere, and the settled sag moved by 8 % between
/// levels 4 and 5 (15 % between the two bunnies); at 10 % it carries 29 % within
/// ℓ = 0.31 R, and the sag moves by 3.8 % (sphere) and 1.1 % (bunny).
/// Measured sags and the sweep (1, 5, 10, 20 %): `docs/architecture.md`,
/// "Resolution-independent sag".
pub const DEFAULT_PRESTRAIN: f64 = 0.1;
/// Default strain of the lining under the over-pressure: layer stiffness = p / it.
pub const DEFAULT_LINING_STRAIN: f64 = 0.02;
/// Default bending length as a fraction of the radius R: the bending modulus is
/// κ = σ₀ (f R)² with σ₀ = p R / 2 the membrane's tension, so that bending, not
/// the gas, decides the shape of features smaller than f R (a facet would
/// otherwise bulge into a cap of the body's own radius, and a dent pop out).
pub const DEFAULT_BENDING_LENGTH: f64 = 0.25;
/// Default relaxation time of membrane and lining, s: damping = stiffness × it
/// (a Kelvin–Voigt material; modes faster than 1/τ are overdamped).
pub const DEFAULT_RELAXATION_TIME: f64 = 1e-3;
/// Largest pre-strain accepted when a membrane stiffness is given.
const MAX_PRESTRAIN: f64 = 0.5;
/// Standard gravity, m/s², for the default over-pressure.
const STANDARD_GRAVITY: f64 = 9.81;

/// The values a [`Material`] resolved to for one body, for `wobble info` and
/// tests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResolvedMaterial {
    /// Total mass, kg.
    pub mass: f64,
    /// Over-pressure, Pa.
    pub over_pressure: f64,
    /// Membrane stiffness, N/m.
    pub membrane_stiffness: f64,
    /// Membrane viscosity, N s/m.
    pub membrane_damping: f64,
    /// Lining modulus, Pa.
    pub layer_stiffness: f64,
    /// Lining viscosity, Pa s.
    pub layer_damping: f64,
    /// Bending modulus, J.
    pub bending_stiffness: f64,
    /// Bending viscosity, J s.
    pub bending_damping: f64,
    /// Strain of the outer membrane's springs at the built shape, where their
    /// tension holds the gas.
    pub prestrain: f64,
    /// Radius of the sphere of the outer surface's volume, m.
    pub radius: f64,
    /// Outer volume, m³.
    pub volume: f64,
}

impl Default for TwoLayerParams {
    fn default() -> Self {
        let radial = SpringParams::linear(DEFAULT_RADIUS_STIFFNESS, DEFAULT_RADIUS_DAMPING);
        Self {
            outer_mass: DEFAULT_PARTICLE_MASS,
            inner_mass: DEFAULT_PARTICLE_MASS,
            inner_bottom_mass: None,
            structural: Some(SpringParams::linear(DEFAULT_STRUCTURAL_STIFFNESS, DEFAULT_STRUCTURAL_DAMPING)),
            radius: Some(radial),
            shear_left: Some(radial),
            shear_right: Some(radial),
            pressure: DEFAULT_PRESSURE,
            inner_pressure: 0.0,
            normalise: false,
            containment: Some(DEFAULT_MARGIN_FRACTION),
            particle_radius: 0.0,
            material: None,
        }
    }
}

/// The geometry of a layered body before it is built: outer positions, optional
/// inner positions (same count, same topology) and the closed surface in local
/// indices (0..n).
#[derive(Clone, Debug, PartialEq)]
pub struct Layers {
    /// Outer particle positions, m.
    pub outer: Vec<DVec3>,
    /// Inner particle positions, m (`None`: one layer).
    pub inner: Option<Vec<DVec3>>,
    /// The surface over local indices, wound outward.
    pub surface: ClosedSurface,
}

/// Where a layered body's particles went.
#[derive(Clone, Debug, PartialEq)]
pub struct TwoLayerHandle {
    /// Outer particles.
    pub outer: Range<usize>,
    /// Inner particles (empty for one layer).
    pub inner: Range<usize>,
    /// The material values used, when built from a [`Material`].
    pub material: Option<ResolvedMaterial>,
}

impl TwoLayerHandle {
    /// A mask over `n` particles, true for every particle except this body's inner
    /// ones: what colliders should act on (004 §4.6).
    #[must_use]
    pub fn outer_mask(&self, n: usize) -> Vec<bool> {
        let mut m = vec![true; n];
        m[self.inner.clone()].fill(false);
        m
    }
}

fn check_params(name: &str, p: &TwoLayerParams) -> Result<(), BuildError> {
    check_mass(name, "outer_mass", p.outer_mass)?;
    check_mass(name, "inner_mass", p.inner_mass)?;
    if let Some(m) = p.inner_bottom_mass {
        check_mass(name, "inner_bottom_mass", m)?;
    }
    for (what, s) in [
        ("structural", p.structural),
        ("radius", p.radius),
        ("shear-left", p.shear_left),
        ("shear-right", p.shear_right),
    ] {
        if let Some(s) = s {
            check_spring(name, what, &s)?;
        }
    }
    for (what, v) in [("pressure", p.pressure), ("inner_pressure", p.inner_pressure)] {
        check(v.is_finite() && v >= 0.0, name, what, v, "must be finite and ≥ 0 (nRT, J)")?;
    }
    if let Some(f) = p.containment {
        check((0.0..1.0).contains(&f), name, "containment", f, "the margin fraction must lie in [0, 1)")?;
    }
    check(
        p.particle_radius.is_finite() && p.particle_radius >= 0.0,
        name,
        "particle_radius",
        p.particle_radius,
        "must be finite and ≥ 0 (m)",
    )
}

/// Builds `layers` as body `name` of type `kind` (see the module docs); returns
/// where its particles went.
pub fn build_layers(
    b: &mut WorldBuilder,
    name: &str,
    kind: &str,
    layers: &Layers,
    p: &TwoLayerParams,
) -> Result<TwoLayerHandle, BuildError> {
    check_params(name, p)?;
    let n = layers.outer.len();
    check(n >= 3, name, "particles", n, "a closed surface needs at least 3 particles")?;
    check_count(name, "particles", &[n, if layers.inner.is_some() { 2 } else { 1 }])?;
    if let Some(inner) = &layers.inner {
        check(inner.len() == n, name, "inner", inner.len(), "the inner layer must have one particle per outer one")?;
    }
    let points = layers.outer.iter().chain(layers.inner.iter().flatten());
    check(points.clone().all(|p| p.is_finite()), name, "origin", "positions", "every position must be finite")?;
    layers.surface.check_closed().map_err(|e| BuildError::Invalid {
        body: name.to_owned(),
        what: "mesh",
        value: e.to_string(),
        why: "a pressure body needs a closed, consistently wound surface",
    })?;
    let (first, tri_first, line_first) = (b.particle_count(), b.topology.triangles.len(), b.topology.lines.len());
    let outer = first..first + n;
    let inner = if layers.inner.is_some() { first + n..first + 2 * n } else { first + n..first + n };
    let edges: Vec<[u32; 2]> = match &layers.surface {
        ClosedSurface::Triangles(t) => super::mesh::edges(t).0,
        ClosedSurface::Loop(l) => l.clone(),
    };
    let material = match (&p.material, &layers.surface) {
        (None, _) => None,
        (Some(m), ClosedSurface::Triangles(t)) => Some(MaterialLayout::new(name, m, layers, t, &edges)?),
        (Some(_), ClosedSurface::Loop(_)) => {
            return Err(BuildError::Invalid {
                body: name.to_owned(),
                what: "mass",
                value: "material values".into(),
                why: "need a triangle surface; a ring takes per-particle values",
            });
        }
    };
    // Particles: outer layer, then inner layer.
    for (k, x) in layers.outer.iter().enumerate() {
        let m = material.as_ref().map_or(p.outer_mass, |l| l.outer_masses[k]);
        b.add_particle(*x, DVec3::ZERO, m, p.particle_radius);
    }
    if let Some(xs) = &layers.inner {
        let centre_y = xs.iter().map(|x| x.y).sum::<f64>() / n as f64;
        for (k, x) in xs.iter().enumerate() {
            let m = match (&material, p.inner_bottom_mass) {
                (Some(l), _) => l.inner_masses[k],
                (None, Some(m)) if x.y < centre_y => m,
                (None, _) => p.inner_mass,
            };
            b.add_particle(*x, DVec3::ZERO, m, p.particle_radius);
        }
    }
    let shift = |s: &ClosedSurface, by: usize| -> ClosedSurface {
        let by = by as u32;
        match s {
            ClosedSurface::Triangles(t) => ClosedSurface::Triangles(t.iter().map(|f| f.map(|i| i + by)).collect()),
            ClosedSurface::Loop(l) => ClosedSurface::Loop(l.iter().map(|e| e.map(|i| i + by)).collect()),
        }
    };
    let outer_surface = shift(&layers.surface, outer.start);
    let x = b.state.x.clone();
    for (what, range) in [("outer layer", &outer), ("inner layer", &inner)] {
        if range.is_empty() {
            continue;
        }
        let v = shift(&layers.surface, range.start).measure(&x);
        check(v > 0.0, name, "mesh", what, "encloses no volume (is it wound inward or flat?)")?;
    }
    // Springs.
    let mut springs: Vec<(usize, usize, SpringParams, SpringKind)> = Vec::new();
    let (o, i) = (|k: u32| outer.start + k as usize, |k: u32| inner.start + k as usize);
    if let Some(layout) = &material {
        springs = layout.springs(&edges, !inner.is_empty(), outer.start, inner.start);
    } else if let Some(s) = p.structural {
        springs.extend(edges.iter().map(|&[a, c]| (o(a), o(c), s, SpringKind::Structural)));
        if !inner.is_empty() {
            springs.extend(edges.iter().map(|&[a, c]| (i(a), i(c), s, SpringKind::Structural)));
        }
    }
    if !inner.is_empty() && material.is_none() {
        if let Some(s) = p.radius {
            springs.extend((0..n as u32).map(|k| (i(k), o(k), s, SpringKind::Radius)));
        }
        if let Some(s) = p.shear_left {
            springs.extend(edges.iter().map(|&[a, c]| (i(a), o(c), s, SpringKind::ShearLeft)));
        }
        if let Some(s) = p.shear_right {
            springs.extend(edges.iter().map(|&[a, c]| (i(c), o(a), s, SpringKind::ShearRight)));
        }
    }
    if p.normalise {
        normalise(&mut springs, first, b.particle_count());
    }
    let group = b.springs.group(name);
    let prestrain = material.as_ref().map_or(0.0, |l| l.resolved.prestrain);
    for (a, c, s, kind) in springs {
        check(x.get(a) != x.get(c), name, "mesh", "spring", "joins two particles at the same position")?;
        let mut rest = x.get(a).distance(x.get(c));
        if kind == SpringKind::Structural && outer.contains(&a) {
            // The outer membrane holds the gas at the built shape (module docs).
            rest *= 1.0 - prestrain;
        }
        b.springs.push(a, c, rest, s, kind, group);
    }
    let nrt = material.as_ref().map_or(p.pressure, |l| l.resolved.over_pressure * l.resolved.volume);
    // Gas.
    let surface_err = |e: crate::force::pressure::SurfaceError| BuildError::Invalid {
        body: name.to_owned(),
        what: "mesh",
        value: e.to_string(),
        why: "a pressure body needs a closed, consistently wound surface",
    };
    let mut gas = vec![PressureSurface::new("outer", outer_surface.clone(), nrt, &x).map_err(surface_err)?];
    if !inner.is_empty() {
        gas.push(
            PressureSurface::new("inner", shift(&layers.surface, inner.start), p.inner_pressure, &x)
                .map_err(surface_err)?,
        );
    }
    b.add_force(Pressure::new(name, gas));
    if let (Some(l), ClosedSurface::Triangles(t)) = (&material, &outer_surface)
        && l.resolved.bending_stiffness + l.resolved.bending_damping > 0.0
    {
        let r = &l.resolved;
        b.add_force(Bending::new(name, t, &x, r.bending_stiffness, r.bending_damping));
    }
    if let (Some(fraction), false) = (p.containment, inner.is_empty()) {
        let pairs: Vec<(usize, usize)> = (0..n).map(|k| (inner.start + k, outer.start + k)).collect();
        let c = Containment::new(&format!("{name}-containment"), &outer_surface, &pairs, fraction, &x)
            .map_err(surface_err)?;
        b.add_constraint(c);
    }
    // Topology: the skin only.
    match outer_surface {
        ClosedSurface::Triangles(t) => b.topology.triangles.extend(t),
        ClosedSurface::Loop(l) => b.topology.lines.extend(l),
    }
    b.add_body(name, kind, first, tri_first, line_first, true)?;
    Ok(TwoLayerHandle { outer, inner, material: material.map(|l| l.resolved) })
}

/// Masses and spring parameters of a layered body from its [`Material`].
struct MaterialLayout {
    resolved: ResolvedMaterial,
    outer_masses: Vec<f64>,
    inner_masses: Vec<f64>,
    /// Per edge: A₁ + A₂ on the outer and inner layer, m².
    outer_edge_area: Vec<f64>,
    inner_edge_area: Vec<f64>,
    /// Per vertex: a third of the areas of its outer triangles, m².
    outer_vertex_area: Vec<f64>,
    outer: Vec<DVec3>,
    inner: Vec<DVec3>,
}

/// A third of every triangle's area at each of its vertices, and A₁ + A₂ (the
/// areas of the two triangles on each edge) per edge of `edges`.
fn vertex_and_edge_areas(x: &[DVec3], tris: &[[u32; 3]], edges: &[[u32; 2]]) -> (Vec<f64>, Vec<f64>) {
    let index: std::collections::HashMap<(u32, u32), usize> =
        edges.iter().enumerate().map(|(k, &[a, b])| ((a.min(b), a.max(b)), k)).collect();
    let (mut vertex, mut edge) = (vec![0.0; x.len()], vec![0.0; edges.len()]);
    for t in tris {
        let [a, b, c] = t.map(|i| x[i as usize]);
        let area = 0.5 * (b - a).cross(c - a).length();
        for k in 0..3 {
            vertex[t[k] as usize] += area / 3.0;
            let (p, q) = (t[k], t[(k + 1) % 3]);
            edge[index[&(p.min(q), p.max(q))]] += area;
        }
    }
    (vertex, edge)
}

impl MaterialLayout {
    fn new(
        name: &str,
        m: &Material,
        layers: &Layers,
        tris: &[[u32; 3]],
        edges: &[[u32; 2]],
    ) -> Result<Self, BuildError> {
        let positive = |what: &'static str, v: Option<f64>| match v {
            Some(v) => check(v.is_finite() && v > 0.0, name, what, v, "must be positive and finite").map(|()| Some(v)),
            None => Ok(None),
        };
        let non_negative = |what: &'static str, v: Option<f64>| match v {
            Some(v) => check(v.is_finite() && v >= 0.0, name, what, v, "must be finite and ≥ 0").map(|()| Some(v)),
            None => Ok(None),
        };
        let surface = ClosedSurface::Triangles(tris.to_vec());
        let volume = surface.measure(&Vec3s::from_vecs(&layers.outer));
        check(volume > 0.0, name, "mesh", volume, "the outer surface must enclose a volume")?;
        let radius = (3.0 * volume / (4.0 * std::f64::consts::PI)).cbrt();
        let cross_section = std::f64::consts::PI * radius * radius;
        let mass = match positive("mass", m.mass)? {
            Some(mass) => mass,
            None => positive("density", m.density)?.unwrap_or(DEFAULT_DENSITY) * volume,
        };
        let supporting = DEFAULT_SUPPORT * mass * STANDARD_GRAVITY / cross_section;
        let over_pressure = non_negative("over_pressure", m.over_pressure)?.unwrap_or(supporting);
        // The membrane and lining defaults follow the pressure they hold (at least
        // the default one, so a body without gas is not left without stiffness).
        let design = over_pressure.max(supporting);
        let membrane_stiffness = positive("membrane_stiffness", m.membrane_stiffness)?
            .unwrap_or(design * radius / 2.0 / (1.5 * DEFAULT_PRESTRAIN));
        // The tension σ₀ = p R / 2 that holds the gas in a sphere of the body's
        // volume, carried by the outer membrane: k (L − L₀) = σ₀ (A₁ + A₂) / (1.5 L)
        // for every spring, i.e. L₀ = L (1 − ε₀) with ε₀ = σ₀ / (1.5 E_s).
        let prestrain = over_pressure * radius / 2.0 / (1.5 * membrane_stiffness);
        check(
            prestrain <= MAX_PRESTRAIN,
            name,
            "membrane_stiffness",
            membrane_stiffness,
            "is too soft for the over-pressure: holding the gas would stretch the membrane by more than 50 %",
        )?;
        let layer_stiffness = positive("layer_stiffness", m.layer_stiffness)?.unwrap_or(design / DEFAULT_LINING_STRAIN);
        let membrane_damping = non_negative("membrane_damping", m.membrane_damping)?
            .unwrap_or(DEFAULT_RELAXATION_TIME * membrane_stiffness);
        let layer_damping =
            non_negative("layer_damping", m.layer_damping)?.unwrap_or(DEFAULT_RELAXATION_TIME * layer_stiffness);
        let bending_stiffness = non_negative("bending_stiffness", m.bending_stiffness)?
            .unwrap_or(design * radius / 2.0 * (DEFAULT_BENDING_LENGTH * radius).powi(2));
        let bending_damping =
            non_negative("bending_damping", m.bending_damping)?.unwrap_or(DEFAULT_RELAXATION_TIME * bending_stiffness);
        let (outer_vertex_area, outer_edge_area) = vertex_and_edge_areas(&layers.outer, tris, edges);
        let inner = layers.inner.clone().unwrap_or_default();
        let (inner_vertex_area, inner_edge_area) =
            if inner.is_empty() { (Vec::new(), Vec::new()) } else { vertex_and_edge_areas(&inner, tris, edges) };
        let (a_out, a_in) = (outer_vertex_area.iter().sum::<f64>(), inner_vertex_area.iter().sum::<f64>());
        // Mass by the outer area around each vertex (the column of skin and lining
        // under it), split between the vertex's outer and inner particle as the
        // layers' areas are: an inner particle where the inner layer bunches up
        // (a tight convex tip) is not made lighter than its column.
        let per_area = mass / a_out;
        let outer_share = a_out / (a_out + a_in);
        let outer_masses = outer_vertex_area.iter().map(|a| a * per_area * outer_share).collect();
        let inner_masses = if inner.is_empty() {
            Vec::new()
        } else {
            outer_vertex_area.iter().map(|a| a * per_area * (1.0 - outer_share)).collect()
        };
        Ok(Self {
            resolved: ResolvedMaterial {
                mass,
                over_pressure,
                membrane_stiffness,
                membrane_damping,
                layer_stiffness,
                layer_damping,
                bending_stiffness,
                bending_damping,
                prestrain,
                radius,
                volume,
            },
            outer_masses,
            inner_masses,
            outer_edge_area,
            inner_edge_area,
            outer_vertex_area,
            outer: layers.outer.clone(),
            inner,
        })
    }

    /// Every spring: membrane springs k = E_s (A₁ + A₂) / L² on each layer, lining
    /// springs k = E_l a / L (radius: the vertex's area; each of an edge's two shear
    /// springs: a sixth of A₁ + A₂), dampings likewise.
    fn springs(
        &self,
        edges: &[[u32; 2]],
        two: bool,
        outer_start: usize,
        inner_start: usize,
    ) -> Vec<(usize, usize, SpringParams, SpringKind)> {
        let r = &self.resolved;
        let (o, i) = (|k: u32| outer_start + k as usize, |k: u32| inner_start + k as usize);
        let membrane = |area: f64, len: f64| {
            let w = area / (len * len);
            SpringParams::linear(r.membrane_stiffness * w, r.membrane_damping * w)
        };
        // A lining thinned to fit a crease keeps the stiffness per area of the
        // body's typical (median) gap: thin spots would otherwise be the stiffest
        // springs of the body by far and set its time scale.
        let gap = {
            let mut g: Vec<f64> = self.outer.iter().zip(&self.inner).map(|(o, i)| o.distance(*i)).collect();
            g.sort_by(f64::total_cmp);
            g.get(g.len() / 2).copied().unwrap_or(0.0)
        };
        let lining = |area: f64, len: f64, typical: f64| {
            let l = len.max(typical);
            SpringParams::linear(r.layer_stiffness * area / l, r.layer_damping * area / l)
        };
        let mut out = Vec::new();
        for (e, &[a, c]) in edges.iter().enumerate() {
            let len = self.outer[a as usize].distance(self.outer[c as usize]);
            out.push((o(a), o(c), membrane(self.outer_edge_area[e], len), SpringKind::Structural));
        }
        if !two {
            return out;
        }
        for (e, &[a, c]) in edges.iter().enumerate() {
            let len = self.inner[a as usize].distance(self.inner[c as usize]);
            out.push((i(a), i(c), membrane(self.inner_edge_area[e], len), SpringKind::Structural));
        }
        for k in 0..self.outer.len() as u32 {
            let len = self.inner[k as usize].distance(self.outer[k as usize]);
            out.push((i(k), o(k), lining(self.outer_vertex_area[k as usize], len, gap), SpringKind::Radius));
        }
        for (e, &[a, c]) in edges.iter().enumerate() {
            let share = self.outer_edge_area[e] / 6.0;
            let edge = self.outer[a as usize].distance(self.outer[c as usize]);
            let typical = (edge * edge + gap * gap).sqrt();
            let left = self.inner[a as usize].distance(self.outer[c as usize]);
            out.push((i(a), o(c), lining(share, left, typical), SpringKind::ShearLeft));
            let right = self.inner[c as usize].distance(self.outer[a as usize]);
            out.push((i(c), o(a), lining(share, right, typical), SpringKind::ShearRight));
        }
        out
    }
}

/// Scales each spring's stiffness and damping by n̄ · 2/(n_a + n_b) (module docs),
/// with n the spring count of each particle of `first..end` in `springs`.
fn normalise(springs: &mut [(usize, usize, SpringParams, SpringKind)], first: usize, end: usize) {
    let mut count = vec![0usize; end - first];
    for &(a, c, _, _) in springs.iter() {
        count[a - first] += 1;
        count[c - first] += 1;
    }
    let used: Vec<f64> = count.iter().filter(|&&k| k > 0).map(|&k| k as f64).collect();
    if used.is_empty() {
        return;
    }
    let mean = used.iter().sum::<f64>() / used.len() as f64;
    for (a, c, s, _) in springs.iter_mut() {
        let f = mean * 2.0 / (count[*a - first] + count[*c - first]) as f64;
        s.stiffness *= f;
        s.damping *= f;
    }
}

/// The thesis's sphere (004 §3.5): uniform (subdivided octahedron) or non-uniform
/// (latitude–longitude), one or two layers, filled with gas.
#[derive(Clone, Debug, PartialEq)]
pub struct PressureSphere {
    /// Centre, m.
    pub center: DVec3,
    /// Outer radius, m (default [`DEFAULT_RADIUS`]).
    pub radius: f64,
    /// Inner radius, m (default [`DEFAULT_INNER_RATIO`] × radius); `None`: one layer.
    pub inner_radius: Option<f64>,
    /// Triangulation (default uniform level 1, the thesis's 3D example, §7.1.3).
    pub mesh: SphereMesh,
    /// Materials and gas.
    pub params: TwoLayerParams,
}

impl Default for PressureSphere {
    fn default() -> Self {
        Self {
            center: DVec3::ZERO,
            radius: DEFAULT_RADIUS,
            inner_radius: Some(DEFAULT_INNER_RATIO * DEFAULT_RADIUS),
            mesh: SphereMesh::Uniform { level: 1 },
            params: TwoLayerParams::default(),
        }
    }
}

impl PressureSphere {
    /// Adds the sphere as body `name` (type `pressure-sphere`).
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<TwoLayerHandle, BuildError> {
        self.mesh.validate(name)?;
        check(self.radius.is_finite() && self.radius > 0.0, name, "radius", self.radius, "must be positive (m)")?;
        if let Some(r) = self.inner_radius {
            check(
                r.is_finite() && r > 0.0 && r < self.radius,
                name,
                "inner_radius",
                r,
                "must be positive and below `radius` (m)",
            )?;
        }
        let (dirs, tris) = self.mesh.generate();
        let layers = Layers {
            outer: dirs.iter().map(|d| self.center + *d * self.radius).collect(),
            inner: self.inner_radius.map(|r| dirs.iter().map(|d| self.center + *d * r).collect()),
            surface: ClosedSurface::Triangles(tris),
        };
        build_layers(b, name, "pressure-sphere", &layers, &self.params)
    }
}

/// Any closed OBJ surface as a pressure body, one or two layers; the inner layer
/// is the outer one moved inward along its vertex normals (angle-weighted) by
/// `thickness`.
#[derive(Clone, Debug, PartialEq)]
pub struct PressureMesh {
    /// The mesh (closed; wound either way: it is turned outward).
    pub mesh: ObjMesh,
    /// Uniform scale applied to the file's coordinates.
    pub scale: f64,
    /// Translation applied after scaling, m.
    pub translate: DVec3,
    /// Inward offset of the inner layer, m; `None`: one layer.
    pub thickness: Option<f64>,
    /// Let the lining thin out where an offset by the full `thickness` would fold
    /// the inner layer over (sharp concave creases), instead of refusing the
    /// thickness: see [`fitted_offsets`]. The scene layer sets it for its default
    /// thickness.
    pub fit_thickness: bool,
    /// Materials and gas.
    pub params: TwoLayerParams,
}

/// Per-vertex inward offsets along `normals`, each at most `d`, that neither fold
/// the inner layer nor leave it: starting from `d` everywhere, the vertices of
/// every face that turns against its outer face, and every inner vertex that
/// lies outside the outer surface or closer than a tenth of its offset to a face
/// not its own (thin parts such as ears, where the offset reaches the far side), have their
/// offsets cut by 30 %, until none is left (at most 40 rounds, after which the
/// offending vertices get no offset). Where the body is thick and smooth the
/// lining keeps the full thickness.
#[must_use]
pub fn fitted_offsets(outer: &[DVec3], normals: &[DVec3], tris: &[[u32; 3]], d: f64) -> Vec<f64> {
    let mut offsets = vec![d; outer.len()];
    let surface = ClosedSurface::Triangles(tris.to_vec());
    let skin = Vec3s::from_vecs(outer);
    let mut check = vec![true; outer.len()];
    for round in 0..=40 {
        let inner: Vec<DVec3> = outer.iter().zip(normals).zip(&offsets).map(|((x, n), o)| *x - *n * *o).collect();
        let mut bad = vec![false; outer.len()];
        for t in tris {
            let [a, b, c] = t.map(|i| outer[i as usize]);
            let [p, q, r] = t.map(|i| inner[i as usize]);
            if (b - a).cross(c - a).dot((q - p).cross(r - p)) <= 0.0 {
                for &i in t {
                    bad[i as usize] = true;
                }
            }
        }
        for (i, p) in inner.iter().enumerate() {
            if check[i] && !bad[i] {
                let clear = surface.winding_number(&skin, *p) > 0.5
                    && tris.iter().filter(|t| !t.contains(&(i as u32))).all(|t| {
                        let [a, b, c] = t.map(|k| outer[k as usize]);
                        point_triangle(*p, a, b, c).0.sqrt() >= 0.1 * offsets[i]
                    });
                bad[i] = !clear;
            }
        }
        if !bad.contains(&true) {
            break;
        }
        for (i, &b) in bad.iter().enumerate() {
            if b {
                offsets[i] = if round == 40 { 0.0 } else { offsets[i] * 0.7 };
            }
            // A vertex found clear stays clear while its offset does not grow.
            check[i] = b;
        }
    }
    offsets
}

/// Rounds of normal smoothing before fitted offsets.
const SMOOTHING_ROUNDS: usize = 30;

/// `normals` averaged with their neighbours' (over the edges of `tris`) `rounds`
/// times and renormalised: offset directions that spread apart at concave creases
/// instead of crossing. A normal that smoothing turned by more than 60° keeps its
/// own direction.
#[must_use]
pub fn smoothed_normals(normals: &[DVec3], tris: &[[u32; 3]], rounds: usize) -> Vec<DVec3> {
    let edges = super::mesh::edges(tris).0;
    let mut n = normals.to_vec();
    for _ in 0..rounds {
        let mut sum = n.clone();
        for &[a, b] in &edges {
            sum[a as usize] += n[b as usize];
            sum[b as usize] += n[a as usize];
        }
        n = sum.iter().map(|v| v.normalize_or_zero()).collect();
    }
    // Where smoothing turned a normal by more than 60° (thin protrusions), the
    // vertex's own normal is kept: the offset must still point into the body.
    n.iter().zip(normals).map(|(s, o)| if s.dot(*o) > 0.5 { *s } else { *o }).collect()
}

/// Angle-weighted unit vertex normals of outward-wound triangles.
#[must_use]
pub fn vertex_normals(x: &[DVec3], tris: &[[u32; 3]]) -> Vec<DVec3> {
    let mut n = vec![DVec3::ZERO; x.len()];
    for t in tris {
        let [a, b, c] = t.map(|i| x[i as usize]);
        let nf = (b - a).cross(c - a).normalize_or_zero();
        for (k, &i) in t.iter().enumerate() {
            let p = [a, b, c][k];
            let (e1, e2) = ([a, b, c][(k + 1) % 3] - p, [a, b, c][(k + 2) % 3] - p);
            n[i as usize] += e1.cross(e2).length().atan2(e1.dot(e2)) * nf;
        }
    }
    n.iter().map(|v| v.normalize_or_zero()).collect()
}

/// Whether moving `outer` inward along `normals` by `d` folds the inner layer:
/// an inner face turns against its outer face, or the layer passes the centre
/// (then it is inside out without any face turning, and its volume is negative or
/// above the outer one's).
fn offset_folds(outer: &[DVec3], normals: &[DVec3], tris: &[[u32; 3]], d: f64) -> bool {
    let inner: Vec<DVec3> = outer.iter().zip(normals).map(|(x, n)| *x - *n * d).collect();
    let folded = tris.iter().any(|t| {
        let [a, b, c] = t.map(|i| outer[i as usize]);
        let [p, q, r] = t.map(|i| inner[i as usize]);
        (b - a).cross(c - a).dot((q - p).cross(r - p)) <= 0.0
    });
    let surface = ClosedSurface::Triangles(tris.to_vec());
    let (v_inner, v_outer) = (surface.measure(&Vec3s::from_vecs(&inner)), surface.measure(&Vec3s::from_vecs(outer)));
    folded || !(v_inner > 0.0 && v_inner < v_outer)
}

/// The largest inward offset below `too_thick` that does not fold the inner
/// layer (bisection to 1 %), rounded down to two significant digits, for the
/// message that suggests it; 0 when even a tiny offset folds.
fn largest_fitting_offset(outer: &[DVec3], normals: &[DVec3], tris: &[[u32; 3]], too_thick: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, too_thick);
    while hi - lo > 0.01 * hi && hi > 1e-12 {
        let mid = 0.5 * (lo + hi);
        if offset_folds(outer, normals, tris, mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    if lo <= 0.0 {
        return 0.0;
    }
    let unit = 10f64.powf(lo.log10().floor() - 1.0);
    (lo / unit).floor() * unit
}

impl PressureMesh {
    /// Adds the mesh as body `name` (type `pressure-mesh`).
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<TwoLayerHandle, BuildError> {
        check(self.scale.is_finite() && self.scale > 0.0, name, "scale", self.scale, "must be positive")?;
        let used = {
            let mut u = vec![false; self.mesh.vertices.len()];
            for t in &self.mesh.triangles {
                for &i in t {
                    u[i as usize] = true;
                }
            }
            u
        };
        check(used.iter().all(|&u| u), name, "file", "vertices", "every vertex must belong to a face")?;
        // One consistent winding, outward; no non-manifold edge; closed.
        let mut mesh = self.mesh.clone();
        let mesh_error = |source| BuildError::Mesh { body: name.to_owned(), source };
        mesh_check::orient(&mut mesh).map_err(mesh_error)?;
        mesh_check::require_closed(&mesh).map_err(mesh_error)?;
        let outer: Vec<DVec3> = mesh.vertices.iter().map(|v| *v * self.scale + self.translate).collect();
        let mut tris = mesh.triangles;
        let surface = ClosedSurface::Triangles(tris.clone());
        if surface.measure(&Vec3s::from_vecs(&outer)) < 0.0 {
            // Several closed components, the larger one inside out.
            for t in &mut tris {
                t.swap(1, 2);
            }
        }
        let inner = match self.thickness {
            None => None,
            Some(d) => {
                check(d.is_finite() && d > 0.0, name, "thickness", d, "must be positive (m)")?;
                let mut normals = vertex_normals(&outer, &tris);
                if self.fit_thickness {
                    normals = smoothed_normals(&normals, &tris, SMOOTHING_ROUNDS);
                    let offsets = fitted_offsets(&outer, &normals, &tris, d);
                    let inner: Vec<DVec3> =
                        outer.iter().zip(&normals).zip(&offsets).map(|((x, n), o)| *x - *n * *o).collect();
                    check(
                        offsets.iter().all(|&o| o > 0.0),
                        name,
                        "thickness",
                        d,
                        "leaves no room for an inner layer at some vertex; use one layer",
                    )?;
                    Some(inner)
                } else if offset_folds(&outer, &normals, &tris, d) {
                    return Err(BuildError::Thickness {
                        body: name.to_owned(),
                        thickness: d,
                        fits: largest_fitting_offset(&outer, &normals, &tris, d),
                    });
                } else {
                    Some(outer.iter().zip(&normals).map(|(x, n)| *x - *n * d).collect())
                }
            }
        };
        let layers = Layers { outer, inner, surface: ClosedSurface::Triangles(tris) };
        build_layers(b, name, "pressure-mesh", &layers, &self.params)
    }
}
