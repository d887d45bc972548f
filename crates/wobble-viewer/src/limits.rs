//! The server's bounds: how many connections, how long a request head may take,
//! how large and how frequent a page's messages may be, how much simulation one
//! command may take at a time, and how long a silent or stalled page is kept.
//!
//! Every bound is a named constant and a field of [`Limits`], so tests can shrink
//! the times; [`RateLimiter`] and [`Backoff`] are the two small mechanisms the
//! server uses to hold them.

use std::time::{Duration, Instant};

/// Simultaneous connections served (HTTP requests and WebSockets together); one
/// more is answered `503 Service Unavailable` by the accept thread itself.
pub const MAX_CONNECTIONS: usize = 64;
/// Simultaneous connections from one address other than loopback, so that one
/// machine on the network cannot take every slot; one more is answered `503` as
/// above. Loopback (the machine's own user, the default listen address) is
/// bounded by [`MAX_CONNECTIONS`] alone.
pub const MAX_PER_PEER: usize = 16;
/// Time a connection has to send its whole request head, from accept.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest WebSocket message a page may send, bytes (the protocol's own limit).
pub const MAX_MESSAGE_BYTES: usize = crate::protocol::MAX_REQUEST_BYTES;
/// Sustained messages per second a page may send; a burst of as many is allowed.
pub const MESSAGES_PER_SECOND: u32 = 200;
/// Commands waiting per page; one more is answered `busy`.
pub const COMMAND_QUEUE: usize = 32;
/// Longest stretch of stepping for one page's `step` before the other pages'
/// commands get their turn.
pub const STEP_SLICE: Duration = Duration::from_millis(4);
/// A page whose socket takes no bytes for this long, while the server has something
/// to send it, is dropped.
pub const SLOW_PAGE: Duration = Duration::from_secs(10);
/// A page silent for this long is pinged; silent for twice as long, it is dropped
/// (a half-open connection whose peer vanished).
pub const PING_AFTER: Duration = Duration::from_secs(15);

/// The server's bounds; [`Limits::default`] gives the constants above.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Simultaneous connections (default [`MAX_CONNECTIONS`]).
    pub max_connections: usize,
    /// Simultaneous connections from one address other than loopback (default
    /// [`MAX_PER_PEER`]).
    pub max_per_peer: usize,
    /// Time to read a request head (default [`HEAD_TIMEOUT`]).
    pub head_timeout: Duration,
    /// Largest message from a page, bytes (default [`MAX_MESSAGE_BYTES`]).
    pub max_message_bytes: usize,
    /// Messages per second per page (default [`MESSAGES_PER_SECOND`]).
    pub messages_per_second: u32,
    /// Commands waiting per page (default [`COMMAND_QUEUE`]).
    pub command_queue: usize,
    /// Stepping per turn (default [`STEP_SLICE`]).
    pub step_slice: Duration,
    /// Stall before a page that does not read is dropped (default [`SLOW_PAGE`]).
    pub slow_page: Duration,
    /// Silence before a ping (default [`PING_AFTER`]).
    pub ping_after: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: MAX_CONNECTIONS,
            max_per_peer: MAX_PER_PEER,
            head_timeout: HEAD_TIMEOUT,
            max_message_bytes: MAX_MESSAGE_BYTES,
            messages_per_second: MESSAGES_PER_SECOND,
            command_queue: COMMAND_QUEUE,
            step_slice: STEP_SLICE,
            slow_page: SLOW_PAGE,
            ping_after: PING_AFTER,
        }
    }
}

/// A token bucket: `rate` tokens a second, holding at most `rate` (one second's
/// burst). Each message takes one.
#[derive(Clone, Debug)]
pub struct RateLimiter {
    rate: f64,
    tokens: f64,
    last: Instant,
}

impl RateLimiter {
    /// A full bucket of `rate` per second.
    #[must_use]
    pub fn new(rate: u32) -> Self {
        let rate = f64::from(rate.max(1));
        Self { rate, tokens: rate, last: Instant::now() }
    }

    /// Takes a token at `now`; false when the bucket is empty (the message is over
    /// the limit).
    pub fn allow(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.rate);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Shortest pause after a failed `accept`.
pub const BACKOFF_MIN: Duration = Duration::from_millis(1);
/// Longest pause after repeated failures: out of file descriptors, the listener
/// retries ten times a second instead of spinning.
pub const BACKOFF_MAX: Duration = Duration::from_millis(100);

/// Pauses that double after each failure, from [`BACKOFF_MIN`] to [`BACKOFF_MAX`],
/// and start again after a success.
#[derive(Clone, Debug, Default)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    /// The pause after one more failure.
    pub fn failed(&mut self) -> Duration {
        let pause = BACKOFF_MIN.saturating_mul(1 << self.failures.min(16)).min(BACKOFF_MAX);
        self.failures = self.failures.saturating_add(1);
        pause
    }

    /// Forgets the failures.
    pub fn succeeded(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_limiter_allows_a_burst_then_the_rate() {
        let t0 = Instant::now();
        let mut r = RateLimiter::new(200);
        let burst = (0..1000).filter(|_| r.allow(t0)).count();
        assert_eq!(burst, 200, "one second's burst");
        // Half a second later, half a second's worth.
        let later = (0..1000).filter(|_| r.allow(t0 + Duration::from_millis(500))).count();
        assert_eq!(later, 100);
        // The bucket never holds more than one second's tokens.
        let after_idle = (0..1000).filter(|_| r.allow(t0 + Duration::from_secs(60))).count();
        assert_eq!(after_idle, 200);
    }

    #[test]
    fn backoff_doubles_to_its_cap_and_resets() {
        let mut b = Backoff::default();
        let pauses: Vec<Duration> = (0..10).map(|_| b.failed()).collect();
        assert_eq!(pauses[0], BACKOFF_MIN);
        assert_eq!(pauses[1], 2 * BACKOFF_MIN);
        assert!(pauses.windows(2).all(|w| w[1] >= w[0]), "{pauses:?}");
        assert_eq!(*pauses.last().unwrap(), BACKOFF_MAX, "{pauses:?}");
        b.succeeded();
        assert_eq!(b.failed(), BACKOFF_MIN);
    }
}
