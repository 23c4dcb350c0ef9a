//! Every request head on a connection, not only the first, has the read
//! deadline to arrive. actix-http times only a connection's first head, so
//! a kept-alive connection could otherwise send one quick request and then
//! dribble the next head for as long as the connection may live.
//!
//! Two halves share the connection's [`ConnectionPhase`]: this wrapper
//! around the socket, and the app's middleware, which says when a request
//! has reached it (its head is parsed, whatever it held: blank lines before
//! it, `Expect: 100-continue`) and when it has been answered. So the
//! wrapper never parses HTTP. It times:
//! - a head: from the connection's opening, or from the first byte read
//!   after an answer, until its request reaches the middleware. A late head
//!   gets a bare `408` (as actix answers a late first head) and the read
//!   fails with `TimedOut`;
//! - what follows an answer: nothing may keep the connection for more than
//!   twice the read deadline after it unless a new head is arriving (a
//!   kept-alive connection idle for the read deadline is closed by actix's
//!   keep-alive timer; this also ends a body actix drains after an early
//!   answer, and a client that does not read its answer).
//!
//! While a request is being served nothing here times it: its body has the
//! body reader's deadline (`deadline`), its handler the database's.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Answered when a head is late, before the connection is closed.
const TIMED_OUT: &[u8] =
    b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// Far enough that a disarmed timer never wakes the connection.
const NEVER: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// A head is arriving, timed.
    Head,
    /// A request is being served.
    Serving,
    /// Its answer has been produced: the next byte starts a new head.
    Answered,
}

/// Where one connection is, shared by its socket wrapper and the app's
/// middleware (through the connection's extensions; a connection lives on
/// one worker thread).
#[derive(Debug, Clone)]
pub struct ConnectionPhase {
    phase: Rc<Cell<Phase>>,
    opened: std::time::Instant,
}

impl ConnectionPhase {
    fn new() -> Self {
        Self {
            phase: Rc::new(Cell::new(Phase::Head)),
            opened: std::time::Instant::now(),
        }
    }

    /// A request has reached the app: its head is complete.
    pub fn serving(&self) {
        self.phase.set(Phase::Serving);
    }

    /// The request has been answered.
    pub fn answered(&self) {
        self.phase.set(Phase::Answered);
    }

    /// How long ago the connection was opened.
    pub fn age(&self) -> Duration {
        self.opened.elapsed()
    }

    fn get(&self) -> Phase {
        self.phase.get()
    }
}

pub struct HeadDeadline<T> {
    io: T,
    limit: Duration,
    phase: ConnectionPhase,
    /// The phase the timer was last set for (`Serving`: disarmed).
    timed: Phase,
    timer: Pin<Box<Sleep>>,
    /// Written since the head began: no 408 may follow (actix answered
    /// already, an early error say).
    wrote: bool,
}

impl<T> HeadDeadline<T> {
    /// Times the connection's first head from now.
    pub fn new(io: T, limit: Duration) -> Self {
        Self {
            io,
            limit,
            phase: ConnectionPhase::new(),
            timed: Phase::Head,
            timer: Box::pin(tokio::time::sleep(limit)),
            wrote: false,
        }
    }

    /// The phase the app's middleware moves.
    pub fn phase(&self) -> ConnectionPhase {
        self.phase.clone()
    }

    /// Sets the timer for the phase the connection is in now, once per
    /// phase: a head's deadline, twice the limit after an answer, none
    /// while serving.
    fn time_phase(&mut self) {
        let phase = self.phase.get();
        if phase == self.timed {
            return;
        }
        let wait = match phase {
            Phase::Head => self.limit,
            Phase::Answered => 2 * self.limit,
            Phase::Serving => NEVER,
        };
        self.timer.as_mut().reset(Instant::now() + wait);
        self.timed = phase;
    }

    fn expired(&self) -> bool {
        self.timed != Phase::Serving && Instant::now() >= self.timer.deadline()
    }
}

impl<T: AsyncWrite + Unpin> HeadDeadline<T> {
    /// Ends the connection: a late head is answered 408 first (best effort:
    /// only what the socket takes at once) unless something was written
    /// for it already.
    fn time_out(&mut self, cx: &mut Context<'_>) -> io::Error {
        let head = self.timed == Phase::Head;
        if head && !self.wrote {
            let _ = Pin::new(&mut self.io).poll_write(cx, TIMED_OUT);
        }
        let what = match head {
            true => "a request head did not arrive",
            false => "the connection did not move on after an answer",
        };
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{what} within {} s", self.limit.as_secs()),
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
        this.time_phase();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) if buf.filled().len() > before => {
                if this.phase.get() == Phase::Answered {
                    // The first byte of the next head.
                    this.phase.phase.set(Phase::Head);
                    this.wrote = false;
                    this.time_phase();
                }
                // A head dribbled a byte at a time never leaves the read
                // pending: its deadline is checked here too.
                if this.expired() {
                    return Poll::Ready(Err(this.time_out(cx)));
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending
                if this.timed != Phase::Serving && this.timer.as_mut().poll(cx).is_ready() =>
            {
                Poll::Ready(Err(this.time_out(cx)))
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
        // An answer being written starts the time after it.
        this.time_phase();
        let written = Pin::new(&mut this.io).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.wrote = true;
        }
        written
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests;
