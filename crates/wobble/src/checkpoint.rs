//! The mutable state of a [`crate::World`] as bytes, for checkpoints.
//!
//! [`crate::World::save_state`] writes everything that changes while a world steps
//! and changes what later steps compute; [`crate::World::restore_state`] puts it
//! into a world freshly built from the same scene, after which stepping continues
//! **bit for bit** as the original world would have. What is saved:
//!
//! - the clock (time, step count) and the stepping parameters;
//! - the particles' state (x, v, q, ω) and pin flags;
//! - the integrator's history: Verlet's previous and last-written positions and
//!   velocities and its last step; the sparse patterns of the implicit integrators
//!   (a pattern widened during the run holds blocks a fresh pattern would not, and
//!   its blocks take part in the sums);
//! - the drag spring (grab, cursor, constants) and each scripted drag's progress;
//! - the contact stage's pairs excluded at build time, frozen flags and totals;
//! - what each constraint carries between projections
//!   ([`crate::constraint::Constraint::save_state`]: rigid contacts' warm start);
//! - live parameters that differ from the built world's (set through
//!   [`crate::World::set_parameter`]).
//!
//! Scratch space is not saved: every step overwrites it before reading it. Whether
//! the list is complete is checked by tests that interrupt runs of every integrator
//! and model and compare the continued run with an uninterrupted one byte for byte.
//!
//! The encoding is little-endian, with lengths before sequences; it carries no
//! version or checksum of its own (the file around it does).

use glam::{DQuat, DVec3};

use crate::model::Vec3s;

