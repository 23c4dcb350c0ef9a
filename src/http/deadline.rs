//! The body-read deadline. actix bounds the wait for a request head; nothing
//! bounds the wait for its body, so a client that sends `Content-Length:
//! 1000` and ten bytes would hold its connection forever. Every request body
//! is wrapped in a stream that fails with `TimedOut` once the deadline
//! passes; whoever reads it answers 408 and the connection is closed.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::HttpMessage;
use actix_web::dev::{Payload, ServiceRequest};
use actix_web::error::PayloadError;
use actix_web::web::Bytes;
use futures_core::Stream;
use tokio::time::Sleep;

struct Deadline {
    inner: Payload,
    timer: Pin<Box<Sleep>>,
    limit: Duration,
    expired: bool,
}

impl Stream for Deadline {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.expired {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Pending if this.timer.as_mut().poll(cx).is_ready() => {
                this.expired = true;
                let message = format!(
                    "the request body did not arrive within {} s",
                    this.limit.as_secs()
                );
                Poll::Ready(Some(Err(PayloadError::Io(io::Error::new(
                    io::ErrorKind::TimedOut,
                    message,
                )))))
            }
            other => other,
        }
    }
}

/// Gives the request's body, if it has one, `limit` from now to arrive.
pub fn bound_body(request: &mut ServiceRequest, limit: Duration) {
    match request.take_payload() {
        Payload::None => {}
        inner => request.set_payload(Payload::Stream {
            payload: Box::pin(Deadline {
                inner,
                timer: Box::pin(tokio::time::sleep(limit)),
                limit,
                expired: false,
            }),
        }),
    }
}

/// Whether a body read failed because its deadline passed.
pub fn timed_out(error: &PayloadError) -> bool {
    matches!(error, PayloadError::Io(e) if e.kind() == io::ErrorKind::TimedOut)
}
