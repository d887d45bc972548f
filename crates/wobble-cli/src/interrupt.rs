//! SIGINT and SIGTERM during `wobble run`.
//!
//! The first signal only sets a flag: the run finishes the step in progress, then
//! writes its metrics, a checkpoint and the summary (status `interrupted`) and exits
//! with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM). A second
//! signal exits at once from the handler with the same code; since every output is
//! renamed into place only when complete, the folder then still holds only complete
//! files (and perhaps a `.NAME.partial` temporary).

use std::sync::atomic::{AtomicI32, Ordering};

/// The first signal received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    if RECEIVED.swap(sig, Ordering::SeqCst) != 0 {
        // SAFETY: `_exit` is async-signal-safe; nothing else runs in the handler.
        unsafe { libc::_exit(128 + sig) };
    }
}

/// Installs the handler for SIGINT and SIGTERM.
pub fn install() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed `sigaction` is a valid starting value; the handler only
        // touches an atomic and calls `_exit`, both async-signal-safe.
        let ok = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut()) == 0
        };
        if !ok {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The signal that asked the run to stop, if one has arrived.
#[must_use]
pub fn requested() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The test hook `WOBBLE_SIGNAL_AT_STEP=STEP:SIGNAL` (SIGNAL one of `INT`, `TERM`,
/// `KILL`, or `INT2` for two SIGINTs in a row): the run sends itself that signal
/// right after step STEP, so tests can interrupt or kill it at a chosen step
/// through the real signal path.
#[must_use]
pub fn test_hook() -> Option<(u64, i32, bool)> {
    let spec = std::env::var("WOBBLE_SIGNAL_AT_STEP").ok()?;
    let (step, name) = spec.split_once(':')?;
    let (sig, twice) = match name {
        "INT" => (libc::SIGINT, false),
        "INT2" => (libc::SIGINT, true),
        "TERM" => (libc::SIGTERM, false),
        "KILL" => (libc::SIGKILL, false),
        _ => return None,
    };
    Some((step.parse().ok()?, sig, twice))
}

/// Sends `sig` to this process.
pub fn raise(sig: i32) {
    // SAFETY: `raise` has no preconditions.
    unsafe { libc::raise(sig) };
}

/// The exit code for a run stopped by `sig`.
#[must_use]
pub fn exit_code(sig: i32) -> u8 {
    u8::try_from(128 + sig).unwrap_or(1)
}
