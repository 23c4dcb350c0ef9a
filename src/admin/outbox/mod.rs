//! The outbox on the admin: the audited replay of a dead letter (the
//! dashboard's "Send again") and every destination's figures as JSON; what
//! the dashboard and the event page show of it is `view`.

mod view;

use actix_web::HttpRequest;
use actix_web::HttpResponse;
use actix_web::web::{Data, Form, Json};
use chrono::Utc;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use self::view::{DestinationView, MessageView, destinations, event_messages};
use super::action;
use super::auth::{BearerAdmin, PageAdmin, check_csrf};
use super::render::see_other;
use crate::context::Context;
use crate::http::ApiError;
use crate::store::Holding;

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

/// Every destination's outbox figures, blocked accounts and dead letters.
///
/// `unconfigured` lists destinations the config no longer names that still
/// hold messages.
#[utoipa::path(
    get,
    path = "/admin/api/outbox",
    tag = "outbox",
    responses((status = 200, description = "Every destination's figures and dead letters", body = OutboxAnswer)),
)]
pub async fn api(_: BearerAdmin, context: Data<Context>) -> Result<Json<OutboxAnswer>, ApiError> {
    let destinations = destinations(&context.store, Utc::now()).await?;
    let unconfigured = crate::outbox::unconfigured(&context.store).await?;
    Ok(Json(OutboxAnswer {
        destinations,
        unconfigured,
    }))
}

/// The outbox per destination.
#[derive(Debug, Serialize, ToSchema)]
pub struct OutboxAnswer {
    pub destinations: Vec<DestinationView>,
    /// Destinations the config no longer names that still hold messages.
    pub unconfigured: Vec<Holding>,
}
