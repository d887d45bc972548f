//! The numbers of contacts held as springs inside an implicit solve (see
//! [`crate::constraint`]'s "Constraints inside an implicit solve" and the contact
//! stage's module docs): stiffness, friction, the speed a spring's push gives, and
//! when a contact counts as touching. Colliders, rigid-body contact and the
//! contact stage share them.

/// Stiffness of the contact springs inside an implicit solve, as the multiple κ of
/// the contact's reduced mass over h² (k = κ m_r / h²; default 100; m_r is the
/// particle's mass against a collider). Raising it lets less penetration through (a
/// load F sinks in by F h² / (κ m_r)) and costs conjugate-gradient iterations (the
/// contact rows' diagonal grows by κ m_r).
pub const COUPLED_STIFFNESS: f64 = 100.0;

/// Penetration, as a fraction of the particle's radius (or of a contact's
/// distance), that the projection after an implicit step leaves to a contact the
/// solve held as a spring (default 0.5): within it the spring carries the load
/// with its penetration in the next solve; beyond it (a hard impact) the excess is
/// projected out as for a new contact.
pub const COUPLED_SLOP: f64 = 0.5;

/// Tangential speed, m/s, below which coupled contact friction acts as a viscous
/// damper that holds the contact (default 1 mm/s); above it the damper is weakened to
/// pass the Coulomb force μ k δ at the step's starting speed (lagged friction).
pub const COUPLED_STICK_SPEED: f64 = 1e-3;

/// Damping coefficient (N s/m) of the friction of a coupled contact between sides
/// of total inverse mass `w` (1/kg) in a step of `h` (s), with friction coefficient
/// `mu`, normal force `normal` (N) and starting tangential speed `slip` (m/s):
/// μ F / max(slip, [`COUPLED_STICK_SPEED`]), so that the force at that speed never
/// exceeds Coulomb's μ F, and at most κ m_r / h, so that friction adds no more to
/// the system matrix's diagonal than the normal spring does (h c ≤ κ m_r: a
/// sticking contact still loses all but 1/(1 + κ) of its slip in a step, and the
/// matrix keeps the conditioning the solver was measured with; uncapped, a cloth
/// resting on the floor got h c / m ≈ 4·10⁴ and a crumple's implicit solve
/// returned 10⁴ m/s).
/// `kappa` is the contact's κ ([`COUPLED_STIFFNESS`] for colliders and rigid bodies,
/// [`super::CONTACT_COUPLED_STIFFNESS`] between deformable surfaces).
#[must_use]
pub fn coupled_friction(kappa: f64, w: f64, h: f64, mu: f64, normal: f64, slip: f64) -> f64 {
    (mu * normal / slip.max(COUPLED_STICK_SPEED)).min(kappa / (w * h))
}

/// The separating normal speed (m/s) that a coupled spring's push out of a starting
/// penetration `depth` (m) gives in a step of `h` (s): implicit Euler moves a lone
/// particle on the spring by κ/(1 + κ) of the penetration. The projection after the
/// step takes back up to this much of a separating speed (a split impulse), so a
/// particle that starts inside a surface is put out of it without being launched.
#[must_use]
pub fn coupled_push_speed(kappa: f64, depth: f64, h: f64) -> f64 {
    kappa / (1.0 + kappa) * depth / h
}

/// Whether a contact at penetration `depth` (m; negative: apart) is held as a
/// spring in the next implicit solve: inside, or on the surface to round-off
/// relative to `scale` (m, the contact's size or position). A projection puts a
/// new contact exactly on the surface; it must count as touching there, or it
/// would alternate between held and free and be carried by its mass alone every
/// other step.
#[must_use]
pub fn coupled_touches(depth: f64, scale: f64) -> bool {
    depth >= -1e-9 * scale.abs().max(1e-9)
}

/// Stiffness (N/m) of a coupled contact spring of multiple `kappa` between sides of
/// total inverse mass `w` (1/kg) for a step of `h` (s): κ / (w h²).
#[must_use]
pub fn coupled_stiffness(kappa: f64, w: f64, h: f64) -> f64 {
    kappa / (w * h * h)
}
