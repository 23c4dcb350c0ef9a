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
        // Once expired, every further poll fails too: a reader that polled
        // again must never see the end of a body that never arrived.
        if this.expired {
            return Poll::Ready(Some(Err(timed_out_error(this.limit))));
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Pending if this.timer.as_mut().poll(cx).is_ready() => {
                this.expired = true;
                Poll::Ready(Some(Err(timed_out_error(this.limit))))
            }
            other => other,
        }
    }
}

fn timed_out_error(limit: Duration) -> PayloadError {
    let message = format!(
        "the request body did not arrive within {} s",
        limit.as_secs()
    );
    PayloadError::Io(io::Error::new(io::ErrorKind::TimedOut, message))
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

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;
    use futures_core::Stream;

    use super::*;

    struct Stalled;

    impl Stream for Stalled {
        type Item = Result<Bytes, PayloadError>;

        fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            Poll::Pending
        }
    }

    async fn next(payload: &mut Payload) -> Option<Result<Bytes, PayloadError>> {
        std::future::poll_fn(|cx| Pin::new(&mut *payload).poll_next(cx)).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_fails_and_keeps_failing() {
        let mut request = TestRequest::post().to_srv_request();
        request.set_payload(Payload::Stream {
            payload: Box::pin(Stalled),
        });
        bound_body(&mut request, Duration::from_secs(5));
        let mut payload = request.take_payload();
        let started = tokio::time::Instant::now();
        for poll in 0..3 {
            match next(&mut payload).await {
                Some(Err(error)) => assert!(timed_out(&error), "poll {poll}: {error}"),
                other => panic!("poll {poll}: expected the timeout, got {other:?}"),
            }
        }
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }
}
