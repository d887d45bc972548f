//! The two kinds of queue between the connection threads and the simulation thread.
//!
//! - [`Inbox`]: pages' commands to the simulation. Each page has its own bounded
//!   queue (a full one is the page's problem: it is told `busy`), and the simulation
//!   serves the pages in turn, one command each, so a page that sends many commands
//!   waits behind its own and nobody else's. A long `step` is cut into slices and
//!   put back at the head of its page's queue, keeping that page's order (a `query`
//!   after a `step` sees the stepped state).
//! - [`Outbox`]: the simulation's messages to one page, drained by that page's
//!   writer thread. Bounded too: frames beyond [`FRAME_QUEUE`] are skipped (a slow
//!   page sees fewer frames), text beyond [`SEND_QUEUE`] is dropped; the simulation
//!   never waits for a page.
//!
//! Both block with a condition variable: a waiting thread sleeps until there is
//! something for it or its deadline passes, never polling.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::protocol::{Reply, Request};

/// A connected page.
pub type PageId = u64;

/// Frames waiting for one page before further frames to it are skipped.
pub const FRAME_QUEUE: usize = 4;
/// Text messages waiting for one page before further ones are dropped (only a page
/// that has stopped reading gets there; it is dropped soon after, see
/// [`crate::limits::SLOW_PAGE`]).
pub const SEND_QUEUE: usize = 256;

/// Locks, ignoring poisoning: the queues stay consistent whatever a panicking
/// holder was doing (every update is a single push or pop).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A page arriving or leaving.
#[derive(Debug)]
pub enum Event {
    /// A page connected; its messages go to this outbox.
    Join(PageId, Arc<Outbox>),
    /// A page went away.
    Leave(PageId),
}

/// What the simulation thread is given next.
#[derive(Debug)]
pub enum Work {
    /// A page came or went.
    Event(Event),
    /// A page's command.
    Command(PageId, Request),
}

/// The page's command queue is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("busy: {0} commands are waiting for this page; this one was dropped")]
pub struct Busy(pub usize);

#[derive(Debug, Default)]
struct InboxState {
    events: VecDeque<Event>,
    queues: BTreeMap<PageId, VecDeque<Request>>,
    /// Pages with commands waiting, in the order they will be served.
    turns: VecDeque<PageId>,
}

/// Commands from every page to the simulation thread; see the module docs.
#[derive(Debug)]
pub struct Inbox {
    state: Mutex<InboxState>,
    wake: Condvar,
    capacity: usize,
}

impl Inbox {
    /// An inbox holding up to `capacity` commands per page.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        Self { state: Mutex::default(), wake: Condvar::new(), capacity: capacity.max(1) }
    }

    /// Page `id` connected.
    pub fn join(&self, id: PageId, outbox: Arc<Outbox>) {
        let mut s = lock(&self.state);
        s.queues.insert(id, VecDeque::new());
        s.events.push_back(Event::Join(id, outbox));
        self.wake.notify_one();
    }

    /// Page `id` went away: its waiting commands are dropped.
    pub fn leave(&self, id: PageId) {
        let mut s = lock(&self.state);
        s.queues.remove(&id);
        s.turns.retain(|&p| p != id);
        s.events.push_back(Event::Leave(id));
        self.wake.notify_one();
    }

    /// Queues a command from page `id`, unless its queue is full.
    pub fn push(&self, id: PageId, request: Request) -> Result<(), Busy> {
        let mut s = lock(&self.state);
        let Some(queue) = s.queues.get_mut(&id) else { return Ok(()) }; // gone: nobody to answer
        if queue.len() >= self.capacity {
            return Err(Busy(queue.len()));
        }
        queue.push_back(request);
        if queue.len() == 1 {
            s.turns.push_back(id);
        }
        self.wake.notify_one();
        Ok(())
    }

    /// Puts the rest of an unfinished command back at the head of page `id`'s queue;
    /// the page waits for its next turn (behind every page now waiting).
    pub fn put_back(&self, id: PageId, request: Request) {
        let mut s = lock(&self.state);
        let Some(queue) = s.queues.get_mut(&id) else { return };
        queue.push_front(request);
        if queue.len() == 1 {
            s.turns.push_back(id);
        }
    }

    /// The next work: arrivals and departures first, then one command of the page
    /// whose turn it is. Waits until there is some or `deadline` passes (`None`:
    /// waits as long as it takes); `None` at the deadline.
    pub fn next(&self, deadline: Option<Instant>) -> Option<Work> {
        let mut s = lock(&self.state);
        loop {
            if let Some(event) = s.events.pop_front() {
                return Some(Work::Event(event));
            }
            if let Some(work) = Self::take_turn(&mut s) {
                return Some(work);
            }
            match deadline {
                None => s = self.wake.wait(s).unwrap_or_else(PoisonError::into_inner),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return None;
                    }
                    s = self.wake.wait_timeout(s, left).unwrap_or_else(PoisonError::into_inner).0;
                }
            }
        }
    }

    fn take_turn(s: &mut InboxState) -> Option<Work> {
        while let Some(id) = s.turns.pop_front() {
            let Some(queue) = s.queues.get_mut(&id) else { continue };
            let Some(request) = queue.pop_front() else { continue };
            if !queue.is_empty() {
                s.turns.push_back(id);
            }
            return Some(Work::Command(id, request));
        }
        None
    }
}

