//! The HTTP contract as OpenAPI 3.1, generated from the handlers' own
//! types: each handler's `#[utoipa::path]` names its parameters (the
//! structs its extractors parse), its body and its answers (the structs it
//! serialises). What every admin route shares (the bearer token and the
//! errors any of them can answer) is added here once, as are the links
//! between routes that a client (or schemathesis) follows. Served at
//! `GET /admin/api/openapi.json`, printed by `hookledger openapi` and
//! committed at `schema/openapi.json`.

use std::sync::LazyLock;

use actix_web::HttpResponse;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::{HttpMethod, Operation, ParameterIn};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi as Document, Ref, RefOr, Required, ResponseBuilder};
use utoipa::{Modify, OpenApi};

use super::auth::BearerAdmin;
use super::{accounts, audit, dashboard, events, failures, gaps, guards, outbox};
use crate::http::{health, metrics, webhook};

/// Where the file is committed in the repository.
pub const FILE: &str = "schema/openapi.json";

/// The admin API's prefix: every path under it takes the bearer token.
const ADMIN_API: &str = "/admin/api/";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "hookledger",
        description = "A payment-webhook receiver: verified deliveries in, one ledger effect per event, an admin API for what waits for a person. Admin routes take an admin token as a bearer token; a read-only token may only GET.",
    ),
    paths(
        webhook::receive_webhook,
        health::index,
        health::healthz,
        health::readyz,
        metrics::metrics,
        events::list_events,
        events::show_event,
        events::show_event_by_query,
        events::act_on_event,
        events::act_on_event_by_query,
        accounts::show_account,
        accounts::show_account_by_query,
        gaps::list_gaps,
        gaps::show_gap,
        gaps::show_gap_by_query,
        gaps::skip_gap,
        gaps::skip_gap_by_query,
        guards::list_held_accounts,
        guards::show_guard,
        guards::reset_guard,
        audit::api,
        failures::api,
        outbox::api,
        dashboard::metrics,
        dashboard::check,
        dashboard::verify,
        openapi_json,
    ),
    modifiers(&Shared, &Links),
    tags(
        (name = "webhooks", description = "What providers POST to"),
        (name = "probes", description = "Liveness, readiness and the Prometheus exposition"),
        (name = "events", description = "Stored events and the actions on one"),
        (name = "accounts", description = "Balances and the ledger"),
        (name = "gaps", description = "Contiguous streams waiting behind a missing number"),
        (name = "guards", description = "High-water sequence guards and the events they hold"),
        (name = "audit", description = "Every operator action"),
        (name = "failures", description = "Why deliveries failed verification"),
        (name = "outbox", description = "What hookledger told other systems"),
        (name = "dashboard", description = "Counters and the ledger check"),
        (name = "contract", description = "This document"),
    ),
)]
struct Contract;

/// The contract, with this build's version.
pub fn document() -> Document {
    let mut document = Contract::openapi();
    document.info.version = env!("CARGO_PKG_VERSION").to_owned();
    document
}

/// The contract as the committed file holds it: pretty JSON and a newline.
pub fn text() -> String {
    let mut text =
        serde_json::to_string_pretty(&document()).expect("an OpenAPI document always serialises");
    text.push('\n');
    text
}

/// [`text`], built once: it depends only on the build.
static SERVED: LazyLock<String> = LazyLock::new(text);

/// This OpenAPI document.
#[utoipa::path(
    get,
    path = "/admin/api/openapi.json",
    tag = "contract",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = Object)),
)]
pub async fn openapi_json(_: BearerAdmin) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(SERVED.as_str())
}

/// An error answer with the one error body.
fn error(description: &str) -> RefOr<utoipa::openapi::Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
        .into()
}

/// Adds `response` under `status` unless the handler described it.
fn answers(operation: &mut Operation, status: &str, description: &str) {
    operation
        .responses
        .responses
        .entry(status.to_owned())
        .or_insert_with(|| error(description));
}

