//! The admin JSON API (bearer token only).

use actix_web::web::{Data, Json, Path, Payload, Query};
use actix_web::{FromRequest, HttpRequest};
use chrono::{DateTime, NaiveDate, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

use super::action::{self, Asking};
use super::auth::BearerAdmin;
use super::input::{ADMIN_BODY_LIMIT, page_size, parse_note};
use super::pages::{ActionPath, Asked};
use super::target::{EventRef, plain_id};
use crate::context::Context;
use crate::domain::Status;
use crate::http::{ApiError, read_limited};
use crate::store::EventFilter;

/// The events list's filters, as the API and the events page take them.
/// Empty values (`?source=`, as a form sends them) mean no filter.
#[derive(Debug, Default, Deserialize)]
pub struct EventsQuery {
    pub source: Option<String>,
    pub status: Option<String>,
    pub account: Option<String>,
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    /// The provider's event id, exactly.
    pub id: Option<String>,
    /// First received on or after: `YYYY-MM-DD` (UTC) or RFC 3339.
    pub from: Option<String>,
    /// First received on or before this day (`YYYY-MM-DD`, the whole day),
    /// or before this instant (RFC 3339).
    pub to: Option<String>,
    pub limit: Option<i64>,
    pub before: Option<i64>,
}

impl EventsQuery {
    pub(super) fn filter(&self, default_limit: i64) -> Result<EventFilter, ApiError> {
        let text = |value: &Option<String>, what: &str| {
            filter_value(value.as_ref().map(|v| v.trim().to_owned()))
                .map(|v| plain_id(what, v))
                .transpose()
        };
        let status = text(&self.status, "status")?
            .map(|s| {
                s.parse::<Status>()
                    .map_err(|e| ApiError::BadRequest(e.to_string()))
            })
            .transpose()?;
        Ok(EventFilter {
            source: text(&self.source, "source")?,
            status,
            account_id: text(&self.account, "account")?,
            event_type: text(&self.event_type, "type")?,
            event_id: text(&self.id, "id")?,
            received_from: text(&self.from, "from")?
                .map(|v| instant(&v, "from", false))
                .transpose()?,
            received_before: text(&self.to, "to")?
                .map(|v| instant(&v, "to", true))
                .transpose()?,
            before: self.before,
            limit: page_size(self.limit, default_limit)?,
        })
    }
}

/// `YYYY-MM-DD` as the start of that day in UTC (`end`: of the next day,
/// so the day is included), or an RFC 3339 instant as it is.
fn instant(value: &str, what: &str, end: bool) -> Result<DateTime<Utc>, ApiError> {
    if let Ok(day) = NaiveDate::parse_from_str(value, "%Y-%m-%d") {
        let day = if end { day.succ_opt() } else { Some(day) };
        if let Some(start) = day.and_then(|d| d.and_hms_opt(0, 0, 0)) {
            return Ok(start.and_utc());
        }
    }
    DateTime::parse_from_rfc3339(value)
        .map(|at| at.with_timezone(&Utc))
        .map_err(|_| {
            ApiError::BadRequest(format!(
                "{what} must be a date (YYYY-MM-DD) or an RFC 3339 time"
            ))
        })
}

/// Empty strings in a query (`?source=`) mean "no filter".
fn filter_value(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

pub async fn list_events(
    _: BearerAdmin,
    context: Data<Context>,
    query: Query<EventsQuery>,
) -> Result<Json<Value>, ApiError> {
    let filter = query.filter(50)?;
    let events = context.store.list_events(&filter).await?;
    let next_before = (events.len() as i64 == filter.limit)
        .then(|| events.last().map(|e| e.intent_id))
        .flatten();
    Ok(Json(json!({"events": events, "next_before": next_before})))
}

pub async fn show_event(
    _: BearerAdmin,
    context: Data<Context>,
    target: EventRef,
) -> Result<Json<Value>, ApiError> {
    let EventRef { source, event_id } = target;
    let event = context
        .store
        .event(&source, &event_id)
        .await?
        .ok_or(ApiError::NotFound("event"))?;
    let audit = context.store.event_audit(&source, &event_id).await?;
    let mut body = serde_json::to_value(event).map_err(|_| ApiError::Internal)?;
    body["audit"] = json!(audit);
    Ok(Json(body))
}

#[derive(Debug, Deserialize)]
pub struct AccountQuery {
    /// The account, for `/admin/api/account?id=` (any id, `..` included).
    pub id: Option<String>,
    pub limit: Option<i64>,
    pub before: Option<i64>,
}

/// `GET /admin/api/accounts/{account_id}` or `/admin/api/account?id=`.
pub async fn show_account(
    _: BearerAdmin,
    context: Data<Context>,
    request: HttpRequest,
    query: Query<AccountQuery>,
) -> Result<Json<Value>, ApiError> {
    let account_id = match (request.match_info().get("account_id"), &query.id) {
        (Some(_), _) => Path::<String>::extract(&request)
            .await
            .map_err(|e| ApiError::BadRequest(e.to_string()))?
            .into_inner(),
        (None, Some(id)) => id.clone(),
        (None, None) => return Err(ApiError::BadRequest("id is required".into())),
    };
    let account_id = plain_id("account id", account_id)?;
    let limit = page_size(query.limit, 100)?;
    let balances = context.store.account_balances(&account_id).await?;
    let entries = context
        .store
        .account_entries(&account_id, query.before, limit)
        .await?;
    if balances.is_empty() && entries.is_empty() && query.before.is_none() {
        return Err(ApiError::NotFound("account"));
    }
    let balances: Vec<Value> = balances
        .iter()
        .map(|b| json!({"currency": b.currency, "balance_minor": b.balance_minor, "updated_at": b.updated_at}))
        .collect();
    let next_before = (entries.len() as i64 == limit)
        .then(|| entries.last().map(|e| e.entry_id))
        .flatten();
    Ok(Json(json!({
        "account_id": account_id,
        "balances": balances,
        "entries": entries,
        "next_before": next_before,
    })))
}

/// `POST /admin/api/events/{source}/{event_id}/{apply|dismiss}`, or
/// `POST /admin/api/event/{apply|dismiss}?source=&id=`.
pub async fn act_on_event(
    admin: BearerAdmin,
    context: Data<Context>,
    target: EventRef,
    path: Path<ActionPath>,
    request: HttpRequest,
    payload: Payload,
) -> Result<Json<Value>, ApiError> {
    let EventRef { source, event_id } = target;
    let body = read_limited(&request, payload, ADMIN_BODY_LIMIT).await?;
    let (note, seen) = parse_note(&body)?;
    let actor = admin.actor();
    let asking = Asking {
        actor: &actor,
        note: note.as_deref(),
        seen,
    };
    match path.asked().ok_or(ApiError::NotFound("action"))? {
        Asked::Replay => {
            let replayed = action::replay(&context, &source, &event_id, &asking).await?;
            Ok(Json(json!({
                "source": source,
                "event_id": event_id,
                "previous_status": replayed.previous_status.as_str(),
                "status": replayed.status.as_str(),
                "changed": replayed.changed,
            })))
        }
        Asked::Act(what) => {
            let outcome = action::act(&context, what, &source, &event_id, &asking).await?;
            Ok(Json(json!({
                "source": source,
                "event_id": event_id,
                "status": outcome.status,
                "previous_status": outcome.previous_status,
                "balance_after_minor": outcome.balance_after_minor,
            })))
        }
    }
}

/// Delivery and verification-failure counters since start.
pub async fn metrics(_: BearerAdmin, context: Data<Context>) -> Json<Value> {
    Json(json!(context.metrics.snapshot()))
}

/// The ledger invariant check: `{"ok": bool, "violations": [...]}`.
pub async fn check(_: BearerAdmin, context: Data<Context>) -> Result<Json<Value>, ApiError> {
    let violations = context.store.check_invariants().await?;
    context.invariants.record(crate::invariants::LastCheck {
        at: context.clock.now(),
        outcome: Ok(violations.clone()),
    });
    Ok(Json(
        json!({"ok": violations.is_empty(), "violations": violations}),
    ))
}
