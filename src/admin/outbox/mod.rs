//! The outbox on the admin: the audited replay of a dead letter (the
//! dashboard's "Send again") and every destination's figures as JSON; what
//! the dashboard and the event page show of it is `view`.

mod view;

use actix_web::HttpRequest;
use actix_web::HttpResponse;
use actix_web::web::{Data, Form, Json};
use chrono::Utc;
use serde::Deserialize;
use serde_json::{Value, json};

pub use self::view::{DestinationView, MessageView, destinations, event_messages};
use super::action;
use super::auth::{BearerAdmin, PageAdmin, check_csrf};
use super::render::see_other;
use crate::context::Context;
use crate::http::ApiError;

#[derive(Debug, Deserialize)]
pub struct ReplayForm {
    #[serde(default)]
    csrf: String,
    /// A page from before the row was named (none): no row, refused.
    #[serde(default)]
    outbox_id: i64,
    destination: String,
    message_id: String,
}

/// `POST /admin/outbox/replay`: one dead (or delivered) message sent again,
/// with its id; audited on its event.
pub async fn replay(
    admin: PageAdmin,
    context: Data<Context>,
    request: HttpRequest,
    form: Form<ReplayForm>,
) -> Result<HttpResponse, ApiError> {
    check_csrf(&request, &admin, &context, &form.csrf)?;
    action::requeue_message(
        &context,
        form.outbox_id,
        &form.destination,
        &form.message_id,
        &admin.actor(),
    )
    .await?;
    Ok(see_other("/admin?done=replay#outbox"))
}

/// `GET /admin/api/outbox`: every destination's figures and dead letters,
/// and the messages of destinations the config no longer names.
pub async fn api(_: BearerAdmin, context: Data<Context>) -> Result<Json<Value>, ApiError> {
    let views = destinations(&context.store, Utc::now()).await?;
    let unconfigured = crate::outbox::unconfigured(&context.store).await?;
    Ok(Json(
        json!({ "destinations": views, "unconfigured": unconfigured }),
    ))
}
