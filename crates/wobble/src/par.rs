//! Deterministic data parallelism shared by every per-particle pass.
//!
//! All parallel passes split the particles into the same contiguous blocks, so that
//! with a fixed thread pool each core tends to touch the same particles in every
//! pass of a step and keeps them in its own cache. Results never depend on the
//! split: per-particle passes are elementwise, and the spring kernel fixes its
//! summation order by the data (see [`crate::force::spring`]).

use rayon::prelude::*;

use crate::model::Vec3s;

/// A rayon pool of `threads` threads, each pinned to its own CPU where the OS allows
/// (Linux; elsewhere unpinned).
///
/// Why pin: a step runs several short parallel passes. On virtual machines the
/// scheduler tends to wake an idle worker on the CPU of the thread that woke it,
/// where it waits behind that busy thread; the step then runs on one core (user
/// time equal to wall time was measured on the 2-core development VM). Pinning keeps
/// one worker per core. Results do not depend on it.
pub fn pinned_pool(threads: usize) -> Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    pool_builder(threads).build()
}

/// Makes the global rayon pool a [`pinned_pool`]; call once, before any parallel
/// work.
pub fn pin_global_pool(threads: usize) -> Result<(), rayon::ThreadPoolBuildError> {
    pool_builder(threads).build_global()
}

fn pool_builder(threads: usize) -> rayon::ThreadPoolBuilder {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    rayon::ThreadPoolBuilder::new().num_threads(threads).start_handler(move |index| {
        if threads > 1 {
            pin_current_thread(index % cpus);
        }
    })
}

#[cfg(target_os = "linux")]
fn pin_current_thread(cpu: usize) {
    // SAFETY: `set` is a plain bit mask owned by this frame; sched_setaffinity only
    // reads it. A failure (CPU not allowed) leaves the thread unpinned, which is
    // harmless.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(not(target_os = "linux"))]
fn pin_current_thread(_cpu: usize) {}

/// Runs `f` on the current thread while the pool's other threads wait for its
/// parallel passes spinning instead of sleeping.
///
/// A step is a chain of short parallel passes with serial work between them. An
/// idle rayon worker yields to the OS for a few dozen rounds and then sleeps, so
/// any serial stretch longer than some tens of microseconds puts the second core
/// to sleep, and the next pass waits for it to be woken (a futex wake-up, tens of
/// microseconds on a virtual machine). Here every other worker runs a helper that
/// takes pending pool work as soon as it appears (`rayon::yield_now`) until `f`
/// returns. The helpers use their cores fully for that time, so this is for
/// callers that asked for those threads (a pool of more than one thread). Results
/// do not depend on it: the passes are the same, only who runs them and when.
pub fn with_hot_helpers<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    use std::sync::atomic::{AtomicBool, Ordering};
    let threads = rayon::current_num_threads();
    let me = rayon::current_thread_index();
    if threads < 2 || me.is_none() || HOT.with(std::cell::Cell::get) {
        // One thread, not on a pool thread, or helpers already waiting (a run's
        // steps): nothing to add.
        return f();
    }
    let done = AtomicBool::new(false);
    rayon::scope(|s| {
        // The helpers are queued before any of `f`'s work, and other threads take
        // the oldest queued job first, so a thread that takes a helper is not in
        // the middle of `f`'s work.
        for _ in 1..threads {
            s.spawn(|_| {
                // Never on the thread running `f` (it would spin until `f`, which it
                // interrupted, returns): a helper it picks up while waiting ends at once.
                if rayon::current_thread_index() == me {
                    return;
                }
                let mut idle = 0u32;
                while !done.load(Ordering::Acquire) {
                    if rayon::yield_now() == Some(rayon::Yield::Executed) {
                        idle = 0;
                    } else if idle < HOT_SPINS {
                        idle += 1;
                        std::hint::spin_loop();
                    } else {
                        // A long serial stretch: let the OS run something else
                        // (a shared machine), still without going to sleep.
                        std::thread::yield_now();
                    }
                }
            });
        }
        // The guard releases the helpers when `f` returns or unwinds (a panic in a
        // step must reach the caller, not leave the scope waiting on them).
        let _hot = HotGuard::set(&done);
        f()
    })
}

/// Idle rounds a helper of [`with_hot_helpers`] spins before it starts yielding
/// its core to the OS between looks for work.
const HOT_SPINS: u32 = 256;

thread_local! {
    /// Whether this thread runs the `f` of a [`with_hot_helpers`].
    static HOT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the current thread as running under helpers until dropped, and then
/// tells the helpers to end.
struct HotGuard<'a>(&'a std::sync::atomic::AtomicBool);