/// Why saved state does not fit a world.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RestoreError {
    /// The bytes end before the state does.
    #[error("the saved state is cut short (while reading {0})")]
    Truncated(&'static str),
    /// The saved state is of a different world.
    #[error("the saved state does not fit this world: {what} is {saved} in the checkpoint but {here} here")]
    Mismatch {
        /// What differs.
        what: &'static str,
        /// Its value in the saved state.
        saved: String,
        /// Its value in this world.
        here: String,
    },
    /// Bytes are left after the state.
    #[error("the saved state has {0} bytes after its end")]
    Trailing(usize),
    /// A saved value is out of range.
    #[error("the saved state holds an invalid {0}")]
    Invalid(&'static str),
}

/// Appends values to a byte buffer.
#[derive(Debug, Default)]
pub struct StateWriter {
    buf: Vec<u8>,
}

impl StateWriter {
    /// An empty writer.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes written.
    #[must_use]
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// A byte.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// A flag.
    pub fn bool(&mut self, v: bool) {
        self.u8(u8::from(v));
    }

    /// A 64-bit count or index.
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A length or index.
    pub fn usize(&mut self, v: usize) {
        self.u64(v as u64);
    }

    /// A 32-bit value.
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A float, bit for bit (NaN payloads and signed zeros included).
    pub fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }

    /// A vector.
    pub fn vec3(&mut self, v: DVec3) {
        for c in v.to_array() {
            self.f64(c);
        }
    }

    /// A string (UTF-8, length first).
    pub fn str(&mut self, s: &str) {
        self.usize(s.len());
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// Floats, length first.
    pub fn f64s(&mut self, v: &[f64]) {
        self.usize(v.len());
        for &x in v {
            self.f64(x);
        }
    }

    /// Vectors in structure-of-arrays form, length first.
    pub fn vec3s(&mut self, v: &Vec3s) {
        self.usize(v.len());
        for c in v.components() {
            for &x in c {
                self.f64(x);
            }
        }
    }

    /// Quaternions, length first.
    pub fn quats(&mut self, q: &[DQuat]) {
        self.usize(q.len());
        for r in q {
            for c in r.to_array() {
                self.f64(c);
            }
        }
    }

    /// Flags, length first.
    pub fn bools(&mut self, v: &[bool]) {
        self.usize(v.len());
        self.buf.extend(v.iter().map(|&b| u8::from(b)));
    }

    /// 32-bit values, length first.
    pub fn u32s(&mut self, v: &[u32]) {
        self.usize(v.len());
        for &x in v {
            self.u32(x);
        }
    }

    /// A nested blob, length first.
    pub fn bytes(&mut self, b: &[u8]) {
        self.usize(b.len());
        self.buf.extend_from_slice(b);
    }
}

/// Reads values written by [`StateWriter`], in the same order.
#[derive(Debug)]
pub struct StateReader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> StateReader<'a> {
    /// A reader over `data`.
    #[must_use]
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, at: 0 }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], RestoreError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.data.len()).ok_or(RestoreError::Truncated(what))?;
        let out = &self.data[self.at..end];
        self.at = end;
        Ok(out)
    }

    /// Errors unless every byte was read.
    pub fn finish(&self) -> Result<(), RestoreError> {
        match self.data.len() - self.at {
            0 => Ok(()),
            n => Err(RestoreError::Trailing(n)),
        }
    }

    /// A byte.
    pub fn u8(&mut self, what: &'static str) -> Result<u8, RestoreError> {
        Ok(self.take(1, what)?[0])
    }

    /// A flag.
    pub fn bool(&mut self, what: &'static str) -> Result<bool, RestoreError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(RestoreError::Invalid(what)),
        }
    }

    /// A 64-bit value.
    pub fn u64(&mut self, what: &'static str) -> Result<u64, RestoreError> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().expect("8 bytes")))
    }

    /// A length or index that must fit this machine and be at most `max`.
    pub fn usize(&mut self, what: &'static str, max: usize) -> Result<usize, RestoreError> {
        usize::try_from(self.u64(what)?).ok().filter(|&v| v <= max).ok_or(RestoreError::Invalid(what))
    }

    /// A 32-bit value.
    pub fn u32(&mut self, what: &'static str) -> Result<u32, RestoreError> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().expect("4 bytes")))
    }

    /// A float.
    pub fn f64(&mut self, what: &'static str) -> Result<f64, RestoreError> {
        Ok(f64::from_bits(self.u64(what)?))
    }

    /// A vector.
    pub fn vec3(&mut self, what: &'static str) -> Result<DVec3, RestoreError> {
        Ok(DVec3::new(self.f64(what)?, self.f64(what)?, self.f64(what)?))
    }

    /// A string.
    pub fn str(&mut self, what: &'static str) -> Result<String, RestoreError> {
        let n = self.usize(what, self.data.len())?;
        String::from_utf8(self.take(n, what)?.to_vec()).map_err(|_| RestoreError::Invalid(what))
    }

    /// A length that must equal `expected`.
    fn len_of(&mut self, what: &'static str, expected: Option<usize>) -> Result<usize, RestoreError> {
        let n = self.usize(what, self.data.len())?;
        match expected {
            Some(e) if e != n => Err(RestoreError::Mismatch { what, saved: n.to_string(), here: e.to_string() }),
            _ => Ok(n),
        }
    }

    /// Floats into `out` (resized).
    pub fn f64s(&mut self, what: &'static str, out: &mut Vec<f64>) -> Result<(), RestoreError> {
        let n = self.len_of(what, None)?;
        let bytes = self.take(n.checked_mul(8).ok_or(RestoreError::Invalid(what))?, what)?;
        out.clear();
        out.extend(bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))));
        Ok(())
    }

    /// Vectors into `out`; `expected` checks the count.
    pub fn vec3s(&mut self, what: &'static str, expected: Option<usize>, out: &mut Vec3s) -> Result<(), RestoreError> {
        let n = self.len_of(what, expected)?;
        let bytes = self.take(n.checked_mul(24).ok_or(RestoreError::Invalid(what))?, what)?;
        let mut v = Vec3s::zeros(n);
        for (c, dst) in v.components_mut().into_iter().enumerate() {
            for (i, x) in dst.iter_mut().enumerate() {
                let at = (c * n + i) * 8;
                *x = f64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
            }
        }
        *out = v;
        Ok(())
    }

    /// Quaternions into `out`; `expected` checks the count.
    pub fn quats(
        &mut self,
        what: &'static str,
        expected: Option<usize>,
        out: &mut Vec<DQuat>,
    ) -> Result<(), RestoreError> {
        let n = self.len_of(what, expected)?;
        out.clear();
        for _ in 0..n {
            out.push(DQuat::from_xyzw(self.f64(what)?, self.f64(what)?, self.f64(what)?, self.f64(what)?));
        }
        Ok(())
    }

    /// Flags into `out`; `expected` checks the count.
    pub fn bools(
        &mut self,
        what: &'static str,
        expected: Option<usize>,
        out: &mut Vec<bool>,
    ) -> Result<(), RestoreError> {
        let n = self.len_of(what, expected)?;
        let bytes = self.take(n, what)?;
        out.clear();
        for &b in bytes {
            out.push(match b {
                0 => false,
                1 => true,
                _ => return Err(RestoreError::Invalid(what)),
            });
        }
        Ok(())
    }

    /// 32-bit values into `out`.
    pub fn u32s(&mut self, what: &'static str, out: &mut Vec<u32>) -> Result<(), RestoreError> {
        let n = self.len_of(what, None)?;
        let bytes = self.take(n.checked_mul(4).ok_or(RestoreError::Invalid(what))?, what)?;
        out.clear();
        out.extend(bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))));
        Ok(())
    }

    /// A nested blob.
    pub fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], RestoreError> {
        let n = self.len_of(what, None)?;
        self.take(n, what)
    }
}

