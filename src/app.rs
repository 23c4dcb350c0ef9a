//! The actix App every connection serves: the provider-facing and admin
//! routes, the not-found answer, the extractors' errors as the API's, and
//! the middleware around every request: its body bounded by the read
//! deadline, and its connection's phase moved (`HeadDeadline`: serving when
//! it arrives, answered when it is answered, closed after the answer when
//! the connection is old, or the instance is draining).

use std::time::Duration;

use actix_service::{Service, ServiceFactory};
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::web::{self, Data};
use actix_web::{App, HttpResponse};

use crate::context::Context;
use crate::http::{ApiError, connection, deadline};
use crate::{admin, http};

/// The routes, with every request body bounded by the read deadline, each
/// request's head deadline stopped when it arrives and its connection's
/// phase moved on when it is answered (`HeadDeadline`), and `Connection:
/// close` on answers on a connection older than `max_age` and on every
/// answer while the instance drains.
pub fn app(
    context: Data<Context>,
    read_timeout: Duration,
    max_age: Duration,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let lifecycle = context.lifecycle.clone();
    App::new()
        .app_data(context)
        .app_data(web::PathConfig::default().error_handler(|e, _| bad_request(e)))
        .app_data(web::QueryConfig::default().error_handler(|e, _| bad_request(e)))
        .app_data(http::form::config(http::form::DEFAULT_LIMIT))
        .configure(http::configure)
        .configure(admin::configure)
        .default_service(web::to(not_found))
        .wrap_fn(move |mut request, service| {
            deadline::bound_body(&mut request, read_timeout);
            let phase = connection::serving(&request);
            let answer = service.call(request);
            let lifecycle = lifecycle.clone();
            async move {
                let answer = answer.await;
                if let Some(phase) = &phase {
                    phase.answered();
                }
                // actix turns handler and extractor errors into answers
                // (`handler_service`); an error here could only come from a
                // middleware, and is answered without the close.
                let mut response = answer?;
                if lifecycle.is_draining() {
                    connection::close_after(&mut response);
                } else {
                    connection::close_if_old(phase.as_ref(), &mut response, max_age);
                }
                Ok(response)
            }
        })
}

fn bad_request(error: impl std::fmt::Display) -> actix_web::Error {
    ApiError::BadRequest(error.to_string()).into()
}

async fn not_found() -> HttpResponse {
    actix_web::ResponseError::error_response(&ApiError::NotFound("route"))
}
