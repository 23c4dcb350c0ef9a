//! Every request head on a connection, not only the first, has the read
//! deadline to arrive. actix-http times only a connection's first head, so
//! a kept-alive connection could otherwise send one quick request and then
//! dribble the next head for as long as the connection may live.
//!
//! A connection's [`ConnectionPhase`] is shared by three parts: the app's
//! middleware, which says when a request has reached it (its head is
//! parsed, whatever it held: blank lines before it, `Expect:
//! 100-continue`) and when it has been answered; this wrapper around the
//! socket, which sees the first byte after an answer; and the connection's
//! task (`connection::serve`), which ends a connection whose deadline has
//! passed even when actix has stopped reading it. Nothing here parses HTTP.
//! The deadlines:
//! - a head: from the connection's opening, or from the first byte read
//!   after an answer, until its request reaches the app. The first head of
//!   a connection that is late gets a bare `408` (as actix answers one),
//!   then the connection is closed; a later one is closed without a word,
//!   since an answer of ours could still be in flight ahead of it;
//! - after an answer: nothing may keep the connection for more than twice
//!   the read deadline unless a head is arriving (a kept-alive connection
//!   idle for the read deadline is closed by actix's keep-alive timer; this
//!   ends a body actix drains after an early answer, and a client that does
//!   not read its answers).
//!
//! While a request is being served nothing here times it: its body has the
//! body reader's deadline (`deadline`), its handler the database's.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::gate::Slot;

/// The metrics label of a connection whose client did not take its answers.
pub const STALLED_AFTER_ANSWER: &str = "stalled_after_answer";

/// Answered when a connection's first head is late, before it is closed.
const TIMED_OUT: &[u8] =
    b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// How long the connection's task waits past a head's deadline before it
/// closes the connection itself: the wrapper answers `408` first.
const GRACE: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// A head is arriving, timed.
    Head,
    /// A request is being served.
    Serving,
    /// Its answer has been produced: the next byte starts a new head.
    Answered,
}

#[derive(Debug)]
struct State {
    phase: Cell<Phase>,
    /// When the current phase must have ended (none while serving).
    deadline: Cell<Option<Instant>>,
    answers: Cell<u64>,
    /// The socket took none of our last write: the client is not reading.
    /// (The `408` of a late first head is written past this record, on
    /// purpose: it is best effort, and the connection ends with it.)
    writes_blocked: Cell<bool>,
    /// An answer has been produced and not yet flushed out whole.
    unflushed: Cell<bool>,
    limit: Duration,
    opened: Instant,
    /// The gate's view of the connection: idle once an answer is fully
    /// written, busy when a next request arrives (none in unit tests).
    slot: Option<Arc<Slot>>,
    /// Whether the gate was told it is idle (and not busy again since).
    idle: Cell<bool>,
}

/// Where one connection is (a connection lives on one worker thread).
#[derive(Debug, Clone)]
pub struct ConnectionPhase(Rc<State>);

impl ConnectionPhase {
    /// A connection just opened: its first head is timed from now.
    pub fn new(limit: Duration) -> Self {
        Self::admitted(limit, None)
    }

    /// A connection the gate admitted with `slot`.
    pub fn admitted(limit: Duration, slot: Option<Arc<Slot>>) -> Self {
        let now = Instant::now();
        Self(Rc::new(State {
            phase: Cell::new(Phase::Head),
            deadline: Cell::new(Some(now + limit)),
            answers: Cell::new(0),
            writes_blocked: Cell::new(false),
            unflushed: Cell::new(false),
            limit,
            opened: now,
            slot,
            idle: Cell::new(false),
        }))
    }

    /// Tells the gate the connection is in use again, if it had been told
    /// it was idle.
    fn busy(&self) {
        if self.0.idle.replace(false)
            && let Some(slot) = &self.0.slot
        {
            // Reclaimed meanwhile: the connection's task closes it.
            let _ = slot.busy();
        }
    }

    /// Every byte written has gone out: after an answer, the connection
    /// is idle until a next request arrives.
    fn flushed(&self) {
        self.0.unflushed.set(false);
        if self.0.phase.get() == Phase::Answered
            && !self.0.idle.get()
            && let Some(slot) = &self.0.slot
        {
            self.0.idle.set(true);
            slot.idle();
        }
    }

    fn set(&self, phase: Phase, deadline: Option<Instant>) {
        self.0.phase.set(phase);
        self.0.deadline.set(deadline);
    }

    /// A request has reached the app: its head is complete.
    pub fn serving(&self) {
        self.busy();
        self.set(Phase::Serving, None);
    }

    /// The request has been answered.
    pub fn answered(&self) {
        self.0.answers.set(self.0.answers.get() + 1);
        self.0.unflushed.set(true);
        self.set(Phase::Answered, Some(Instant::now() + 2 * self.0.limit));
    }

    /// A byte has arrived: after an answer, the first of a new head.
    fn byte_read(&self) {
        if self.0.phase.get() == Phase::Answered {
            self.busy();
            self.set(Phase::Head, Some(Instant::now() + self.0.limit));
        }
    }

