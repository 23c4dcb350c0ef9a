//! Every request head on a connection, not only the first, has the read
//! deadline to arrive. actix-http times only a connection's first head, so
//! a kept-alive connection could otherwise send one quick request and then
//! dribble the next head for as long as the connection may live. This
//! wrapper around the socket starts a head's clock when the connection
//! opens, and again when the first byte after an answer arrives; the head
//! ends at its blank line. A head still unfinished at the deadline gets a
//! bare `408` (as actix answers a late first head) and the connection
//! fails with `TimedOut`.
//!
//! Bodies are not scanned: their deadline is the body reader's
//! (`deadline`). A client that pipelines (sends its next request before
//! the answer) may see that request's body timed as a head; no payment
//! provider pipelines, and such a body then has the same bound anyway.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Answered when a head is late, before the connection is closed.
const TIMED_OUT: &[u8] =
    b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// A head is arriving, timed.
    Head,
    /// The head has arrived: its body, the handler, the answer.
    Rest,
    /// The answer has been written and flushed: waiting for the next
    /// request (actix's keep-alive timer closes an idle connection).
    Idle,
}

pub struct HeadDeadline<T> {
    io: T,
    limit: Duration,
    phase: Phase,
    timer: Pin<Box<Sleep>>,
    /// The last byte of the head seen so far was a line feed (carriage
    /// returns skipped): the next line feed ends the head.
    after_line: bool,
    /// actix wrote during this phase (an answer in `Rest`; an early error
    /// in `Head`, after which no 408 of ours may follow).
    wrote: bool,
}

impl<T> HeadDeadline<T> {
    /// Times the connection's first head from now.
    pub fn new(io: T, limit: Duration) -> Self {
        Self {
            io,
            limit,
            phase: Phase::Head,
            timer: Box::pin(tokio::time::sleep(limit)),
            after_line: false,
            wrote: false,
        }
    }

    pub fn get_ref(&self) -> &T {
        &self.io
    }

    fn start_head(&mut self) {
        self.phase = Phase::Head;
        self.after_line = false;
        self.wrote = false;
        self.timer.as_mut().reset(Instant::now() + self.limit);
    }

    /// Reads `bytes` of the head; true once its blank line has arrived.
    fn head_ends_in(&mut self, bytes: &[u8]) -> bool {
        for &byte in bytes {
            match byte {
                b'\n' if self.after_line => return true,
                b'\n' => self.after_line = true,
                b'\r' => {}
                _ => self.after_line = false,
            }
        }
        false
    }
}

