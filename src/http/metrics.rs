//! `GET /metrics`: the Prometheus exposition (docs/operating/metrics.md). Open
//! unless `metrics.token` is set; then it takes that bearer token, compared
//! in constant time and throttled per address on its own (never with the
//! admin sign-ins).

use actix_web::http::header::{CACHE_CONTROL, HeaderValue};
use actix_web::web::Data;
use actix_web::{HttpRequest, HttpResponse};
use chrono::{DateTime, TimeDelta};

use super::ApiError;
use super::error::ErrorBody;
use super::token::{bearer_token, check_metrics_token};
use crate::context::Context;
use crate::reconcile::states;
use crate::store::chain::BreakKind;
use crate::telemetry::prometheus::{self, ChainBreaks, ReconcileFigures, Scrape};

/// The Prometheus text exposition.
///
/// Open unless `metrics.token` is set; then it takes that token as a
/// bearer token (never an admin token).
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "probes",
    responses(
        (status = 200, description = "The Prometheus text exposition", body = String, content_type = "text/plain"),
        (status = 401, description = "`metrics.token` is set and was not presented", body = ErrorBody),
        (status = 429, description = "Too many wrong tokens from this address", body = ErrorBody),
        (status = 503, description = "The database is unavailable", body = ErrorBody),
    ),
)]
pub async fn metrics(
    context: Data<Context>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if let Some(expected) = &context.metrics_token {
        // No token at all is refused like a wrong one.
        let presented = bearer_token(&request).unwrap_or_default();
        check_metrics_token(&request, &context, expected, presented)?;
    }
    let store = &context.store;
    let now = context.clock.now();
    let mut outbox = Vec::new();
    for route in store.outbox().routes().iter() {
        outbox.push(store.outbox_stats(&route.destination).await?);
    }
    let scrape = Scrape {
        now,
        held: store.held_counts().await?,
        outbox,
        pool: store.pool_usage(),
        replication: store.replication().await?,
        invariants: context
            .invariants
            .last()
            .map(|check| (check.at, check.outcome.ok().map(|v| v.len()))),
        chains: context.invariants.last_chains().map(|walk| {
            let found = walk.outcome.ok().map(|breaks| {
                let unlinked = breaks
                    .iter()
                    .filter(|b| b.kind == BreakKind::Unlinked)
                    .count();
                ChainBreaks {
                    broken: breaks.len() - unlinked,
                    unlinked,
                }
            });
            (walk.at, found)
        }),
        reconcile: reconcile_figures(&context).await?,
    };
    let text = prometheus::render(&context.metrics, &scrape).map_err(|_| ApiError::Internal)?;
    Ok(HttpResponse::Ok()
        .content_type(prometheus::CONTENT_TYPE)
        .insert_header((CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .body(text))
}

/// Each reconciling source's last complete run (any instance's) and its
/// provider's retention.
async fn reconcile_figures(context: &Context) -> Result<Vec<ReconcileFigures>, ApiError> {
    let states = states(&context.store, context.sources.values().map(|s| s.as_ref())).await?;
    Ok(states
        .into_iter()
        .map(|state| ReconcileFigures {
            last_success: state
                .run
                .and_then(|run| run.last_success_ms)
                .and_then(DateTime::from_timestamp_millis),
            retention: TimeDelta::from_std(state.retention).unwrap_or(TimeDelta::MAX),
            source: state.source,
        })
        .collect())
}
