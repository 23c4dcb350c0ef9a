//! `GET /admin/account?id=`: support's answer to "I paid and my balance did
//! not change". The balances per currency, then every event stored for the
//! account with its status and reason (a missing credit is held, rejected,
//! ignored, or was never received), then the ledger that makes the balance.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::web::{Data, Query};
use askama::Template;
use serde::Deserialize;

use super::auth::PageAdmin;
use super::render::{csrf_for, html, see_other};
use super::target::{account_href, event_href, plain_id};
use super::view::{BalanceView, EventView, minor_units, money, time};
use crate::context::Context;
use crate::http::ApiError;
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

/// One ledger line.
pub struct EntryLine {
    pub amount: String,
    pub amount_minor: String,
    pub balance_after: String,
    pub negative_after: bool,
    pub posting: i64,
    pub source: String,
    pub event_id: String,
    pub event_href: String,
    pub operator_applied: bool,
    pub at: String,
}

impl From<LedgerEntryRow> for EntryLine {
    fn from(row: LedgerEntryRow) -> Self {
        let currency = Some(row.currency.as_str());
        Self {
            amount: money(Some(row.amount_minor), currency),
            amount_minor: minor_units(Some(row.amount_minor), currency),
            balance_after: money(Some(row.balance_after_minor), currency),
            negative_after: row.balance_after_minor < 0,
            posting: row.account_seq,
            event_href: event_href(&row.source, &row.event_id),
            source: row.source,
            event_id: row.event_id,
            operator_applied: row.operator_applied,
            at: time(row.created_at),
        }
    }
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