impl<'a> HotGuard<'a> {
    fn set(done: &'a std::sync::atomic::AtomicBool) -> Self {
        HOT.with(|h| h.set(true));
        HotGuard(done)
    }
}

impl Drop for HotGuard<'_> {
    fn drop(&mut self) {
        HOT.with(|h| h.set(false));
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Fewest particles per parallel block; smaller systems run on one thread.
pub const MIN_BLOCK: usize = 1024;

/// Particles per block for `n` particles on the current rayon pool: `n` (one block,
/// no threading) on one thread or for small systems, else a split into up to four
/// blocks per thread.
#[must_use]
pub fn block_len(n: usize) -> usize {
    let threads = rayon::current_num_threads();
    let blocks = if threads <= 1 { 1 } else { (4 * threads).min(n / MIN_BLOCK).max(1) };
    n.div_ceil(blocks).max(1)
}

/// `dst[i] = op(dst[i], src[i])` for every i.
pub fn apply(dst: &mut [f64], src: &[f64], op: impl Fn(f64, f64) -> f64 + Sync + Send + Copy) {
    let bs = block_len(dst.len());
    let serial = |d: &mut [f64], s: &[f64]| {
        for (d, s) in d.iter_mut().zip(s) {
            *d = op(*d, *s);
        }
    };
    if bs >= dst.len() {
        serial(dst, src);
    } else {
        dst.par_chunks_mut(bs).zip(src.par_chunks(bs)).for_each(|(d, s)| serial(d, s));
    }
}

/// `dst[i] = op(a[i], b[i])` for every i.
pub fn set(dst: &mut [f64], a: &[f64], b: &[f64], op: impl Fn(f64, f64) -> f64 + Sync + Send + Copy) {
    let bs = block_len(dst.len());
    let serial = |d: &mut [f64], a: &[f64], b: &[f64]| {
        for ((d, a), b) in d.iter_mut().zip(a).zip(b) {
            *d = op(*a, *b);
        }
    };
    if bs >= dst.len() {
        serial(dst, a, b);
    } else {
        dst.par_chunks_mut(bs).zip(a.par_chunks(bs)).zip(b.par_chunks(bs)).for_each(|((d, a), b)| serial(d, a, b));
    }
}

/// Fills `dst` with `value`.
pub fn fill(dst: &mut [f64], value: f64) {
    let bs = block_len(dst.len());
    if bs >= dst.len() {
        dst.fill(value);
    } else {
        dst.par_chunks_mut(bs).for_each(|d| d.fill(value));
    }
}

/// Sets every vector of `v` to zero, in one parallel region.
pub fn zero3(v: &mut Vec3s) {
    let bs = block_len(v.len());
    let [x, y, z] = v.components_mut();
    if bs >= x.len() {
        x.fill(0.0);
        y.fill(0.0);
        z.fill(0.0);
    } else {
        x.par_chunks_mut(bs).zip(y.par_chunks_mut(bs)).zip(z.par_chunks_mut(bs)).for_each(|((x, y), z)| {
            x.fill(0.0);
            y.fill(0.0);
            z.fill(0.0);
        });
    }
}

/// For every particle i and axis: `(v, x) = op(v, x, f, w)` with v, x updated in
/// place from force f and inverse mass w: one fused parallel pass over six arrays
/// (the velocity and position updates of symplectic Euler and Verlet).
pub fn update_vx(
    v: &mut Vec3s,
    x: &mut Vec3s,
    f: &Vec3s,
    w: &[f64],
    op: impl Fn(f64, f64, f64, f64) -> (f64, f64) + Sync + Send + Copy,
) {
    let bs = block_len(v.len());
    let serial = |v: [&mut [f64]; 3], x: [&mut [f64]; 3], f: [&[f64]; 3], w: &[f64]| {
        for ((v, x), f) in v.into_iter().zip(x).zip(f) {
            let n = v.len().min(x.len()).min(f.len()).min(w.len());
            for i in 0..n {
                (v[i], x[i]) = op(v[i], x[i], f[i], w[i]);
            }
        }
    };
    let [vx, vy, vz] = v.components_mut();
    let [xx, xy, xz] = x.components_mut();
    let [fx, fy, fz] = f.components();
    if bs >= vx.len() {
        serial([vx, vy, vz], [xx, xy, xz], [fx, fy, fz], w);
        return;
    }
    let vi = vx.par_chunks_mut(bs).zip(vy.par_chunks_mut(bs)).zip(vz.par_chunks_mut(bs));
    let xi = xx.par_chunks_mut(bs).zip(xy.par_chunks_mut(bs)).zip(xz.par_chunks_mut(bs));
    let fi = fx.par_chunks(bs).zip(fy.par_chunks(bs)).zip(fz.par_chunks(bs));
    vi.zip(xi).zip(fi).zip(w.par_chunks(bs)).for_each(|(((((vx, vy), vz), ((xx, xy), xz)), ((fx, fy), fz)), w)| {
        serial([vx, vy, vz], [xx, xy, xz], [fx, fy, fz], w);
    });
}

/// A contiguous run of rows of a [`Vec3s`], borrowed mutably, addressed by the
/// rows' global indices: what one parallel task of a row-split pass owns.
pub struct RowsMut<'a> {
    /// Global index of the first row.
    pub first: usize,
    x: &'a mut [f64],
    y: &'a mut [f64],
    z: &'a mut [f64],
}

