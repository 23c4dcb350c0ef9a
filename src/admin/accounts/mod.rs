//! Accounts: `GET /admin/account?id=`, support's answer to "I paid and my
//! balance did not change" (the balances per currency, then every event
//! stored for the account with its status and reason: a missing credit is
//! held, rejected, ignored, or was never received; then the ledger that
//! makes the balance), and its JSON twin `GET /admin/api/accounts/{id}`
//! (or `/admin/api/account?id=`): the balances and a page of the ledger.

mod view;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::web::{Data, Json, Path, Query};
use askama::Template;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use self::view::EntryLine;
use super::auth::{BearerAdmin, PageAdmin};
use super::input::{page_limit, page_size};
use super::render::{csrf_for, html, see_other};
use super::target::{account_href, plain_id};
use super::view::{BalanceView, EventView};
use crate::context::Context;
use crate::http::ApiError;
use crate::http::error::ErrorBody;
use crate::store::{EventFilter, LedgerEntryRow};

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

/// A page of an account's ledger.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LedgerPage {
    /// Entries per page (default 100).
    #[param(schema_with = page_limit)]
    pub limit: Option<i64>,
    /// The previous page's `next_before`.
    pub before: Option<i64>,
}

/// The account in the query (any id, `..` included), and a page.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AccountApiQuery {
    /// The account id the sources' events carry.
    #[param(
        required,
        max_length = 255,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub id: Option<String>,
    /// Entries per page (default 100).
    #[param(schema_with = page_limit)]
    pub limit: Option<i64>,
    /// The previous page's `next_before`.
    pub before: Option<i64>,
}

/// The account in the path.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct AccountPath {
    /// The account id the sources' events carry.
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    pub account_id: String,
}

/// An account's balances and a page of its ledger, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountAnswer {
    pub account_id: String,
    pub balances: Vec<Balance>,
    pub entries: Vec<LedgerEntryRow>,
    /// Pass as `before` for the next page; none on the last.
    pub next_before: Option<i64>,
}

/// One currency's balance.
#[derive(Debug, Serialize, ToSchema)]
pub struct Balance {
    pub currency: String,
    pub balance_minor: i64,
    pub updated_at: DateTime<Utc>,
}

/// An account's balances and a page of its ledger, newest first.
///
/// Use `GET /admin/api/account?id=` for any id.
#[utoipa::path(
    get,
    path = "/admin/api/accounts/{account_id}",
    tag = "accounts",
    params(AccountPath, LedgerPage),
    responses(
        (status = 200, description = "The balances and a page of the ledger", body = AccountAnswer),
        (status = 400, description = "An id or page that does not parse", body = ErrorBody),
        (status = 404, description = "Nothing was ever posted to the account", body = ErrorBody),
    ),
)]
pub async fn show_account(
    _: BearerAdmin,
    context: Data<Context>,
    path: Path<AccountPath>,
    query: Query<LedgerPage>,
) -> Result<Json<AccountAnswer>, ApiError> {
    let LedgerPage { limit, before } = query.into_inner();
    account_answer(&context, path.into_inner().account_id, limit, before).await
}

/// An account named in the query (any id): its balances and ledger.
///
/// As `GET /admin/api/accounts/{account_id}`.
#[utoipa::path(
    get,
    path = "/admin/api/account",
    tag = "accounts",
    params(AccountApiQuery),
    responses(
        (status = 200, description = "The balances and a page of the ledger", body = AccountAnswer),
        (status = 400, description = "No id, or an id or page that does not parse", body = ErrorBody),
        (status = 404, description = "Nothing was ever posted to the account", body = ErrorBody),
    ),
)]
pub async fn show_account_by_query(
    _: BearerAdmin,
    context: Data<Context>,
    query: Query<AccountApiQuery>,
) -> Result<Json<AccountAnswer>, ApiError> {
    let AccountApiQuery { id, limit, before } = query.into_inner();
    let account_id = id.ok_or_else(|| ApiError::BadRequest("id is required".into()))?;
    account_answer(&context, account_id, limit, before).await
}

async fn account_answer(
    context: &Context,
    account_id: String,
    limit: Option<i64>,
    before: Option<i64>,
) -> Result<Json<AccountAnswer>, ApiError> {
    let account_id = plain_id("account id", account_id)?;
    let limit = page_size(limit, 100)?;
    let balances = context.store.account_balances(&account_id).await?;
    let entries = context
        .store
        .account_entries(&account_id, before, limit)
        .await?;
    if balances.is_empty() && entries.is_empty() && before.is_none() {
        return Err(ApiError::NotFound("account"));
    }
    let balances = balances
        .into_iter()
        .map(|b| Balance {
            currency: b.currency,
            balance_minor: b.balance_minor,
            updated_at: b.updated_at,
        })
        .collect();
    let next_before = (entries.len() as i64 == limit)
        .then(|| entries.last().map(|e| e.entry_id))
        .flatten();
    Ok(Json(AccountAnswer {
        account_id,
        balances,
        entries,
        next_before,
    }))
}
