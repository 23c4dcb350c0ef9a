//! Building and running the application: bind first (so tests can use port
//! 0 and learn the port), connect, migrate, then serve.

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::web::{self, Data};
use actix_web::{App, HttpResponse, HttpServer};
use tokio::task::JoinHandle;

use crate::clock::Clock;
use crate::config::{Config, ConfigError};
use crate::context::Context;
use crate::drain::{self, DrainSignal};
use crate::http::ApiError;
use crate::metrics::Metrics;
use crate::session::SessionKeys;
use crate::store::{Store, StoreError};
use crate::{admin, http};

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub struct Application {
    port: u16,
    server: Server,
    store: Store,
    drain: JoinHandle<()>,
}

pub async fn connect_store(config: &Config) -> Result<Store, StoreError> {
    Store::connect(&config.database_url, &config.database).await
}

impl Application {
    pub async fn build(config: Config, clock: Arc<dyn Clock>) -> Result<Self, StartupError> {
        let bind_error = |source| StartupError::Bind {
            address: config.listen.clone(),
            source,
        };
        let listener = TcpListener::bind(&config.listen).map_err(bind_error)?;
        let port = listener.local_addr().map_err(bind_error)?.port();
        let store = connect_store(&config).await?;
        store.migrate().await?;

        let context = Data::new(Context {
            store: store.clone(),
            sources: config
                .sources
                .into_iter()
                .map(|s| (s.name.to_string(), Arc::new(s)))
                .collect::<HashMap<_, _>>(),
            clock,
            metrics: Metrics::default(),
            drain: DrainSignal::default(),
            release_sweep: config.release_sweep,
            sessions: SessionKeys::new(&config.admin.token, config.admin.session_ttl_secs),
            admin_token: config.admin.token,
            max_body_bytes: config.max_body_bytes,
        });
        // Sweeps at once: releases a crash interrupted are finished first.
        let drain = drain::spawn(context.clone().into_inner());
        let mut server = HttpServer::new(move || {
            App::new()
                .app_data(context.clone())
                .app_data(web::PathConfig::default().error_handler(|e, _| bad_request(e)))
                .app_data(web::QueryConfig::default().error_handler(|e, _| bad_request(e)))
                .app_data(web::FormConfig::default().error_handler(|e, _| bad_request(e)))
                .configure(http::configure)
                .configure(admin::configure)
                .default_service(web::to(not_found))
        })
        .shutdown_timeout(10);
        if let Some(workers) = config.workers {
            server = server.workers(workers);
        }
        let server = server.listen(listener).map_err(bind_error)?.run();
        Ok(Self {
            port,
            server,
            store,
            drain,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Serves until SIGINT/SIGTERM, finishing requests in flight (each one's
    /// transaction commits or rolls back as a whole).
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = self.server.await;
        // A drain step cut here rolls back whole; the next start finds it.
        self.drain.abort();
        self.store.close().await;
        result
    }
}

fn bad_request(error: impl std::fmt::Display) -> actix_web::Error {
    ApiError::BadRequest(error.to_string()).into()
}

async fn not_found() -> HttpResponse {
    actix_web::ResponseError::error_response(&ApiError::NotFound("route"))
}
