//! Accounts: `GET /admin/account?id=`, support's answer to "I paid and my
//! balance did not change" (the balances per currency, then every event
//! stored for the account with its status and reason: a missing credit is
//! held, rejected, ignored, or was never received; then the ledger that
//! makes the balance), and its JSON twin `GET /admin/api/accounts/{id}`
//! (or `/admin/api/account?id=`): the balances and a page of the ledger.

mod view;

use actix_web::http::StatusCode;
use actix_web::web::{Data, Json, Path, Query};
use actix_web::{FromRequest, HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;
use serde_json::{Value, json};

use self::view::EntryLine;
use super::auth::{BearerAdmin, PageAdmin};
use super::input::page_size;
use super::render::{csrf_for, html, see_other};
use super::target::{account_href, plain_id};
use super::view::{BalanceView, EventView};
use crate::context::Context;
use crate::http::ApiError;
use crate::store::EventFilter;

/// Rows per section; the ledger pages on by `before`.
const PAGE: i64 = 100;

#[derive(Debug, Deserialize)]
pub struct AccountQuery {
    #[serde(default)]
    id: String,
    /// The ledger's keyset cursor: entries below this id.
    before: Option<i64>,
}

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage {
    csrf: String,
    account_id: String,
    balances: Vec<BalanceView>,
    events: Vec<EventView>,
    /// More events than shown.
    more_events: bool,
    entries: Vec<EntryLine>,
    /// The next ledger page, when there is one.
    older_href: Option<String>,
}

pub async fn account_page(
    admin: Option<PageAdmin>,
    context: Data<Context>,
    query: Query<AccountQuery>,
) -> Result<HttpResponse, ApiError> {
    let Some(admin) = admin else {
        return Ok(see_other("/admin"));
    };
    let AccountQuery { id, before } = query.into_inner();
    let account_id = plain_id("account id", id.trim().to_owned())?;
    if account_id.is_empty() {
        return Err(ApiError::BadRequest("give an account id: ?id=".into()));
    }
    let store = &context.store;
    let balances = store.account_balances(&account_id).await?;
    let mut events = store
        .list_events(&EventFilter {
            account_id: Some(account_id.clone()),
            limit: PAGE + 1,
            ..EventFilter::default()
        })
        .await?;
    let more_events = events.len() as i64 > PAGE;
    events.truncate(PAGE as usize);
    let mut entries = store.account_entries(&account_id, before, PAGE + 1).await?;
    let older_href = (entries.len() as i64 > PAGE).then(|| {
        let last = entries[PAGE as usize - 1].entry_id;
        format!("{}&before={last}", account_href(&account_id))
    });
    entries.truncate(PAGE as usize);
    let page = AccountPage {
        csrf: csrf_for(&admin, &context),
        balances: balances.into_iter().map(BalanceView::from).collect(),
        events: events.into_iter().map(EventView::from).collect(),
        more_events,
        entries: entries.into_iter().map(EntryLine::from).collect(),
        older_href,
        account_id,
    };
    html(StatusCode::OK, &page)
}

#[derive(Debug, Deserialize)]
pub struct AccountApiQuery {
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
    query: Query<AccountApiQuery>,
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
