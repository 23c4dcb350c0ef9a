//! The minimal admin HTML: a dashboard (held queue, gaps, recent events,
//! balances, counters, the outbox). Signing in and out is in `login`, the
//! event page in `events`, the gap page in `gap_pages`.

use actix_web::HttpResponse;
use actix_web::web::{Data, Query};
use askama::Template;

use super::auth::PageAdmin;
use super::gaps;
use super::guards;
use super::login::LoginPage;
use super::render::{Flash, csrf_for, html};
use super::view::{BalanceView, EventView, GapView, HeldAccountView};
use crate::context::Context;
use crate::domain::OrderingMode;
use crate::http::ApiError;
use crate::store::EventFilter;
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
    outbox: Vec<super::outbox::DestinationView>,
    /// Destinations the config does not name that still hold messages.
    unconfigured: Vec<crate::store::Holding>,
    chart: super::chart::Chart,
    sources: Vec<super::source_view::SourceView>,
    /// Whether the ledger held at the latest check, and what it said.
    invariants: (bool, String),
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
    let held_accounts = guards::held_accounts(&context)
        .await?
        .into_iter()
        .map(|row| {
            let high_water = context
                .source(&row.source)
                .is_some_and(|s| s.ordering.mode == OrderingMode::HighWater);
            HeldAccountView::new(row, high_water)
        })
        .collect();
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
        chart: super::chart::chart(&context.metrics, context.clock.now()),
        sources: super::source_view::sources(&context, context.clock.now()),
        invariants: super::source_view::invariants(&context, context.clock.now()),
        oldest_held: context
            .store
            .held_counts()
            .await?
            .iter()
            .filter(|h| h.status == "stale" || h.status == "rejected")
            .map(|h| h.oldest_received_at)
            .min()
            .map(|at| super::view::duration((context.clock.now() - at).num_seconds().max(0))),
        outbox: super::outbox::destinations(&context.store, chrono::Utc::now()).await?,
        unconfigured: crate::outbox::unconfigured(&context.store).await?,
        message: (flash.done.as_deref() == Some("replay"))
            .then_some("Re-queued: the message will be sent again, with the same id."),
    };
    html(actix_web::http::StatusCode::OK, &page)
}