    /// What a late head is counted as. A client that does not read its
    /// answers still sends heads: actix reads them but parses none while
    /// its answers cannot be written, so the head is late because of the
    /// stall, and is counted as one.
    pub fn late_head(&self) -> &'static str {
        match self.0.writes_blocked.get() {
            true => STALLED_AFTER_ANSWER,
            false => "head_timeout",
        }
    }

    /// Whether answers are waiting on a client that does not take them:
    /// the socket took none of our last write, or an answer was never
    /// flushed out whole.
    pub fn stalled(&self) -> bool {
        self.0.writes_blocked.get() || self.0.unflushed.get()
    }

    /// How long ago the connection was opened.
    pub fn age(&self) -> Duration {
        self.0.opened.elapsed()
    }

    fn head_deadline(&self) -> Option<Instant> {
        (self.0.phase.get() == Phase::Head)
            .then(|| self.0.deadline.get())
            .flatten()
    }

    /// Resolves once the connection is past its deadline (a head's with a
    /// grace for the wrapper's `408`), with what to count it as:
    /// `head_timeout` or `stalled_after_answer` (`late_head`).
    pub async fn overdue(&self) -> &'static str {
        loop {
            let wake = match (self.0.phase.get(), self.0.deadline.get()) {
                (Phase::Head, Some(deadline)) => deadline + GRACE,
                (_, Some(deadline)) => deadline,
                // Serving: looked at again within the read deadline.
                (_, None) => Instant::now() + self.0.limit,
            };
            tokio::time::sleep_until(wake).await;
            let now = Instant::now();
            match (self.0.phase.get(), self.0.deadline.get()) {
                (Phase::Head, Some(deadline)) if now >= deadline + GRACE => {
                    return self.late_head();
                }
                (Phase::Answered, Some(deadline)) if now >= deadline => {
                    return STALLED_AFTER_ANSWER;
                }
                _ => {}
            }
        }
    }
}

pub struct HeadDeadline<T> {
    io: T,
    phase: ConnectionPhase,
    /// Wakes the connection at a head's deadline (set to the deadline it
    /// was last set for).
    timer: Pin<Box<Sleep>>,
    timer_for: Option<Instant>,
    /// Something was written on this connection: no `408` of ours.
    wrote: bool,
}

impl<T> HeadDeadline<T> {
    pub fn new(io: T, phase: ConnectionPhase) -> Self {
        Self {
            io,
            phase,
            timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
            timer_for: None,
            wrote: false,
        }
    }

    /// The phase the app's middleware moves.
    pub fn phase(&self) -> ConnectionPhase {
        self.phase.clone()
    }

    /// The timer set for the current head's deadline; `None` if no head is
    /// being timed.
    fn head_timer(&mut self) -> Option<Pin<&mut Sleep>> {
        let deadline = self.phase.head_deadline()?;
        if self.timer_for != Some(deadline) {
            self.timer.as_mut().reset(deadline);
            self.timer_for = Some(deadline);
        }
        Some(self.timer.as_mut())
    }
}

impl<T: AsyncWrite + Unpin> HeadDeadline<T> {
    /// Fails the read of a late head; the connection's first head is
    /// answered 408 first (best effort: only what the socket takes at once).
    fn time_out(&mut self, cx: &mut Context<'_>) -> io::Error {
        if !self.wrote && self.phase.0.answers.get() == 0 {
            let _ = Pin::new(&mut self.io).poll_write(cx, TIMED_OUT);
        }
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "a request head did not arrive within {} s",
                self.phase.0.limit.as_secs()
            ),
        )
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncRead for HeadDeadline<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) if buf.filled().len() > before => {
                this.phase.byte_read();
                // A head dribbled a byte at a time never leaves the read
                // pending: its deadline is checked here too.
                let late = this
                    .phase
                    .head_deadline()
                    .is_some_and(|deadline| Instant::now() >= deadline);
                match late {
                    true => Poll::Ready(Err(this.time_out(cx))),
                    false => Poll::Ready(Ok(())),
                }
            }
            Poll::Pending => {
                let late = this
                    .head_timer()
                    .is_some_and(|timer| timer.poll(cx).is_ready());
                match late {
                    true => Poll::Ready(Err(this.time_out(cx))),
                    false => Poll::Pending,
                }
            }
            other => other,
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for HeadDeadline<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.io).poll_write(cx, buf);
        match written {
            Poll::Ready(Ok(n)) if n > 0 => {
                this.wrote = true;
                this.phase.0.writes_blocked.set(false);
            }
            Poll::Pending => this.phase.0.writes_blocked.set(true),
            _ => {}
        }
        written
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flushed = Pin::new(&mut this.io).poll_flush(cx);
        // actix flushes once its buffer is written out: after an answer,
        // that is the whole answer (bodies here are never streamed).
        if let Poll::Ready(Ok(())) = flushed {
            this.phase.flushed();
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests;