/// Errors unless `saved == here`.
pub fn expect_eq<T: PartialEq + std::fmt::Display>(what: &'static str, saved: T, here: T) -> Result<(), RestoreError> {
    if saved == here {
        Ok(())
    } else {
        Err(RestoreError::Mismatch { what, saved: saved.to_string(), here: here.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_bit_for_bit() {
        let mut w = StateWriter::new();
        w.f64(-0.0);
        w.f64(f64::NAN);
        w.vec3s(&Vec3s::from_vecs(&[DVec3::new(1.0, -2.0, 3.5), DVec3::new(f64::MIN_POSITIVE, 0.1, 1e300)]));
        w.quats(&[DQuat::from_rotation_y(0.3)]);
        w.bools(&[true, false]);
        w.str("cloth");
        let bytes = w.into_bytes();
        let mut r = StateReader::new(&bytes);
        assert_eq!(r.f64("z").unwrap().to_bits(), (-0.0f64).to_bits());
        assert_eq!(r.f64("n").unwrap().to_bits(), f64::NAN.to_bits());
        let mut v = Vec3s::default();
        r.vec3s("v", Some(2), &mut v).unwrap();
        assert_eq!(v.get(1), DVec3::new(f64::MIN_POSITIVE, 0.1, 1e300));
        let mut q = Vec::new();
        r.quats("q", None, &mut q).unwrap();
        assert_eq!(q[0], DQuat::from_rotation_y(0.3));
        let mut b = Vec::new();
        r.bools("b", None, &mut b).unwrap();
        assert_eq!(b, vec![true, false]);
        assert_eq!(r.str("s").unwrap(), "cloth");
        r.finish().unwrap();
    }

    #[test]
    fn short_or_mismatched_input_is_an_error_not_a_panic() {
        let mut w = StateWriter::new();
        w.vec3s(&Vec3s::zeros(3));
        let bytes = w.into_bytes();
        let mut v = Vec3s::default();
        let e = StateReader::new(&bytes).vec3s("positions", Some(4), &mut v).unwrap_err();
        assert_eq!(e, RestoreError::Mismatch { what: "positions", saved: "3".into(), here: "4".into() });
        for cut in 0..bytes.len() {
            assert!(StateReader::new(&bytes[..cut]).vec3s("positions", None, &mut v).is_err(), "cut at {cut}");
        }
        // A huge length is refused before any allocation.
        let mut w = StateWriter::new();
        w.u64(u64::MAX / 2);
        let bytes = w.into_bytes();
        assert!(StateReader::new(&bytes).vec3s("positions", None, &mut v).is_err());
    }
}