/// What every admin route shares, and what any route with a body can
/// answer.
struct Shared;

impl Modify for Shared {
    fn modify(&self, document: &mut Document) {
        let components = document.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        for (path, item) in document.paths.paths.iter_mut() {
            let admin = path.starts_with(ADMIN_API);
            // OpenAPI requires it of every path parameter; a parameter
            // with its own schema function (`schema_with`) comes without.
            for operation in [&mut item.get, &mut item.post].into_iter().flatten() {
                for parameter in operation.parameters.iter_mut().flatten() {
                    if let RefOr::T(parameter) = parameter
                        && parameter.parameter_in == ParameterIn::Path
                    {
                        parameter.required = Required::True;
                    }
                }
            }
            for (method, operation) in [
                (HttpMethod::Get, &mut item.get),
                (HttpMethod::Post, &mut item.post),
            ] {
                let Some(operation) = operation else { continue };
                if operation.request_body.is_some() {
                    answers(operation, "400", "A body that cannot be read");
                    answers(
                        operation,
                        "408",
                        "The body did not arrive within the read deadline",
                    );
                    answers(operation, "413", "The body is larger than the limit");
                }
                if !admin {
                    continue;
                }
                operation.security = Some(vec![SecurityRequirement::new(
                    "bearer",
                    Vec::<String>::new(),
                )]);
                answers(operation, "401", "No or a wrong admin token");
                answers(
                    operation,
                    "429",
                    "Too many wrong tokens from this address: retry after `Retry-After` seconds",
                );
                answers(
                    operation,
                    "503",
                    "The database is unavailable: retry after `Retry-After` seconds",
                );
                if method == HttpMethod::Post {
                    answers(operation, "403", "A read-only token, which may only GET");
                }
            }
        }
    }
}

/// The links between routes: from a list to one of its items, and from an
/// item to the actions on it, with the values the first answer carries.
struct Links;

/// (from operation, link name, to operation, parameters: name and where
/// in the answer's body).
type LinkSpec = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

const LINKS: &[LinkSpec] = &[
    (
        "list_events",
        "ShowEvent",
        "show_event_by_query",
        &[("source", "/events/0/source"), ("id", "/events/0/event_id")],
    ),
    (
        "list_events",
        "ShowAccount",
        "show_account_by_query",
        &[("id", "/events/0/account_id")],
    ),
    (
        "show_event_by_query",
        "ActOnEvent",
        "act_on_event_by_query",
        &[("source", "/source"), ("id", "/event_id")],
    ),
    (
        "list_gaps",
        "ShowGap",
        "show_gap_by_query",
        &[
            ("source", "/gaps/0/source"),
            ("account", "/gaps/0/account_id"),
        ],
    ),
    (
        "list_gaps",
        "SkipGap",
        "skip_gap_by_query",
        &[
            ("source", "/gaps/0/source"),
            ("account", "/gaps/0/account_id"),
        ],
    ),
    (
        "list_held_accounts",
        "ShowGuard",
        "show_guard",
        &[
            ("source", "/accounts/0/source"),
            ("account", "/accounts/0/account_id"),
        ],
    ),
    (
        "show_guard",
        "ResetGuard",
        "reset_guard",
        &[("source", "/source"), ("account", "/account_id")],
    ),
];

