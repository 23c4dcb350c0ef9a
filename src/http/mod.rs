//! actix routes and extractors only: no SQL, no crypto. Handlers extract,
//! call a use case, and map the result.

mod body;
pub mod connection;
pub mod deadline;
pub mod error;
pub mod form;
pub mod gate;
pub mod head_deadline;
pub mod health;
pub mod metrics;
pub mod routes;
pub mod token;
pub mod webhook;

use actix_web::web;

pub use body::read_limited;
pub use error::ApiError;
use routes::Endpoint;

/// The provider-facing and probe routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        Endpoint::new("/webhooks/{source}")
            .post(webhook::receive_webhook)
            .finish(),
    )
    .service(Endpoint::new("/").get(health::index).finish())
    .service(Endpoint::new("/healthz").get(health::healthz).finish())
    .service(Endpoint::new("/readyz").get(health::readyz).finish())
    .service(Endpoint::new("/metrics").get(metrics::metrics).finish());
}

/// A relay's own listener (`hookledger relay --metrics-listen`): the
/// probes and `/metrics`, behind the same token as `serve`'s.
pub fn configure_relay(cfg: &mut web::ServiceConfig) {
    cfg.service(Endpoint::new("/healthz").get(health::healthz).finish())
        .service(Endpoint::new("/readyz").get(health::readyz).finish())
        .service(Endpoint::new("/metrics").get(metrics::metrics).finish());
}
