//! actix routes and extractors only: no SQL, no crypto. Handlers extract,
//! call a use case, and map the result.

mod body;
pub mod deadline;
pub mod error;
pub mod gate;
mod health;
mod webhook;

use actix_web::web;

pub use body::read_limited;
pub use error::ApiError;

/// The provider-facing and probe routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(
        "/webhooks/{source}",
        web::post().to(webhook::receive_webhook),
    )
    .route("/healthz", web::get().to(health::healthz))
    .route("/readyz", web::get().to(health::readyz));
}