impl Modify for Links {
    fn modify(&self, document: &mut Document) {
        for item in document.paths.paths.values_mut() {
            for operation in [&mut item.get, &mut item.post].into_iter().flatten() {
                let Some(id) = operation.operation_id.clone() else {
                    continue;
                };
                for (_, name, to, parameters) in LINKS.iter().filter(|link| link.0 == id) {
                    let Some(RefOr::T(ok)) = operation.responses.responses.get_mut("200") else {
                        continue;
                    };
                    let link = parameters.iter().fold(
                        LinkBuilder::new().operation_id(*to),
                        |link, (parameter, pointer)| {
                            link.parameter(*parameter, format!("$response.body#{pointer}"))
                        },
                    );
                    ok.links.insert((*name).to_owned(), link.build().into());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use utoipa::openapi::schema::Schema;

    use super::*;

    /// What `admin::target::plain_id` takes, as the contract writes it on
    /// every id parameter (`#[param(pattern = ...)]` takes only a literal):
    /// no control character, which is Unicode's `Cc` (`char::is_control`).
    /// `maxLength` (255) counts characters where the rule counts bytes, so
    /// it bounds ASCII ids exactly.
    const PLAIN_PATTERN: &str = r"^[^\u0000-\u001f\u007f-\u009f]*$";

    #[test]
    fn the_id_pattern_excludes_exactly_the_control_characters() {
        let excluded = |c: char| matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}');
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            assert_eq!(excluded(c), c.is_control(), "{:#x}", c as u32);
        }
    }

    #[test]
    fn every_bounded_string_parameter_is_an_id_with_the_id_pattern() {
        let document = document();
        let mut ids = 0;
        for (path, item) in &document.paths.paths {
            for operation in [&item.get, &item.post].into_iter().flatten() {
                for parameter in operation.parameters.iter().flatten() {
                    let RefOr::T(parameter) = parameter else {
                        continue;
                    };
                    let Some(RefOr::T(Schema::Object(schema))) = &parameter.schema else {
                        continue;
                    };
                    if schema.max_length == Some(255) {
                        ids += 1;
                        assert_eq!(
                            schema.pattern.as_deref(),
                            Some(PLAIN_PATTERN),
                            "{path} {}",
                            parameter.name
                        );
                    }
                }
            }
        }
        assert!(ids >= 20, "only {ids} id parameters");
    }

    #[test]
    fn every_link_names_operations_the_document_has() {
        let document = document();
        let ids: Vec<String> = document
            .paths
            .paths
            .values()
            .flat_map(|item| [&item.get, &item.post])
            .flatten()
            .filter_map(|operation| operation.operation_id.clone())
            .collect();
        for (from, name, to, _) in LINKS {
            assert!(
                ids.iter().any(|id| id == from),
                "{name}: no operation {from}"
            );
            assert!(ids.iter().any(|id| id == to), "{name}: no operation {to}");
        }
    }

    /// The query form of a route is documented apart from its path form
    /// (one handler each); they must answer alike: the same statuses with
    /// the same bodies, the same request body.
    #[test]
    fn each_query_form_is_documented_as_its_path_form() {
        let document = serde_json::to_value(document()).unwrap();
        let by_id = |id: &str| {
            document["paths"]
                .as_object()
                .unwrap()
                .values()
                .flat_map(|item| item.as_object().unwrap().values())
                .find(|operation| operation["operationId"] == id)
                .unwrap_or_else(|| panic!("no operation {id}"))
                .clone()
        };
        let answers = |operation: &serde_json::Value| -> Vec<(String, serde_json::Value)> {
            operation["responses"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(status, response)| (status.clone(), response["content"].clone()))
                .collect()
        };
        for path_form in [
            "show_event",
            "act_on_event",
            "show_gap",
            "skip_gap",
            "show_account",
        ] {
            let query_form = format!("{path_form}_by_query");
            let (a, b) = (by_id(path_form), by_id(&query_form));
            assert_eq!(answers(&a), answers(&b), "{path_form} and {query_form}");
            assert_eq!(a["requestBody"], b["requestBody"], "{path_form}");
            assert!(answers(&a).len() >= 6, "{path_form}: {:?}", answers(&a));
        }
    }

    #[test]
    fn every_admin_operation_takes_the_bearer_token_and_no_public_one_does() {
        let document = document();
        for (path, item) in &document.paths.paths {
            for operation in [&item.get, &item.post].into_iter().flatten() {
                let secured = operation.security.as_ref().is_some_and(|s| !s.is_empty());
                assert_eq!(secured, path.starts_with(ADMIN_API), "{path}");
            }
        }
    }
}