impl<T: AsyncWrite + Unpin> HeadDeadline<T> {
    /// Answers 408 if nothing else was written for this head (best effort:
    /// only what the socket takes at once), then fails the read.
    fn time_out(&mut self, cx: &mut Context<'_>) -> io::Error {
        if !self.wrote {
            let _ = Pin::new(&mut self.io).poll_write(cx, TIMED_OUT);
        }
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "a request head did not arrive within {} s",
                self.limit.as_secs()
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
            Poll::Ready(Ok(())) => {
                let filled = buf.filled().len();
                if filled == before {
                    return Poll::Ready(Ok(()));
                }
                if this.phase == Phase::Idle {
                    this.start_head();
                }
                if this.phase == Phase::Head {
                    // A head dribbled a byte at a time never leaves the
                    // read pending: its deadline is checked here too.
                    if Instant::now() >= this.timer.deadline() {
                        return Poll::Ready(Err(this.time_out(cx)));
                    }
                    if this.head_ends_in(&buf.filled()[before..filled]) {
                        this.phase = Phase::Rest;
                        this.wrote = false;
                    }
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending
                if this.phase == Phase::Head && this.timer.as_mut().poll(cx).is_ready() =>
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
        let written = Pin::new(&mut this.io).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.wrote = true;
        }
        written
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flushed = Pin::new(&mut this.io).poll_flush(cx);
        // An answer written and flushed: the next byte starts a new head.
        if this.phase == Phase::Rest && this.wrote && matches!(flushed, Poll::Ready(Ok(()))) {
            this.phase = Phase::Idle;
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, duplex};

    use super::*;

    const LIMIT: Duration = Duration::from_secs(5);

    fn pair() -> (HeadDeadline<DuplexStream>, DuplexStream) {
        let (server, client) = duplex(4096);
        (HeadDeadline::new(server, LIMIT), client)
    }

    async fn read_some(server: &mut HeadDeadline<DuplexStream>) -> io::Result<Vec<u8>> {
        let mut buf = [0u8; 1024];
        let n = server.read(&mut buf).await?;
        Ok(buf[..n].to_vec())
    }

    /// A head, its answer, then the next head.
    async fn one_exchange(server: &mut HeadDeadline<DuplexStream>, client: &mut DuplexStream) {
        client
            .write_all(b"POST / HTTP/1.1\r\nA: b\r\n\r\n")
            .await
            .unwrap();
        read_some(server).await.unwrap();
        assert_eq!(server.phase, Phase::Rest);
        let answer = b"HTTP/1.1 200 OK\r\n\r\n";
        server.write_all(answer).await.unwrap();
        server.flush().await.unwrap();
        assert_eq!(server.phase, Phase::Idle);
        let mut read = vec![0u8; answer.len()];
        client.read_exact(&mut read).await.unwrap();
    }

    #[tokio::test]
    async fn a_head_ends_at_its_blank_line_however_it_is_cut() {
        for head in [&b"GET / HTTP/1.1\r\nA: b\r\n\r\n"[..], b"GET /\nA: b\n\n"] {
            for cut in 0..head.len() {
                let (server, _client) = duplex(8);
                let mut timed = HeadDeadline::new(server, LIMIT);
                let (first, second) = head.split_at(cut);
                let ended = timed.head_ends_in(first) || timed.head_ends_in(second);
                assert!(ended, "{cut}");
            }
        }
        let (server, _client) = duplex(8);
        let mut timed = HeadDeadline::new(server, LIMIT);
        assert!(!timed.head_ends_in(b"GET / HTTP/1.1\r\nA: b\r\n"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_later_head_that_stalls_is_answered_408_and_fails() {
        let (mut server, mut client) = pair();
        one_exchange(&mut server, &mut client).await;
        // Idle for longer than the limit is not a late head (actix's
        // keep-alive timer closes an idle connection).
        tokio::time::sleep(LIMIT * 3).await;
        client.write_all(b"POST / HTTP/1.1\r\nA:").await.unwrap();
        read_some(&mut server).await.unwrap();
        let error = read_some(&mut server).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        let mut answer = vec![0u8; TIMED_OUT.len()];
        client.read_exact(&mut answer).await.unwrap();
        assert_eq!(answer, TIMED_OUT);
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_dribbled_byte_by_byte_is_cut_at_the_deadline() {
        let (mut server, mut client) = pair();
        one_exchange(&mut server, &mut client).await;
        let mut sent = 0;
        let failed = loop {
            client.write_all(b"x").await.unwrap();
            sent += 1;
            match read_some(&mut server).await {
                Ok(_) => tokio::time::sleep(Duration::from_millis(500)).await,
                Err(error) => break error,
            }
        };
        assert_eq!(failed.kind(), io::ErrorKind::TimedOut);
        assert_eq!(sent, 11, "cut at the first byte past 5 s");
    }

    #[tokio::test(start_paused = true)]
    async fn heads_in_time_and_slow_bodies_pass() {
        let (mut server, mut client) = pair();
        for _ in 0..3 {
            one_exchange(&mut server, &mut client).await;
            tokio::time::sleep(LIMIT - Duration::from_millis(1)).await;
        }
        // A body is not a head: no deadline here, whatever it holds.
        client.write_all(b"POST / HTTP/1.1\r\n\r\n").await.unwrap();
        read_some(&mut server).await.unwrap();
        tokio::time::sleep(LIMIT * 2).await;
        client
            .write_all(b"body without a blank line")
            .await
            .unwrap();
        assert_eq!(read_some(&mut server).await.unwrap().len(), 25);
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_head_is_timed_from_the_start() {
        let started = Instant::now();
        let (mut server, _client) = pair();
        let error = read_some(&mut server).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), LIMIT);
    }
}