/// A message for a page's writer thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outgoing {
    /// JSON text (shared by every page it is broadcast to).
    Text(Arc<str>),
    /// A binary frame (shared likewise).
    Frame(Arc<[u8]>),
    /// A ping (the page is silent; is it still there?).
    Ping,
    /// The answer to the page's ping.
    Pong(Vec<u8>),
    /// Close with this code and reason, then hang up.
    Close(u16, String),
}

impl From<&Reply> for Outgoing {
    fn from(reply: &Reply) -> Self {
        Outgoing::Text(Arc::from(reply.to_json()))
    }
}

#[derive(Debug, Default)]
struct OutboxState {
    items: VecDeque<Outgoing>,
    frames: usize,
    texts: usize,
    closed: bool,
}

/// Messages for one page; see the module docs.
#[derive(Debug, Default)]
pub struct Outbox {
    state: Mutex<OutboxState>,
    ready: Condvar,
}

impl Outbox {
    /// An empty outbox.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues a message. Frames beyond [`FRAME_QUEUE`] and text beyond
    /// [`SEND_QUEUE`] are dropped; control messages always go. False when the page
    /// is gone (the outbox is closed).
    pub fn send(&self, message: Outgoing) -> bool {
        let mut s = lock(&self.state);
        if s.closed {
            return false;
        }
        match message {
            Outgoing::Frame(_) if s.frames >= FRAME_QUEUE => return true,
            Outgoing::Frame(_) => s.frames += 1,
            Outgoing::Text(_) if s.texts >= SEND_QUEUE => return true,
            Outgoing::Text(_) => s.texts += 1,
            Outgoing::Ping | Outgoing::Pong(_) | Outgoing::Close(..) => {}
        }
        s.items.push_back(message);
        self.ready.notify_one();
        true
    }

    /// Sends `Close` and lets nothing in after it.
    pub fn close(&self, code: u16, reason: &str) {
        let mut s = lock(&self.state);
        if !s.closed {
            s.items.push_back(Outgoing::Close(code, reason.to_owned()));
            s.closed = true;
            self.ready.notify_one();
        }
    }

    /// Lets nothing more in and wakes the writer, which stops (the page is gone).
    pub fn shut(&self) {
        let mut s = lock(&self.state);
        s.closed = true;
        s.items.clear();
        self.ready.notify_one();
    }

