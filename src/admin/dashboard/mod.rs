//! The dashboard (`GET /admin`): the held queue, gaps, recent events,
//! balances, counters, deliveries per source, the ledger check, the
//! database's replication and the outbox, or the login form for a visitor without a session; and the JSON
//! of its counters (`GET /admin/api/metrics`), of the ledger check
//! (`GET /admin/api/check`) and of the hash chains' walk
//! (`GET /admin/api/verify`), each of which also records it for the page.

mod chart;
mod view;

use actix_web::HttpResponse;
use actix_web::web::{Data, Json, Query};
use askama::Template;
use serde::Serialize;
use utoipa::ToSchema;

use super::auth::{BearerAdmin, PageAdmin};
use super::gaps::{self, GapView};
use super::guards::{self, HeldAccountView};
use super::login::LoginPage;
use super::outbox::{self, DestinationView};
use super::render::{Flash, csrf_for, html};
use super::view::{BalanceView, EventView, duration};
use crate::context::Context;
use crate::http::ApiError;
use crate::store::chain::ChainReport;
use crate::store::{EventFilter, Violation};
use crate::telemetry::Counters;

#[derive(Template)]
#[template(path = "dashboard.html")]
struct DashboardPage {
    csrf: String,
    /// False for a read-only holder: no "Send again".
    can_act: bool,
    held: Vec<EventView>,
    held_accounts: Vec<HeldAccountView>,
    many_held: i64,
    gaps: Vec<GapView>,
    held_gaps: usize,
    recent: Vec<EventView>,
    balances: Vec<BalanceView>,
    counters: Counters,
    outbox: Vec<DestinationView>,
    /// Destinations the config does not name that still hold messages.
    unconfigured: Vec<crate::store::Holding>,
    chart: chart::Chart,
    sources: Vec<view::SourceView>,
    /// Sources that reconcile against their provider's records.
    reconcile: Vec<view::ReconcileView>,
    /// Whether the ledger held at the latest check, and what it said.
    invariants: (bool, String),
    /// Whether the hash chains were whole at the latest walk.
    chains: (bool, String),
    /// The database, and whether commits are replicated before answered.
    database: (bool, String),
    /// How long the oldest stale or rejected event has waited.
    oldest_held: Option<String>,
    message: Option<&'static str>,
}

/// The dashboard, or the login form for a visitor without a session.
pub async fn dashboard(
    admin: Option<PageAdmin>,
    context: Data<Context>,
    flash: Query<Flash>,
) -> Result<HttpResponse, ApiError> {
    let Some(admin) = admin else {
        return html(
            actix_web::http::StatusCode::OK,
            &LoginPage {
                failed: false,
                wait_secs: None,
            },
        );
    };
    let recent = context
        .store
        .list_events(&EventFilter {
            limit: 50,
            ..EventFilter::default()
        })
        .await?;
    let gaps: Vec<GapView> = gaps::all(&context)
        .await?
        .into_iter()
        .map(GapView::from)
        .collect();
    let held_accounts = guards::held_account_views(&context).await?;
    let page = DashboardPage {
        can_act: !admin.who.read_only,
        csrf: csrf_for(&admin, &context),
        held_accounts,
        many_held: guards::MANY_HELD,
        held_gaps: gaps.iter().filter(|g| g.held).count(),
        gaps,
        held: context
            .store
            .held_events(100)
            .await?
            .into_iter()
            .map(EventView::from)
            .collect(),
        recent: recent.into_iter().map(EventView::from).collect(),
        balances: context
            .store
            .list_balances(100)
            .await?
            .into_iter()
            .map(BalanceView::from)
            .collect(),
        counters: context.metrics.snapshot(),
        chart: chart::chart(&context.metrics, context.clock.now()),
        sources: view::sources(&context, context.clock.now()),
        reconcile: view::reconcile(
            crate::reconcile::states(&context.store, context.sources.values().map(|s| s.as_ref()))
                .await?,
            chrono::Utc::now(),
        ),
        invariants: view::invariants(&context, context.clock.now()),
        chains: view::chains(&context, context.clock.now()),
        database: view::database(context.store.replication().await?),
        oldest_held: context
            .store
            .held_counts()
            .await?
            .iter()
            .filter(|h| h.status == "stale" || h.status == "rejected")
            .map(|h| h.oldest_received_at)
            .min()
            .map(|at| duration((context.clock.now() - at).num_seconds().max(0))),
        outbox: outbox::destinations(&context.store, chrono::Utc::now()).await?,
        unconfigured: crate::outbox::unconfigured(&context.store).await?,
        message: (flash.done.as_deref() == Some("replay"))
            .then_some("Re-queued: the message will be sent again, with the same id."),
    };
    html(actix_web::http::StatusCode::OK, &page)
}

/// Counters since this instance started.
///
/// Deliveries by source and outcome, verification failures by source and
/// reason, ordering counters by source, connections closed unserved or ended
/// by a fault, sign-ins, `/metrics` token failures, and reconcile runs.
#[utoipa::path(
    get,
    path = "/admin/api/metrics",
    tag = "dashboard",
    responses((status = 200, description = "Counters since this instance started", body = Counters)),
)]
pub async fn metrics(_: BearerAdmin, context: Data<Context>) -> Json<Counters> {
    Json(context.metrics.snapshot())
}

/// What the ledger check found.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckAnswer {
    /// No invariant is broken.
    pub ok: bool,
    pub violations: Vec<Violation>,
}

/// The ledger's invariants, checked now.
///
/// None of the violations can happen while every balance change goes through
/// the one transaction; the check proves it.
#[utoipa::path(
    get,
    path = "/admin/api/check",
    tag = "dashboard",
    responses((status = 200, description = "The ledger's invariants, checked now", body = CheckAnswer)),
)]
pub async fn check(_: BearerAdmin, context: Data<Context>) -> Result<Json<CheckAnswer>, ApiError> {
    let violations = context.store.check_invariants().await?;
    context.invariants.record(crate::ledger_check::LastCheck {
        at: context.clock.now(),
        outcome: Ok(violations.clone()),
    });
    Ok(Json(CheckAnswer {
        ok: violations.is_empty(),
        violations,
    }))
}

/// Every hash chain, walked now.
///
/// Each account's ledger (per currency) and the audit trail, every link
/// recomputed: the first break of each chain, naming the row (an edited,
/// deleted, inserted or reordered one). As `hookledger verify` prints it.
#[utoipa::path(
    get,
    path = "/admin/api/verify",
    tag = "dashboard",
    responses((status = 200, description = "Every hash chain, walked now", body = VerifyAnswer)),
)]
pub async fn verify(
    _: BearerAdmin,
    context: Data<Context>,
) -> Result<Json<VerifyAnswer>, ApiError> {
    let report = context.store.verify_chains().await?;
    context
        .invariants
        .record_chains(crate::ledger_check::LastVerify {
            at: context.clock.now(),
            entries: report.entries,
            outcome: Ok(report.breaks.clone()),
        });
    Ok(Json(VerifyAnswer {
        ok: report.is_clean(),
        report,
    }))
}

/// What the walk of the hash chains found.
#[derive(Debug, Serialize, ToSchema)]
pub struct VerifyAnswer {
    /// Every chain is whole.
    pub ok: bool,
    pub report: ChainReport,
}
