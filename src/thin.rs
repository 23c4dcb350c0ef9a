//! A Stripe thin event, expanded: its object fetched with the source's API
//! key (`[sources.reconcile]`, `api_base` + `related_object.url`) and the
//! snapshot event of the same type built around it
//! (`providers::stripe_thin`), which the source then maps as any snapshot.
//! A fetch that fails on the way (the network, a `5xx`, a `429`, the key
//! refused) answers `503`, so Stripe retries; an object that does not
//! exist is stored `rejected` with the reason. A notice that Stripe failed
//! to generate an event is first read back from `/v2/core/events/{id}`
//! (its data names the missing event's type and object), then expanded
//! the same way, under the notice's id.

use crate::domain::{EventId, Movement, NormalisedEvent, Rejection};
use crate::provider_api::{Api, ApiError};
use crate::providers::stripe_thin::{ThinEvent, failed_event, snapshot, thin_event};
use crate::source::Source;

/// Tries of a webhook's fetch: its sender waits for the answer.
const TRIES: u32 = 2;
/// Between a fetch's two tries at least (each webhook fetches on its own).
const FETCH_GAP: std::time::Duration = std::time::Duration::from_millis(40);
/// The API version the v2 events API is read with: the public preview
/// that made generation-failure notices carry `related_object`.
const V2_VERSION: &str = "2025-11-17.preview";

/// What a thin delivery becomes.
pub enum Thin {
    /// The snapshot event's JSON, to map and store as the event's payload.
    Snapshot(String),
    /// An event that cannot be expanded, held with why.
    Rejected(NormalisedEvent),
}

/// `None` for anything but a Stripe thin event; `Err` (say why) when its
/// object could not be fetched this time.
pub async fn expand(source: &Source, body: &[u8]) -> Result<Option<Thin>, String> {
    if source.provider.kind() != "stripe" {
        return Ok(None);
    }
    // One that cannot be read as one is mapped as it came (and stored
    // unreadable, with Stripe's mapping's reason).
    let Some(Ok(thin)) = thin_event(body) else {
        return Ok(None);
    };
    let Some(settings) = &source.reconcile else {
        return Ok(Some(rejected(
            &thin,
            "a thin event names its object, and this source has no API key to fetch it \
             ([sources.reconcile] api_key)",
        )));
    };
    let api = || {
        Api::new(&settings.api_base, &settings.api_key, FETCH_GAP)
            .map(|api| api.with_tries(TRIES))
            .map_err(|e| e.to_string())
    };
    let thin = match thin.generation_failed {
        false => thin,
        true => {
            let path = format!("/v2/core/events/{}", thin.event_id);
            let v2 = api()?.with_header("Stripe-Version", V2_VERSION);
            match v2.get(&path, &[]).await {
                Ok(event) => match failed_event(&thin, &event) {
                    Ok(failed) => failed,
                    Err(why) => return Ok(Some(rejected(&thin, &why))),
                },
                Err(ApiError::NotFound(_)) => {
                    return Ok(Some(rejected(
                        &thin,
                        "generation failure notice: Stripe has no such event (HTTP 404)",
                    )));
                }
                Err(error) => {
                    return Err(format!(
                        "fetching generation failure notice {}: {error}",
                        thin.event_id
                    ));
                }
            }
        }
    };
    match api()?.get(&thin.related_url, &[]).await {
        Ok(object) => Ok(Some(Thin::Snapshot(snapshot(&thin, object).to_string()))),
        Err(ApiError::NotFound(_)) => Ok(Some(rejected(
            &thin,
            &format!(
                "thin event: its object {} does not exist at Stripe (HTTP 404)",
                thin.related_id
            ),
        ))),
        Err(error) => Err(format!(
            "fetching thin event {}'s object: {error}",
            thin.event_id
        )),
    }
}

/// The thin event held for `reason`, under its own id.
fn rejected(thin: &ThinEvent, reason: &str) -> Thin {
    let event_id = EventId::parse(&thin.event_id)
        .unwrap_or_else(|_| EventId::parse("thin:unreadable-id").expect("a fixed id is valid"));
    Thin::Rejected(NormalisedEvent {
        event_id,
        event_type: thin.event_type.clone(),
        object_id: (!thin.related_id.is_empty()).then(|| thin.related_id.clone()),
        occurred_at: None,
        movement: Movement::Rejected(Rejection {
            reason: reason.to_owned(),
            account: None,
            currency: None,
            signed_amount: None,
            sequence: None,
        }),
        payload: None,
    })
}