    /// For the writer: everything waiting, after sleeping until there is something;
    /// empty once the outbox is closed and drained.
    pub fn take(&self) -> Vec<Outgoing> {
        let mut s = lock(&self.state);
        while s.items.is_empty() && !s.closed {
            s = self.ready.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        s.frames = 0;
        s.texts = 0;
        s.items.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn step(n: u64) -> Request {
        Request::Step { n }
    }

    fn command(work: Option<Work>) -> (PageId, Request) {
        match work {
            Some(Work::Command(id, r)) => (id, r),
            other => panic!("expected a command, got {other:?}"),
        }
    }

    #[test]
    fn pages_are_served_in_turn_and_each_queue_is_bounded() {
        let inbox = Inbox::new(3);
        for id in [1, 2] {
            inbox.join(id, Arc::new(Outbox::new()));
            assert!(matches!(inbox.next(None), Some(Work::Event(Event::Join(j, _))) if j == id));
        }
        for n in 1..=3 {
            inbox.push(1, step(n)).unwrap();
        }
        assert_eq!(inbox.push(1, step(4)), Err(Busy(3)), "page 1's queue is full");
        inbox.push(2, Request::Status).unwrap();
        inbox.push(2, Request::Pause).unwrap();
        let order: Vec<(PageId, Request)> = (0..5).map(|_| command(inbox.next(Some(Instant::now())))).collect();
        assert_eq!(
            order,
            vec![(1, step(1)), (2, Request::Status), (1, step(2)), (2, Request::Pause), (1, step(3))],
            "one command per page per turn"
        );
        assert!(inbox.next(Some(Instant::now() + Duration::from_millis(20))).is_none(), "empty: waits, then None");
    }

    #[test]
    fn an_unfinished_step_goes_back_to_the_head_of_its_page_behind_the_other_pages() {
        let inbox = Inbox::new(8);
        for id in [1, 2, 3] {
            inbox.join(id, Arc::new(Outbox::new()));
            inbox.next(None);
        }
        inbox.push(1, step(1000)).unwrap();
        inbox.push(1, Request::Query { particles: vec![0] }).unwrap();
        inbox.push(2, Request::Status).unwrap();
        inbox.push(3, Request::Status).unwrap();
        assert_eq!(command(inbox.next(None)), (1, step(1000)));
        inbox.put_back(1, step(990));
        let rest: Vec<(PageId, Request)> = (0..4).map(|_| command(inbox.next(None))).collect();
        assert_eq!(
            rest,
            vec![
                (2, Request::Status),
                (3, Request::Status),
                (1, step(990)),
                (1, Request::Query { particles: vec![0] })
            ]
        );
    }

    #[test]
    fn a_page_that_leaves_loses_its_commands() {
        let inbox = Inbox::new(8);
        inbox.join(7, Arc::new(Outbox::new()));
        inbox.next(None);
        inbox.push(7, Request::Status).unwrap();
        inbox.leave(7);
        assert!(matches!(inbox.next(None), Some(Work::Event(Event::Leave(7)))));
        assert!(inbox.next(Some(Instant::now())).is_none());
        assert_eq!(inbox.push(7, Request::Status), Ok(()), "a gone page's command is dropped quietly");
        assert!(inbox.next(Some(Instant::now())).is_none());
    }

    #[test]
    fn a_waiting_simulation_wakes_for_a_command() {
        let inbox = Arc::new(Inbox::new(8));
        inbox.join(1, Arc::new(Outbox::new()));
        inbox.next(None);
        let sender = Arc::clone(&inbox);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            sender.push(1, Request::Play).unwrap();
        });
        let t0 = Instant::now();
        assert_eq!(command(inbox.next(None)), (1, Request::Play));
        assert!(t0.elapsed() < Duration::from_secs(5));
        t.join().unwrap();
    }

    #[test]
    fn outboxes_skip_frames_and_drop_text_beyond_their_bounds() {
        let out = Outbox::new();
        let frame: Arc<[u8]> = Arc::from(vec![1u8, 2, 3]);
        for _ in 0..10 {
            assert!(out.send(Outgoing::Frame(frame.clone())));
        }
        for _ in 0..SEND_QUEUE + 10 {
            assert!(out.send(Outgoing::Text(Arc::from("{}"))));
        }
        out.send(Outgoing::Ping);
        let taken = out.take();
        assert_eq!(taken.iter().filter(|m| matches!(m, Outgoing::Frame(_))).count(), FRAME_QUEUE);
        assert_eq!(taken.iter().filter(|m| matches!(m, Outgoing::Text(_))).count(), SEND_QUEUE);
        assert_eq!(taken.last(), Some(&Outgoing::Ping), "control messages always go");
        // Taking makes room again.
        assert!(out.send(Outgoing::Frame(frame.clone())));
        assert_eq!(out.take().len(), 1);
        out.close(1000, "bye");
        assert!(!out.send(Outgoing::Frame(frame)), "closed");
        assert_eq!(out.take(), vec![Outgoing::Close(1000, "bye".into())]);
        assert!(out.take().is_empty(), "closed and drained");
    }
}
