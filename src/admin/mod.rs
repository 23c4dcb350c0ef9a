//! The admin surface: JSON API (bearer token) and minimal HTML pages
//! (session cookie or bearer token). Every route requires auth except the
//! login form and the stylesheet.

mod api;
mod auth;
mod gap_api;
mod gap_pages;
mod gaps;
mod pages;
mod throttle;
mod view;

use actix_web::middleware::DefaultHeaders;
use actix_web::web;

pub use auth::SESSION_COOKIE;
pub use throttle::SignInThrottle;

/// No inline script or style anywhere, no framing, forms only to ourselves.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

pub fn configure(cfg: &mut web::ServiceConfig) {
    let headers = DefaultHeaders::new()
        .add(("Cache-Control", "no-store"))
        .add(("Content-Security-Policy", CONTENT_SECURITY_POLICY))
        .add(("X-Content-Type-Options", "nosniff"))
        .add(("Referrer-Policy", "same-origin"));
    cfg.service(
        web::scope("/admin")
            .wrap(headers)
            .route("", web::get().to(pages::dashboard))
            .route("/", web::get().to(pages::dashboard))
            .route("/static/admin.css", web::get().to(pages::stylesheet))
            .route("/login", web::post().to(pages::login))
            .route("/logout", web::post().to(pages::logout))
            .route(
                "/events/{source}/{event_id}",
                web::get().to(pages::event_page),
            )
            .route(
                "/events/{source}/{event_id}/{action}",
                web::post().to(pages::event_action),
            )
            .route(
                "/gaps/{source}/{account_id}",
                web::get().to(gap_pages::gap_page),
            )
            .route(
                "/gaps/{source}/{account_id}/skip",
                web::post().to(gap_pages::skip_gap),
            )
            .route("/api/events", web::get().to(api::list_events))
            .route(
                "/api/events/{source}/{event_id}",
                web::get().to(api::show_event),
            )
            .route(
                "/api/events/{source}/{event_id}/{action}",
                web::post().to(api::act_on_event),
            )
            .route(
                "/api/accounts/{account_id}",
                web::get().to(api::show_account),
            )
            .route("/api/gaps", web::get().to(gap_api::list_gaps))
            .route(
                "/api/gaps/{source}/{account_id}",
                web::get().to(gap_api::show_gap),
            )
            .route(
                "/api/gaps/{source}/{account_id}/skip",
                web::post().to(gap_api::skip_gap),
            )
            .route("/api/metrics", web::get().to(api::metrics))
            .route("/api/check", web::get().to(api::check)),
    );
}
