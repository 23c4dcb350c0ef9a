//! The HTTP server: its listening socket (bound here, or passed by systemd),
//! every accepted connection admitted by the gate or closed before a byte
//! is read, each request head timed (`HeadDeadline`), served within its
//! lifetime, and reaching the actix app.

use std::net::TcpListener;
use std::time::Duration;

use actix_http::error::DispatchError;
use actix_http::{HttpService, KeepAlive, Protocol};
use actix_server::Server;
use actix_service::{ServiceFactoryExt, apply_fn_factory, fn_service, map_config};
use actix_web::dev::AppConfig;
use actix_web::web::Data;
use tokio::net::TcpStream;

use crate::config::Config;
use crate::context::Context;
use crate::http::connection;
use crate::http::gate::ConnectionGate;
use crate::http::head_deadline::{ConnectionPhase, HeadDeadline};

/// The first listening socket systemd passed (socket activation:
/// `LISTEN_FDS`, and `LISTEN_PID` naming this process), if any. The socket
/// belongs to systemd, which keeps it open while this process restarts, so
/// connections wait in its backlog instead of being refused. Call before
/// any other thread starts: taking the sockets removes `LISTEN_FDS` and
/// `LISTEN_PID` from the environment, safe only while the process has one
/// thread. An error names a passed descriptor that is no TCP listener.
pub fn inherited_listener() -> Result<Option<TcpListener>, String> {
    let mut passed = listenfd::ListenFd::from_env();
    let count = passed.len();
    match passed.take_tcp_listener(0) {
        Ok(listener) => {
            if count > 1 {
                tracing::warn!("systemd passed {count} sockets; serving on the first only");
            }
            Ok(listener)
        }
        Err(e) => Err(format!(
            "the socket systemd passed (LISTEN_FDS) is not a TCP listener: {e}"
        )),
    }
}

/// Serves the app on `listener`; `lifetime` bounds a connection (twice
/// it, hard) and closes one that answers past it.
pub fn http_server(
    listener: TcpListener,
    config: &Config,
    context: Data<Context>,
    lifetime: Duration,
) -> std::io::Result<Server> {
    let limits = config.limits.clone();
    let gate = ConnectionGate::new(&limits);
    let capacity = gate.capacity();
    let local = listener.local_addr()?;
    let factory = move || {
        let read_timeout = limits.read_timeout;
        let http = HttpService::build()
            // Every head is timed by `HeadDeadline`, the first too
            // (actix would time only the first).
            .client_request_timeout(Duration::ZERO)
            // An idle kept-alive connection is closed as a head that
            // never came would be.
            .keep_alive(KeepAlive::Timeout(read_timeout))
            .on_connect_ext(|io: &HeadDeadline<TcpStream>, extensions| {
                extensions.insert(io.phase());
            })
            .local_addr(local)
            .client_disconnect_timeout(Duration::from_secs(1))
            .finish(map_config(
                crate::app::app(
                    context.clone(),
                    read_timeout,
                    lifetime.saturating_sub(2 * read_timeout),
                ),
                |()| AppConfig::default(),
            ));
        let http = fn_service(move |(io, phase): (TcpStream, ConnectionPhase)| {
            let peer = io.peer_addr().ok();
            let _ = io.set_nodelay(true);
            let io = HeadDeadline::new(io, phase);
            std::future::ready(Ok::<_, DispatchError>((io, Protocol::Http1, peer)))
        })
        .and_then(http);
        let (gate, context) = (gate.clone(), context.clone().into_inner());
        apply_fn_factory(http, move |io: TcpStream, service| {
            let bounds = (read_timeout, 2 * lifetime);
            connection::serve(&gate, &context, bounds, io, service)
        })
    };
    let mut server = Server::build()
        // actix's own bound is per worker: never below what the gate
        // admits in all, or one worker would stop accepting first.
        .max_concurrent_connections(capacity)
        // Signals are ours (run_until_stopped): actix would stop at once
        // on Ctrl-C, cutting answers off after their commit.
        .disable_signals()
        .shutdown_timeout(config.shutdown_timeout.as_secs());
    if let Some(workers) = config.workers {
        server = server.workers(workers);
    }
    Ok(server.listen("hookledger", listener, factory)?.run())
}
