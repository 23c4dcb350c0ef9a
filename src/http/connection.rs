//! One accepted TCP connection: admitted by the [`ConnectionGate`] or closed
//! before a byte is read, served within a hard lifetime, and whatever ended
//! it badly (a malformed head, an I/O error, the lifetime) counted in
//! metrics and logged within the log budget, since any client can cause it.
//! A head that does not arrive in time (`HeadDeadline`: answered `408`) is
//! counted as `head_timeout` (`stalled_after_answer` where the client is
//! not reading our answers) and not logged: a port scanner that connects
//! and waits is not news.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use actix_http::ConnectionType;
use actix_http::error::DispatchError;
use actix_service::Service;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use tokio::net::TcpStream;

use super::gate::{CLOSED_IDLE_FOR_ROOM, ConnectionGate};
use super::head_deadline::{ConnectionPhase, STALLED_AFTER_ANSWER};
use crate::context::Context;

/// Serves `io` with `service` if the gate admits it: with the connection's
/// phase (`HeadDeadline`), whose deadlines end it here too, where actix has
/// stopped reading it; and within the hard `lifetime`.
pub fn serve<S>(
    gate: &Arc<ConnectionGate>,
    context: &Arc<Context>,
    (read_timeout, lifetime): (Duration, Duration),
    io: TcpStream,
    service: &S,
) -> impl Future<Output = Result<(), DispatchError>> + use<S>
where
    S: Service<(TcpStream, ConnectionPhase), Response = (), Error = DispatchError>,
{
    // Admitted or closed before a byte is read: a flood from one address
    // costs an accept and a close, nothing more.
    let call = match gate.admit(io.peer_addr().ok().map(|a| a.ip())) {
        Ok(ticket) => {
            let phase = ConnectionPhase::admitted(read_timeout, Some(ticket.slot()));
            let call = service.call((io, phase.clone()));
            Some((ticket, phase, call))
        }
        Err(refusal) => {
            context.metrics.connection(refusal.as_str());
            None
        }
    };
    let context = context.clone();
    async move {
        let Some((ticket, phase, call)) = call else {
            return Ok(());
        };
        // Dropping the dispatcher (a phase overdue, the lifetime) closes
        // the socket: counted first, so that whoever sees it closed finds
        // it counted.
        let served = {
            let call = tokio::time::timeout(lifetime, call);
            tokio::pin!(call);
            tokio::select! {
                // Ended by actix itself with answers the client never took
                // (under load its keep-alive timer can run out before the
                // phase is overdue): the same stall.
                served = &mut call => match served {
                    Ok(Ok(()) | Err(DispatchError::DisconnectTimeout)) if phase.stalled() => {
                        context.metrics.connection(STALLED_AFTER_ANSWER);
                        Ok(Ok(()))
                    }
                    served => served,
                },
                overdue = phase.overdue() => {
                    context.metrics.connection(overdue);
                    Ok(Ok(()))
                }
                // Idle between requests, its place given to another: closed
                // with nothing unread or unwritten, so cleanly.
                () = ticket.reclaimed() => {
                    context.metrics.connection(CLOSED_IDLE_FOR_ROOM);
                    Ok(Ok(()))
                }
            }
        };
        drop(ticket);
        match served {
            Ok(Ok(())) => {}
            // Counted by the dispatcher's end: already closed, which a
            // test reading the count must allow for.
            Ok(Err(error)) => match kind(&error) {
                "head_timeout" => context.metrics.connection(phase.late_head()),
                kind => report(&context, kind, &error.to_string()),
            },
            Err(_) => report(
                &context,
                "lifetime_exceeded",
                &format!("closed after {} s", lifetime.as_secs()),
            ),
        }
        // actix-server ignores the result; it has been reported here.
        Ok(())
    }
}

/// A request has reached the app: its connection's head deadline stops
/// (`HeadDeadline`); the phase to mark answered afterwards.
pub fn serving(request: &ServiceRequest) -> Option<ConnectionPhase> {
    let phase = request.conn_data::<ConnectionPhase>()?.clone();
    phase.serving();
    Some(phase)
}

/// Closes the connection once this answer is written if it is older than
/// `max_age`, so that a next request could not outlive the connection's
/// hard lifetime.
pub fn close_if_old<B>(
    phase: Option<&ConnectionPhase>,
    response: &mut ServiceResponse<B>,
    max_age: Duration,
) {
    if phase.is_some_and(|phase| phase.age() > max_age) {
        close_after(response);
    }
}

/// Closes the connection once this answer is written (a draining
/// instance's answers: the client's next request opens a connection a
/// load balancer can send elsewhere).
pub fn close_after<B>(response: &mut ServiceResponse<B>) {
    response
        .response_mut()
        .head_mut()
        .set_connection_type(ConnectionType::Close);
}

/// The metrics label of a connection that ended in an error.
fn kind(error: &DispatchError) -> &'static str {
    match error {
        DispatchError::Parse(_) => "malformed_request",
        DispatchError::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => "head_timeout",
        DispatchError::Io(_) => "io_error",
        DispatchError::DisconnectTimeout => "disconnect_timeout",
        _ => "other_error",
    }
}

fn report(context: &Context, kind: &'static str, detail: &str) {
    context.metrics.connection(kind);
    if context
        .log_budget
        .admit("connection errors", &format!("of kind {kind}"))
    {
        tracing::warn!(kind, "connection ended: {detail}");
    }
}
