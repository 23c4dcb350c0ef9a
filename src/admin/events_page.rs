//! `GET /admin/events`: every stored event, newest first, filtered by
//! source, status, type, account, exact event id and first-received date
//! range, paged by intent id (the same filters as `/admin/api/events`).

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::web::{Data, Query};
use askama::Template;

use super::api::EventsQuery;
use super::auth::PageAdmin;
use super::render::{csrf_for, html, see_other};
use super::view::EventView;
use crate::context::Context;
use crate::domain::Status;
use crate::http::ApiError;

const PAGE: i64 = 50;

#[derive(Template)]
#[template(path = "events.html")]
struct EventsPage {
    csrf: String,
    sources: Vec<String>,
    statuses: Vec<&'static str>,
    /// The filters as given, to fill the form again.
    query: Shown,
    events: Vec<EventView>,
    older_href: Option<String>,
}

/// The form's values (empty: no filter).
#[derive(Default)]
struct Shown {
    source: String,
    status: String,
    account: String,
    event_type: String,
    id: String,
    from: String,
    to: String,
}

impl Shown {
    fn of(query: &EventsQuery) -> Self {
        let value = |v: &Option<String>| v.as_deref().unwrap_or_default().trim().to_owned();
        Self {
            source: value(&query.source),
            status: value(&query.status),
            account: value(&query.account),
            event_type: value(&query.event_type),
            id: value(&query.id),
            from: value(&query.from),
            to: value(&query.to),
        }
    }

    /// This page's address with the same filters, below `before`.
    fn href(&self, before: i64) -> String {
        let pairs: Vec<(&str, &str)> = [
            ("source", self.source.as_str()),
            ("status", &self.status),
            ("account", &self.account),
            ("type", &self.event_type),
            ("id", &self.id),
            ("from", &self.from),
            ("to", &self.to),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .collect();
        let before = before.to_string();
        let query = serde_urlencoded::to_string(
            pairs
                .into_iter()
                .chain([("before", before.as_str())])
                .collect::<Vec<_>>(),
        )
        .unwrap_or_default();
        format!("/admin/events?{query}")
    }
}

pub async fn events_page(
    admin: Option<PageAdmin>,
    context: Data<Context>,
    query: Query<EventsQuery>,
) -> Result<HttpResponse, ApiError> {
    let Some(admin) = admin else {
        return Ok(see_other("/admin"));
    };
    let mut filter = query.filter(PAGE)?;
    filter.limit = PAGE + 1;
    let mut rows = context.store.list_events(&filter).await?;
    let shown = Shown::of(&query);
    let older_href =
        (rows.len() as i64 > PAGE).then(|| shown.href(rows[PAGE as usize - 1].intent_id));
    rows.truncate(PAGE as usize);
    let mut sources: Vec<String> = context.sources.keys().cloned().collect();
    sources.sort_unstable();
    let page = EventsPage {
        csrf: csrf_for(&admin, &context),
        sources,
        statuses: Status::ALL.iter().map(|s| s.as_str()).collect(),
        query: shown,
        events: rows.into_iter().map(EventView::from).collect(),
        older_href,
    };
    html(StatusCode::OK, &page)
}
