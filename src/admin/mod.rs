//! The admin surface: JSON API (bearer token) and minimal HTML pages
//! (session cookie or bearer token). Every route requires auth except the
//! login form and the stylesheet.
//!
//! One folder per resource (accounts, audit, dashboard, events, failures,
//! gaps, guards, held, outbox), each the same way: `mod.rs` holds its page
//! and API handlers side by side, `view.rs` what its pages show of its own
//! rows, and any other part a file named for it (`events/filter.rs`,
//! `held/form.rs`, `dashboard/chart.rs`). Every operator action, from a
//! page, the API or the bulk form, goes through `action` (the call and its
//! log line); what every page answers with is `render`, what every request
//! carries is `input`, which event or account a route names is `target`.

mod accounts;
mod action;
mod audit;
mod auth;
mod dashboard;
mod events;
mod failures;
mod gaps;
mod guards;
mod held;
mod input;
mod login;
pub mod openapi;
mod outbox;
mod render;
mod target;
mod view;

use actix_web::middleware::DefaultHeaders;
use actix_web::web;

use crate::http::routes::Endpoint;

/// No inline script or style anywhere, no framing, forms only to ourselves.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// An endpoint inside the `/admin` scope.
fn at(path: &str) -> Endpoint {
    Endpoint::new(path).under("/admin")
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    let headers = DefaultHeaders::new()
        .add(("Cache-Control", "no-store"))
        .add(("Content-Security-Policy", CONTENT_SECURITY_POLICY))
        .add(("X-Content-Type-Options", "nosniff"))
        .add(("Referrer-Policy", "same-origin"));
    // No page path starts with `/api/`: the two groups match apart,
    // whichever is registered first.
    cfg.service(
        web::scope("/admin")
            .configure(pages)
            .configure(api)
            .wrap(headers),
    );
}

/// The pages: a session cookie or the bearer token, forms with CSRF.
fn pages(cfg: &mut web::ServiceConfig) {
    cfg.service(at("").get(dashboard::dashboard).finish())
        .service(at("/").get(dashboard::dashboard).finish())
        .service(at("/static/admin.css").get(render::stylesheet).finish())
        .service(
            at("/login")
                .get(login::to_dashboard)
                .post(login::login)
                .finish(),
        )
        .service(at("/logout").post(login::logout).finish())
        // Pages link by query (`target` says why); the path forms are
        // kept for scripts and bookmarks.
        .service(at("/event").get(events::event_page).finish())
        .service(at("/events").get(events::events_page).finish())
        .service(at("/failures").get(failures::page).finish())
        .service(at("/held").get(held::held_page).finish())
        .service(
            at("/held/preview")
                .post(held::preview)
                .finish()
                .app_data(held::form_config()),
        )
        .service(
            at("/held/act")
                .post(held::act)
                .finish()
                .app_data(held::form_config()),
        )
        .service(at("/audit").get(audit::page).finish())
        .service(at("/account").get(accounts::account_page).finish())
        .service(at("/event/{action}").post(events::event_action).finish())
        .service(
            at("/events/{source}/{event_id}")
                .get(events::event_page)
                .finish(),
        )
        .service(
            at("/events/{source}/{event_id}/{action}")
                .post(events::event_action)
                .finish(),
        )
        .service(at("/gap").get(gaps::gap_page).finish())
        .service(at("/outbox/replay").post(outbox::replay).finish())
        .service(at("/gap/skip").post(gaps::skip_from_page).finish())
        .service(
            at("/gaps/{source}/{account_id}")
                .get(gaps::gap_page)
                .finish(),
        )
        .service(
            at("/gaps/{source}/{account_id}/skip")
                .post(gaps::skip_from_page)
                .finish(),
        )
        .service(at("/guard").get(guards::guard_page).finish())
        .service(at("/guard/reset").post(guards::reset_from_page).finish());
}

/// The JSON API under `/admin/api`: the bearer token only.
fn api(cfg: &mut web::ServiceConfig) {
    cfg.service(at("/api/audit").get(audit::api).finish())
        .service(at("/api/failures").get(failures::api).finish())
        .service(at("/api/guard").get(guards::show_guard).finish())
        .service(
            at("/api/held_accounts")
                .get(guards::list_held_accounts)
                .finish(),
        )
        .service(at("/api/guard/reset").post(guards::reset_guard).finish())
        .service(at("/api/events").get(events::list_events).finish())
        .service(at("/api/event").get(events::show_event_by_query).finish())
        .service(
            at("/api/event/{action}")
                .post(events::act_on_event_by_query)
                .finish(),
        )
        .service(
            at("/api/events/{source}/{event_id}")
                .get(events::show_event)
                .finish(),
        )
        .service(
            at("/api/events/{source}/{event_id}/{action}")
                .post(events::act_on_event)
                .finish(),
        )
        .service(
            at("/api/accounts/{account_id}")
                .get(accounts::show_account)
                .finish(),
        )
        .service(
            at("/api/account")
                .get(accounts::show_account_by_query)
                .finish(),
        )
        .service(at("/api/gaps").get(gaps::list_gaps).finish())
        .service(at("/api/gap").get(gaps::show_gap_by_query).finish())
        .service(at("/api/gap/skip").post(gaps::skip_gap_by_query).finish())
        .service(
            at("/api/gaps/{source}/{account_id}")
                .get(gaps::show_gap)
                .finish(),
        )
        .service(
            at("/api/gaps/{source}/{account_id}/skip")
                .post(gaps::skip_gap)
                .finish(),
        )
        .service(at("/api/metrics").get(dashboard::metrics).finish())
        .service(at("/api/outbox").get(outbox::api).finish())
        .service(at("/api/check").get(dashboard::check).finish())
        .service(at("/api/verify").get(dashboard::verify).finish())
        .service(at("/api/openapi.json").get(openapi::openapi_json).finish());
}
