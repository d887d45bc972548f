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

/// The time a cache line takes to go from the first thread of `pool` to the
/// second and back, ns: the median of `probes` measurements of `trips` round trips
/// each, the two threads passing a counter to each other through one line. `None`
/// when the pool has fewer than two threads. Call it from outside the pool, with
/// the pool idle.
///
/// Why measure it: a step's parallel passes hand their work over and read data the
/// other core wrote last, so the two-thread step's speed-up depends on this time as
/// much as on there being two cores. On the 2-core development VM it sat at 60–65
/// ns most of the time and at 150–380 ns in minutes when the host placed the two
/// virtual CPUs far apart; the crumple's two-thread speed-up then fell from about
/// 1.72 × to 1.3–1.4 × while two independent one-thread runs still got 1.9–2.0 ×
/// (docs/performance.md, twenty-sixth session). The contact bench prints its
/// speed-up by this time.
pub fn core_round_trip(pool: &rayon::ThreadPool, trips: u32, probes: usize) -> Option<f64> {
    use std::sync::atomic::{AtomicU64, Ordering};
    if pool.current_num_threads() < 2 || trips == 0 || probes == 0 {
        return None;
    }
    let mut times: Vec<f64> = (0..probes)
        .map(|_| {
            let counter = Padded(AtomicU64::new(0));
            // Every thread of the pool runs this; the first two play, the first
            // times. (A later thread returns at once.)
            let elapsed = pool.broadcast(|ctx| {
                let me = ctx.index() as u64;
                if me > 1 {
                    return 0.0;
                }
                let start = std::time::Instant::now();
                for trip in 0..u64::from(trips) {
                    // Thread 0 writes odd values, thread 1 answers with even ones.
                    let (wait_for, answer) = (2 * trip + me, 2 * trip + me + 1);
                    let mut spins = 0u32;
                    while counter.0.load(Ordering::Acquire) != wait_for {
                        // (A partner without a core of its own, on a loaded
                        // machine, needs this thread to give its core up.)
                        spins += 1;
                        if spins.is_multiple_of(4096) {
                            std::thread::yield_now();
                        } else {
                            std::hint::spin_loop();
                        }
                    }
                    counter.0.store(answer, Ordering::Release);
                }
                start.elapsed().as_secs_f64()
            });
            elapsed[0] * 1e9 / f64::from(trips)
        })
        .collect();
    times.sort_by(f64::total_cmp);
    Some(times[times.len() / 2])
}

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
pub fn with_hot_helpers<R>(f: impl FnOnce() -> R) -> R {
    use std::sync::atomic::{AtomicBool, Ordering};
    let threads = rayon::current_num_threads();
    let me = rayon::current_thread_index();
    if threads < 2 || me.is_none() || HOT.with(std::cell::Cell::get) {
        // One thread, not on a pool thread, or helpers already waiting (a run's
        // steps): nothing to add.
        return f();
    }
    let done = AtomicBool::new(false);
    let shares = Shares::new(threads);
    // In place: `f` runs on this thread (a pool thread, checked above), so it
    // need not be `Send`; only the helpers are queued.
    rayon::in_place_scope(|s| {
        // The helpers are queued before any of `f`'s work, and other threads take
        // the oldest queued job first, so a thread that takes a helper is not in
        // the middle of `f`'s work.
        for k in 1..threads {
            let (done, shares) = (&done, &shares);
            s.spawn(move |_| {
                // Never on the thread running `f` (it would spin until `f`, which it
                // interrupted, returns): a helper it picks up while waiting ends at once
                // (and `f`'s thread takes its shares itself).
                if rayon::current_thread_index() == me {
                    return;
                }
                let mut idle = 0u32;
                let mut seen = 0;
                while !done.load(Ordering::Acquire) {
                    // This helper's share of a pass handed out by `f`'s thread
                    // ([`for_ranges`]) first, then any pool work.
                    let e = shares.epoch.load(Ordering::Acquire);
                    if e != seen {
                        seen = e;
                        shares.run(k, e);
                        idle = 0;
                        continue;
                    }
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
        let _hot = HotGuard::set(&done, &shares);
        f()
    })
}

/// Idle rounds a helper of [`with_hot_helpers`] spins before it starts yielding
/// its core to the OS between looks for work.
const HOT_SPINS: u32 = 256;

thread_local! {
    /// Whether this thread runs the `f` of a [`with_hot_helpers`].
    static HOT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The shares that the `f` of a [`with_hot_helpers`] running on this thread
    /// hands to its helpers (null elsewhere, and while this thread runs a share).
    static SHARES: std::cell::Cell<*const Shares> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// Marks the current thread as running under helpers until dropped, and then
/// tells the helpers to end.
struct HotGuard<'a>(&'a std::sync::atomic::AtomicBool);

impl<'a> HotGuard<'a> {
    fn set(done: &'a std::sync::atomic::AtomicBool, shares: &'a Shares) -> Self {
        HOT.with(|h| h.set(true));
        SHARES.with(|c| c.set(shares));
        HotGuard(done)
    }
}

impl Drop for HotGuard<'_> {
    fn drop(&mut self) {
        HOT.with(|h| h.set(false));
        SHARES.with(|c| c.set(std::ptr::null()));
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// A pass cut into one share per thread, handed by the thread running the `f`
/// of a [`with_hot_helpers`] (its *owner*, share 0) to the helpers (helper k,
/// share k) without going through rayon's queues: see [`for_ranges`].
struct Shares {
    /// Passes handed out so far; the current one is number `epoch`.
    epoch: std::sync::atomic::AtomicU64,
    /// Per share, the last pass whose share was taken (each is run once; each
    /// on lines of its own, as the owner and a helper take theirs at once).
    taken: Vec<Padded<std::sync::atomic::AtomicU64>>,
    /// Shares of the current pass not finished yet.
    remaining: std::sync::atomic::AtomicUsize,
    /// The current pass: a `*const &(dyn Fn(usize) + Sync)` on the owner's stack,
    /// alive until `remaining` reaches zero.
    job: std::sync::atomic::AtomicPtr<()>,
    /// Whether a share of the current pass panicked.
    panicked: std::sync::atomic::AtomicBool,
}

impl Shares {
    fn new(threads: usize) -> Self {
        use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};
        Shares {
            epoch: AtomicU64::new(0),
            taken: (0..threads).map(|_| Padded(AtomicU64::new(0))).collect(),
            remaining: AtomicUsize::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            panicked: AtomicBool::new(false),
        }
    }

    /// Takes share `k` of pass `e` and runs it; false (nothing done) when it was
    /// taken already, or `e` is over.
    fn run(&self, k: usize, e: u64) -> bool {
        use std::sync::atomic::Ordering;
        let taken = &self.taken[k];
        let last = taken.load(Ordering::Acquire);
        if last >= e || taken.compare_exchange(last, e, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return false;
        }
        // SAFETY: share k of pass e is taken here and not finished, so pass e is
        // not over: its owner is still waiting in `dispatch`, whose frame holds the
        // job (the pointer was stored before `epoch` became e, and the next pass
        // cannot be handed out before this share is finished).
        let job = unsafe { &*(self.job.load(Ordering::Acquire) as *const &(dyn Fn(usize) + Sync)) };
        let outer = SHARES.with(|c| c.replace(std::ptr::null()));
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(k))).is_err() {
            self.panicked.store(true, Ordering::Release);
        }
        SHARES.with(|c| c.set(outer));
        self.remaining.fetch_sub(1, Ordering::AcqRel);
        true
    }

    /// Runs `job(k)` for every share k, share 0 here and the others on the
    /// helpers (or here, for a helper that has not taken its share when this
    /// thread is done with its own); returns when all are done.
    fn dispatch(&self, job: &(dyn Fn(usize) + Sync)) {
        use std::sync::atomic::Ordering;
        let ptr: *const &(dyn Fn(usize) + Sync) = &job;
        self.job.store(ptr as *mut (), Ordering::Release);
        self.remaining.store(self.taken.len(), Ordering::Release);
        let e = self.epoch.load(Ordering::Relaxed) + 1;
        self.epoch.store(e, Ordering::Release);
        for k in 0..self.taken.len() {
            self.run(k, e);
        }
        let mut idle = 0u32;
        while self.remaining.load(Ordering::Acquire) != 0 {
            if idle < HOT_SPINS {
                idle += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        if self.panicked.swap(false, Ordering::AcqRel) {
            panic!("a share of a parallel pass panicked");
        }
    }
}

/// Runs `f` over the ranges of a split of 0..`n` that together cover it once:
/// under [`with_hot_helpers`], one contiguous range per thread, thread k of the
/// pool always taking the k-th (so a core keeps touching the same particles from
/// pass to pass, and their data stays in its cache); elsewhere, the blocks of
/// [`block_len`] through rayon; on one thread or for few items, 0..`n` at once.
///
/// Why not rayon's queues under the helpers: which thread takes which block then
/// changes from pass to pass, and the data of every block a core did not touch
/// last has to come over from the other core. On the 64 × 64 crumple without
/// self-collision (two threads, 2026-11-28) the symplectic update of velocities
/// and positions took 35–40 µs a step that way, 5.5 µs on one thread; with fixed
/// shares for the springs and the update, 18 µs.
pub fn for_ranges(n: usize, f: impl Fn(std::ops::Range<usize>) + Sync) {
    for_parts(n, |_, r| f(r));
}

/// How [`for_ranges`] cuts 0..`n` on the current thread: the number of ranges,
/// and the fixed shares of the [`with_hot_helpers`] this thread runs under (null
/// when the ranges go through rayon's queues, or there is one range).
fn split(n: usize) -> (usize, *const Shares) {
    let bs = block_len(n);
    if bs >= n {
        return (1, std::ptr::null());
    }
    let shares = SHARES.with(std::cell::Cell::get);
    if shares.is_null() {
        return (n.div_ceil(bs), shares);
    }
    // SAFETY: `SHARES` points to the `Shares` of the `with_hot_helpers` frame
    // that this thread is running `f` in (the guard clears it before that frame
    // ends), and it is null while this thread runs a share.
    (unsafe { &*shares }.taken.len(), shares)
}

/// The number of ranges [`for_parts`] cuts a pass over `n` items into on the
/// current thread.
pub(crate) fn range_count(n: usize) -> usize {
    split(n).0
}

/// [`for_ranges`] with each range's number: `f(k, range)` for k in 0..parts
/// (the count [`split`] gives), the ranges in order.
pub(crate) fn for_parts(n: usize, f: impl Fn(usize, std::ops::Range<usize>) + Sync) {
    let (parts, shares) = split(n);
    if parts == 1 {
        f(0, 0..n);
    } else if !shares.is_null() {
        // SAFETY: as in `split`; this frame ends before the helpers' frame does.
        let shares = unsafe { &*shares };
        shares.dispatch(&|k: usize| f(k, k * n / parts..(k + 1) * n / parts));
    } else {
        let bs = block_len(n);
        (0..parts).into_par_iter().for_each(|b| f(b, b * bs..((b + 1) * bs).min(n)));
    }
}

/// Runs `f(range, out)` over the ranges of [`for_ranges`] and appends the
/// outputs to `dst` in index order, so the result does not depend on the thread
/// count. `parts` is kept by the caller between passes (no allocation once it
/// has grown).
pub fn collect_ranges<T: Send>(
    n: usize,
    parts: &mut Parts<T>,
    f: impl Fn(std::ops::Range<usize>, &mut Vec<T>) + Sync,
    dst: &mut Vec<T>,
) {
    let (count, _) = split(n);
    if count == 1 {
        f(0..n, dst);
        return;
    }
    let parts = &mut parts.0;
    if parts.len() < count {
        parts.resize_with(count, Default::default);
    }
    let slots = &parts[..count];
    for_parts(n, |k, r| {
        let mut out = slots[k].lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        out.clear();
        f(r, &mut out);
    });
    for slot in &mut parts[..count] {
        dst.append(slot.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner));
    }
}

/// Per-range output buffers of [`collect_ranges`]. A clone starts empty (it is
/// scratch, not state).
#[derive(Debug)]
/// (Each buffer on lines of its own: the ranges fill theirs at the same time.)
pub struct Parts<T>(Vec<Padded<std::sync::Mutex<Vec<T>>>>);

impl<T> Default for Parts<T> {
    fn default() -> Self {
        Parts(Vec::new())
    }
}

impl<T> Clone for Parts<T> {
    fn clone(&self) -> Self {
        Parts::default()
    }
}

/// A value on cache lines of its own (two 64-byte lines: Intel's adjacent-line
/// prefetcher moves them in pairs), for data that different threads write at
/// the same time: per-thread outputs, counters, the fields of the helpers'
/// hand-off.
///
/// Why: values side by side in memory share a cache line, and a write by one
/// core takes the whole line from the other (false sharing). On the crumple's
/// full build, the four spatial hashes sat next to each other in an array and
/// two hashes built at the same time on the two cores wrote their `Vec`s'
/// lengths into one line at every insertion: each build ran at half its speed
/// beside the other (see docs/performance.md, twenty-second session).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(align(128))]
pub struct Padded<T>(pub T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for Padded<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// Columns of equal length, lent out range by range to the calls of a
/// [`for_ranges`] pass (which never overlap).
struct Columns<'a, const K: usize> {
    ptr: [*mut f64; K],
    len: usize,
    _lent: std::marker::PhantomData<&'a mut [f64]>,
}

// SAFETY: the columns are lent only in disjoint ranges (see `Columns::range`).
unsafe impl<const K: usize> Sync for Columns<'_, K> {}

impl<'a, const K: usize> Columns<'a, K> {
    fn new(cols: [&'a mut [f64]; K]) -> Self {
        let len = cols.iter().map(|c| c.len()).min().unwrap_or(0);
        Columns { ptr: cols.map(|c| c.as_mut_ptr()), len, _lent: std::marker::PhantomData }
    }

    /// The columns' rows `r`.
    ///
    /// # Safety
    /// Ranges lent at the same time must not overlap.
    // Lending rows out of a shared view is the point: the contract above keeps
    // every lent row borrowed once.
    #[allow(clippy::mut_from_ref)]
    unsafe fn range(&self, r: std::ops::Range<usize>) -> [&mut [f64]; K] {
        assert!(r.start <= r.end && r.end <= self.len);
        // SAFETY: within bounds (asserted); no other live borrow of these rows
        // (the caller's contract).
        self.ptr.map(|p| unsafe { std::slice::from_raw_parts_mut(p.add(r.start), r.end - r.start) })
    }
}

/// [`for_ranges`] over the rows of mutable columns (the shortest column's
/// length): `f(first, rows)` gets each range's rows of every column, `first`
/// being the index of the range's first row.
pub fn for_ranges_mut<const K: usize>(cols: [&mut [f64]; K], f: impl Fn(usize, [&mut [f64]; K]) + Sync) {
    let cols = Columns::new(cols);
    // SAFETY: `for_ranges` hands out ranges that never overlap.
    for_ranges(cols.len, |r| f(r.start, unsafe { cols.range(r) }));
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
    let n = dst.len().min(src.len());
    for_ranges_mut([&mut dst[..n]], |first, [d]| {
        for (d, s) in d.iter_mut().zip(&src[first..]) {
            *d = op(*d, *s);
        }
    });
}

/// `dst[i] = op(a[i], b[i])` for every i.
pub fn set(dst: &mut [f64], a: &[f64], b: &[f64], op: impl Fn(f64, f64) -> f64 + Sync + Send + Copy) {
    let n = dst.len().min(a.len()).min(b.len());
    for_ranges_mut([&mut dst[..n]], |first, [d]| {
        for ((d, a), b) in d.iter_mut().zip(&a[first..]).zip(&b[first..]) {
            *d = op(*a, *b);
        }
    });
}

/// Fills `dst` with `value`.
pub fn fill(dst: &mut [f64], value: f64) {
    for_ranges_mut([dst], |_, [d]| d.fill(value));
}

/// Sets every vector of `v` to zero, in one parallel region.
pub fn zero3(v: &mut Vec3s) {
    let [x, y, z] = v.components_mut();
    for_ranges_mut([x, y, z], |_, [x, y, z]| {
        x.fill(0.0);
        y.fill(0.0);
        z.fill(0.0);
    });
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
    let [vx, vy, vz] = v.components_mut();
    let [xx, xy, xz] = x.components_mut();
    let n = vx.len().min(xx.len()).min(f.len()).min(w.len());
    let f = f.components();
    for_ranges_mut([&mut vx[..n], &mut vy[..n], &mut vz[..n], &mut xx[..n], &mut xy[..n], &mut xz[..n]], |first, c| {
        let [vx, vy, vz, xx, xy, xz] = c;
        let w = &w[first..first + vx.len()];
        for ((v, x), f) in [vx, vy, vz].into_iter().zip([xx, xy, xz]).zip(f) {
            let f = &f[first..first + v.len()];
            for i in 0..v.len() {
                (v[i], x[i]) = op(v[i], x[i], f[i], w[i]);
            }
        }
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

/// [`for_ranges`] over the rows of two [`Vec3s`] of equal length (positions and
/// velocities, say): `f` gets each range's rows of both.
pub fn for_rows_pair(a: &mut Vec3s, b: &mut Vec3s, f: impl Fn(RowsMut<'_>, RowsMut<'_>) + Sync) {
    let n = a.len().min(b.len());
    let [ax, ay, az] = a.components_mut();
    let [bx, by, bz] = b.components_mut();
    for_ranges_mut(
        [&mut ax[..n], &mut ay[..n], &mut az[..n], &mut bx[..n], &mut by[..n], &mut bz[..n]],
        |first, [ax, ay, az, bx, by, bz]| {
            f(RowsMut { first, x: ax, y: ay, z: az }, RowsMut { first, x: bx, y: by, z: bz });
        },
    );
}

/// Copies `src` into `dst` (resized to it) in the ranges of [`for_ranges`].
pub fn copy3(dst: &mut Vec3s, src: &Vec3s) {
    if dst.len() != src.len() {
        dst.copy_from(src);
        return;
    }
    let s = src.components();
    let [x, y, z] = dst.components_mut();
    for_ranges_mut([x, y, z], |first, d| {
        for (d, s) in d.into_iter().zip(s) {
            d.copy_from_slice(&s[first..first + d.len()]);
        }
    });
}

/// True when every component of `v` is finite. Branch-free per range, so it
/// vectorises, in the ranges of [`for_ranges`].
#[must_use]
pub fn all_finite(v: &Vec3s) -> bool {
    let [x, y, z] = v.components();
    let ok = std::sync::atomic::AtomicBool::new(true);
    for_ranges(v.len(), |r| {
        let finite = x[r.clone()]
            .iter()
            .zip(&y[r.clone()])
            .zip(&z[r])
            .fold(true, |a, ((x, y), z)| a & x.is_finite() & y.is_finite() & z.is_finite());
        if !finite {
            ok.store(false, std::sync::atomic::Ordering::Relaxed);
        }
    });
    ok.into_inner()
}

/// A [`Vec3s`] lent to several threads at once, for passes whose rows split
/// into groups that no two threads share (the contact response's islands: each
/// movable particle belongs to one island, pinned ones are only read). Copies of
/// the view are handed to the threads; each reads rows and adds to rows.
#[derive(Clone, Copy, Debug)]
pub struct SharedRows<'a> {
    ptr: [*mut f64; 3],
    len: usize,
    _lent: std::marker::PhantomData<&'a mut Vec3s>,
}

// SAFETY: the view is only made through `SharedRows::new`, whose contract keeps
// every row that some thread adds to away from every other thread.
unsafe impl Send for SharedRows<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for SharedRows<'_> {}

impl<'a> SharedRows<'a> {
    /// Lends `v` for the view's lifetime.
    ///
    /// # Safety
    /// While the view and its copies are in use, a row that one thread adds to
    /// must not be read or added to by any other thread.
    pub unsafe fn new(v: &'a mut Vec3s) -> Self {
        let len = v.len();
        let [x, y, z] = v.components_mut();
        SharedRows { ptr: [x.as_mut_ptr(), y.as_mut_ptr(), z.as_mut_ptr()], len, _lent: std::marker::PhantomData }
    }

    /// Row `i`. Panics if `i` is out of range.
    #[inline]
    #[must_use]
    pub fn get(&self, i: usize) -> glam::DVec3 {
        assert!(i < self.len, "row {i} of {}", self.len);
        // SAFETY: in bounds (asserted); no other thread writes row i meanwhile
        // (the contract of `new`).
        unsafe { glam::DVec3::new(*self.ptr[0].add(i), *self.ptr[1].add(i), *self.ptr[2].add(i)) }
    }

    /// Adds `d` to row `i`. Panics if `i` is out of range.
    #[inline]
    pub fn add(&mut self, i: usize, d: glam::DVec3) {
        assert!(i < self.len, "row {i} of {}", self.len);
        // SAFETY: in bounds (asserted); no other thread reads or writes row i
        // meanwhile (the contract of `new`).
        unsafe {
            *self.ptr[0].add(i) += d.x;
            *self.ptr[1].add(i) += d.y;
            *self.ptr[2].add(i) += d.z;
        }
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
    fn core_round_trip_is_measured_between_two_threads_only() {
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        assert_eq!(core_round_trip(&one, 100, 3), None, "one thread has no partner");
        for threads in [2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            assert_eq!(core_round_trip(&pool, 0, 3), None, "no trips, no time");
            // Two OS threads passing a line back and forth (on a loaded machine
            // a trip can take a time slice, so no upper bound).
            let ns = core_round_trip(&pool, 200, 3).expect("two threads or more");
            assert!(ns.is_finite() && ns > 1.0, "{threads} threads: {ns} ns a round trip");
        }
    }

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

    /// Runs `for_ranges` over 0..n, counting how often each index is covered and
    /// which thread covered it.
    fn cover(n: usize) -> (Vec<usize>, Vec<Option<usize>>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        let by: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(usize::MAX)).collect();
        for_ranges(n, |r| {
            let me = rayon::current_thread_index().unwrap_or(usize::MAX);
            for i in r {
                hits[i].fetch_add(1, Ordering::Relaxed);
                by[i].store(me, Ordering::Relaxed);
            }
        });
        let hits = hits.into_iter().map(AtomicUsize::into_inner).collect();
        let by = by.into_iter().map(|b| Some(b.into_inner()).filter(|&b| b != usize::MAX)).collect();
        (hits, by)
    }

    #[test]
    fn fixed_shares_cover_every_index_once_on_the_same_thread_every_pass() {
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                // Under the helpers: one range per thread, the first always on the
                // owner, the others on their helpers (or on the owner, for a helper
                // late to its share).
                with_hot_helpers(|| {
                    let n = 10_000;
                    let owner = rayon::current_thread_index();
                    let mut helped = 0;
                    // (A worker may take a while to wake up to its helper job: the
                    // passes go on until one has helped, for at most 10 s.)
                    let start = std::time::Instant::now();
                    let mut pass = 0;
                    while pass < 300 || (threads > 1 && helped == 0 && start.elapsed().as_secs() < 10) {
                        pass += 1;
                        let (hits, by) = cover(n);
                        assert!(hits.iter().all(|&h| h == 1), "{threads} threads, pass {pass}: {hits:?}");
                        assert_eq!(by[0], owner, "{threads} threads, pass {pass}");
                        // Each range ran on one thread.
                        for k in 0..threads {
                            let r = k * n / threads..(k + 1) * n / threads;
                            assert!(by[r.clone()].iter().all(|&b| b == by[r.start]), "pass {pass}, range {k}");
                        }
                        helped += usize::from(by.iter().any(|&b| b != owner));
                    }
                    assert!(threads == 1 || helped > 0, "{threads} threads: the helpers never took a share");
                    assert!(threads > 1 || helped == 0);
                    // Small passes run at once on this thread.
                    let (hits, by) = cover(100);
                    assert!(hits.iter().all(|&h| h == 1));
                    assert!(by.iter().all(|&b| b == rayon::current_thread_index()));
                    // A pass inside a share (nested) goes through rayon, and covers
                    // its indices once too.
                    use std::sync::atomic::{AtomicUsize, Ordering};
                    let inner = AtomicUsize::new(0);
                    for_ranges(4096, |r| {
                        let (hits, _) = cover(3000);
                        assert!(hits.iter().all(|&h| h == 1));
                        inner.fetch_add(r.len(), Ordering::Relaxed);
                    });
                    assert_eq!(inner.into_inner(), 4096);
                });
                // Outside the helpers: rayon's blocks, each index once.
                let (hits, _) = cover(10_000);
                assert!(hits.iter().all(|&h| h == 1));
            });
        }
    }

    #[test]
    fn fixed_shares_lend_disjoint_rows_and_pass_panics_on() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        pool.install(|| {
            with_hot_helpers(|| {
                let n = 9_001;
                let (mut a, mut b) = (vec![0.0; n], vec![1.0; n + 5]);
                for_ranges_mut([&mut a, &mut b], |first, [a, b]| {
                    assert_eq!(a.len(), b.len(), "rows of the shortest column");
                    for (k, (a, b)) in a.iter_mut().zip(b.iter_mut()).enumerate() {
                        *a += (first + k) as f64;
                        *b *= 2.0;
                    }
                });
                assert!(a.iter().enumerate().all(|(i, &v)| v == i as f64));
                assert!(b[..n].iter().all(|&v| v == 2.0) && b[n..].iter().all(|&v| v == 1.0));
                // A panic in any share reaches the caller once every share is done
                // (the pass's closure lives on the caller's stack until then), and
                // the next pass works.
                for victim in [0usize, 1] {
                    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        for_ranges(8192, |r| {
                            if r.start == victim * 4096 {
                                panic!("share {victim} fails");
                            }
                        })
                    }));
                    assert!(caught.is_err(), "share {victim}'s panic reached the caller");
                    let (hits, _) = cover(8192);
                    assert!(hits.iter().all(|&h| h == 1), "after share {victim}'s panic");
                }
            });
        });
    }

    #[test]
    fn collected_ranges_come_back_in_index_order_on_any_thread_count() {
        // Every index that passes the filter, once, in order: under the helpers'
        // fixed shares, through rayon's blocks, and on one thread, for counts
        // that split into one range and into several.
        let keep = |i: usize| i % 7 == 3 || i.is_multiple_of(11);
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for n in [0, 5, 1023, 4096, 10_001] {
                let expected: Vec<usize> = (0..n).filter(|&i| keep(i)).collect();
                let mut parts = Parts::default();
                let collect = |parts: &mut Parts<usize>| {
                    // The destination keeps what it held.
                    let mut got = vec![usize::MAX];
                    collect_ranges(n, parts, |r, out| out.extend(r.filter(|&i| keep(i))), &mut got);
                    assert_eq!(got[0], usize::MAX);
                    got.split_off(1)
                };
                pool.install(|| {
                    assert_eq!(collect(&mut parts), expected, "{threads} threads, rayon blocks, n = {n}");
                    with_hot_helpers(|| {
                        // Twice: the second pass reuses the buffers.
                        for pass in 0..2 {
                            assert_eq!(
                                collect(&mut parts),
                                expected,
                                "{threads} threads, shares, n = {n}, pass {pass}"
                            );
                        }
                    });
                });
                assert_eq!(collect(&mut parts), expected, "outside the pool, n = {n}");
            }
        }
    }

    #[test]
    fn padded_values_never_share_a_cache_line_pair() {
        // Neighbours in an array start 128 bytes apart or more, whatever their
        // size, and what threads fill side by side is padded the same way.
        fn gap<T>(a: &[T; 2]) -> usize {
            (&raw const a[1]) as usize - (&raw const a[0]) as usize
        }
        assert_eq!(gap(&[Padded(0u8), Padded(1u8)]), 128);
        assert_eq!(gap(&[Padded([0u64; 20]), Padded([0u64; 20])]), 256);
        let hashes = crate::contact::broad::Hashes::default();
        let pair =
            |a: &crate::contact::broad::Hashes, i: usize| [&a.0[i], &a.0[i + 1]].map(|h| &raw const **h as usize);
        for i in 0..3 {
            let [a, b] = pair(&hashes, i);
            assert!(b - a >= 128 && a.is_multiple_of(128), "hashes {i} and {}", i + 1);
        }
        // What holds the hashes inline keeps an ordinary alignment: a world must
        // fit where only 16 bytes are guaranteed (a Python object holds one).
        assert!(std::mem::align_of::<crate::world::World>() <= 16);
        let mut parts = Parts::<u32>::default();
        parts.0.resize_with(3, Default::default);
        assert!(parts.0.iter().all(|p| (&raw const *p as usize).is_multiple_of(128)));
        let mut p = Padded(7);
        *p += 1;
        assert_eq!(*p, 8);
    }

    #[test]
    fn all_finite_finds_any_bad_component() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        for n in [0, 1, 3000] {
            let mut v = Vec3s::zeros(n);
            for i in 0..n {
                v.set(i, glam::DVec3::new(i as f64, -1e300, 1e-300));
            }
            assert!(pool.install(|| with_hot_helpers(|| all_finite(&v))), "n = {n}");
            assert!(all_finite(&v));
            for i in [0, n / 2, n.saturating_sub(1)].into_iter().filter(|_| n > 0) {
                for (c, bad) in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY].into_iter().enumerate() {
                    let mut w = v.clone();
                    let mut p = w.get(i);
                    p[c] = bad;
                    w.set(i, p);
                    assert!(!pool.install(|| with_hot_helpers(|| all_finite(&w))), "n = {n}, row {i}, axis {c}");
                    assert!(!all_finite(&w), "n = {n}, row {i}, axis {c}");
                }
            }
        }
    }

    #[test]
    fn shared_rows_add_from_several_threads_to_disjoint_rows() {
        // Rows split by residue between the threads of a pass, each thread adding
        // to its own rows and reading them back: the sums are those of a serial
        // loop.
        let n = 5000;
        let mut v = Vec3s::zeros(n);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        // SAFETY: below, row i is read and added to only by the task of
        // residue i % 3.
        let shared = unsafe { SharedRows::new(&mut v) };
        pool.install(|| {
            (0..3usize).into_par_iter().for_each(|k| {
                let mut rows = shared;
                for round in 0..4 {
                    for i in (k..n).step_by(3) {
                        let d = glam::DVec3::new(i as f64, round as f64, 1.0);
                        let before = rows.get(i);
                        rows.add(i, d);
                        assert_eq!(rows.get(i), before + d);
                    }
                }
            });
        });
        for i in 0..n {
            assert_eq!(v.get(i), glam::DVec3::new(4.0 * i as f64, 6.0, 4.0), "row {i}");
        }
        let mut w = Vec3s::zeros(2);
        // SAFETY: one thread.
        let rows = unsafe { SharedRows::new(&mut w) };
        assert!(std::panic::catch_unwind(|| rows.get(2)).is_err(), "a row past the end panics");
    }
}