impl RowsMut<'_> {
    /// Number of rows.
    #[must_use]
    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// True when there are no rows.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// Global indices of the rows.
    #[must_use]
    pub fn range(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.x.len()
    }

    /// The rows' x, y and z components.
    #[must_use]
    pub fn components(&self) -> [&[f64]; 3] {
        [self.x, self.y, self.z]
    }

    /// Row `i` (a global index within [`RowsMut::range`]).
    #[inline]
    #[must_use]
    pub fn get(&self, i: usize) -> glam::DVec3 {
        let k = i - self.first;
        glam::DVec3::new(self.x[k], self.y[k], self.z[k])
    }

    /// Sets row `i` (a global index within [`RowsMut::range`]).
    #[inline]
    pub fn set(&mut self, i: usize, v: glam::DVec3) {
        let k = i - self.first;
        self.x[k] = v.x;
        self.y[k] = v.y;
        self.z[k] = v.z;
    }

    /// Adds `v` to row `i` (as [`Vec3s::add`]).
    #[inline]
    pub fn add(&mut self, i: usize, v: glam::DVec3) {
        let k = i - self.first;
        self.x[k] += v.x;
        self.y[k] += v.y;
        self.z[k] += v.z;
    }

    /// Subtracts `v` from row `i` (as [`Vec3s::sub`]).
    #[inline]
    pub fn sub(&mut self, i: usize, v: glam::DVec3) {
        let k = i - self.first;
        self.x[k] -= v.x;
        self.y[k] -= v.y;
        self.z[k] -= v.z;
    }
}

/// `v` split into runs of `size` rows (the last may be shorter), as a parallel
/// iterator of [`RowsMut`] in row order.
pub fn par_rows(v: &mut Vec3s, size: usize) -> impl IndexedParallelIterator<Item = RowsMut<'_>> {
    let [x, y, z] = v.components_mut();
    x.par_chunks_mut(size)
        .zip(y.par_chunks_mut(size))
        .zip(z.par_chunks_mut(size))
        .enumerate()
        .map(move |(d, ((x, y), z))| RowsMut { first: d * size, x, y, z })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_helpers_run_the_work_and_end_with_it() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let expected: u64 = (0..100_000u64).map(|i| i * i % 7).sum();
        pool.install(|| {
            for round in 0..200 {
                // Parallel passes with serial work between them, and a nested call
                // (a run's steps) that must not queue helpers of its own.
                let total = with_hot_helpers(|| {
                    let first: u64 = (0..50_000u64).into_par_iter().map(|i| i * i % 7).sum();
                    let serial: u64 = (50_000..60_000u64).map(|i| i * i % 7).sum();
                    let rest = with_hot_helpers(|| {
                        assert!(HOT.with(std::cell::Cell::get), "the caller is marked");
                        (60_000..100_000u64).into_par_iter().map(|i| i * i % 7).sum::<u64>()
                    });
                    first + serial + rest
                });
                assert_eq!(total, expected, "round {round}");
                assert!(!HOT.with(std::cell::Cell::get), "the mark is cleared");
            }
        });
        // A panic in `f` reaches the caller (the helpers are released, the mark
        // cleared) instead of leaving the scope waiting for them.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| with_hot_helpers(|| -> u64 { panic!("a step fails") }))
        }));
        assert!(caught.is_err(), "the panic reached the caller");
        pool.install(|| assert!(!HOT.with(std::cell::Cell::get), "the mark is cleared after a panic"));
        // Outside any pool, and on one thread: just the call.
        assert_eq!(with_hot_helpers(|| 7), 7);
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        assert_eq!(one.install(|| with_hot_helpers(|| 8)), 8);
    }
}
