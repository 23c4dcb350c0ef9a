//! The one place that knows HTTP status codes. Every error body is
//! `{"error": "<stable_code>", "message": "..."}`; internal errors are logged
//! with their cause chain and answered without internals.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

use crate::domain::Status;
use crate::operator::OperatorError;
use crate::providers::VerifyError;
use crate::receive::ReceiveError;
use crate::store::StoreError;

/// Every error answer's body.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// A stable code: `bad_request`, `unauthorized`, `not_found`,
    /// `conflict`, `wrong_status`, `unavailable`, a verification reason
    /// (`signature_mismatch`, ...), ...
    pub error: &'static str,
    /// What went wrong, for a person.
    pub message: String,
    /// For `wrong_status`: the event's status now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("no source named {0:?} is configured")]
    UnknownSource(String),
    #[error("body is larger than the limit of {0} bytes")]
    BodyTooLarge(usize),
    #[error("could not read the request body")]
    BodyUnreadable,
    /// The body did not arrive within the read deadline.
    #[error("{0}")]
    RequestTimeout(String),
    #[error("{0}")]
    Verification(VerifyError),
    #[error("{0}")]
    BadRequest(String),
    #[error("missing or invalid admin credentials")]
    Unauthorized,
    /// `GET /metrics` without its own token (`metrics.token`).
    #[error("missing or invalid metrics token: /metrics takes metrics.token as a bearer token")]
    UnauthorizedMetrics,
    /// Too many failed sign-ins from this address; retry after the seconds.
    #[error("too many failed sign-ins from this address; retry in {0} s")]
    TooManyAttempts(u64),
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A known path asked with a method it does not answer; the methods it
    /// does, for `Allow`.
    #[error("this path answers {0} only")]
    MethodNotAllowed(String),
    #[error("event is {status}; this action needs a {wanted}")]
    WrongStatus {
        status: Status,
        wanted: &'static str,
    },
    /// The request no longer matches the state it was made for.
    #[error("{0}")]
    Conflict(String),
    #[error("the database is unavailable; retry later")]
    Unavailable,
    /// This instance is shutting down (`/readyz` while it drains).
    #[error("this instance is draining before it stops; send to another")]
    Draining,
    #[error("internal error")]
    Internal,
}

impl ApiError {
    fn code(&self) -> &'static str {
        match self {
            ApiError::UnknownSource(_) => "unknown_source",
            ApiError::BodyTooLarge(_) => "body_too_large",
            ApiError::BodyUnreadable => "body_unreadable",
            ApiError::RequestTimeout(_) => "request_timeout",
            ApiError::Verification(e) => e.code(),
            ApiError::BadRequest(_) => "bad_request",
            ApiError::Unauthorized | ApiError::UnauthorizedMetrics => "unauthorized",
            ApiError::TooManyAttempts(_) => "too_many_attempts",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed(_) => "method_not_allowed",
            ApiError::WrongStatus { .. } => "wrong_status",
            ApiError::Conflict(_) => "conflict",
            ApiError::Unavailable => "unavailable",
            ApiError::Draining => "draining",
            ApiError::Internal => "internal",
        }
    }
}

/// Logs a failure with its whole cause chain.
fn log_chain(context: &str, error: &(dyn std::error::Error + 'static)) {
    let mut chain = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    tracing::error!("{context}: {chain}");
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        if error.is_transient() {
            // Answered 503 so the provider retries, but an operator should
            // know: the database is down, full or overloaded.
            log_chain("database unavailable", &error);
            ApiError::Unavailable
        } else {
            log_chain("database failure", &error);
            ApiError::Internal
        }
    }
}

impl From<ReceiveError> for ApiError {
    fn from(error: ReceiveError) -> Self {
        match error {
            ReceiveError::Verification(e) => ApiError::Verification(e),
            ReceiveError::Store(e) => e.into(),
            ReceiveError::Unavailable(why) => {
                tracing::warn!("a delivery is answered 503 for its sender to retry: {why}");
                ApiError::Unavailable
            }
        }
    }
}

impl From<OperatorError> for ApiError {
    fn from(error: OperatorError) -> Self {
        match error {
            OperatorError::NotFound => ApiError::NotFound("event"),
            OperatorError::WrongStatus(status, wanted) => ApiError::WrongStatus { status, wanted },
            OperatorError::NothingWaiting => ApiError::NotFound("waiting event"),
            OperatorError::NoGuard => ApiError::NotFound("sequence guard"),
            error @ (OperatorError::NothingToSkip { .. }
            | OperatorError::Refused(_)
            | OperatorError::GuardReset(_)) => ApiError::Conflict(error.to_string()),
            OperatorError::Store(e) => e.into(),
        }
    }
}

impl From<crate::replay::ReplayError> for ApiError {
    fn from(error: crate::replay::ReplayError) -> Self {
        use crate::replay::ReplayError;
        match error {
            ReplayError::NotFound => ApiError::NotFound("event"),
            ReplayError::NotReplayable(status) => ApiError::WrongStatus {
                status,
                wanted: "rejected or ignored event",
            },
            ReplayError::Unconfigured(source) => ApiError::UnknownSource(source),
            ReplayError::Store(e) => e.into(),
            error => ApiError::Conflict(error.to_string()),
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::UnknownSource(_) | ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::BodyTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::BodyUnreadable | ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Verification(_) | ApiError::Unauthorized | ApiError::UnauthorizedMetrics => {
                StatusCode::UNAUTHORIZED
            }
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::TooManyAttempts(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::WrongStatus { .. } | ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Unavailable | ApiError::Draining => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let body = ErrorBody {
            error: self.code(),
            message: self.to_string(),
            status: match self {
                ApiError::WrongStatus { status, .. } => Some(*status),
                _ => None,
            },
        };
        let mut response = HttpResponse::build(self.status_code());
        match self {
            ApiError::Unavailable | ApiError::Draining => {
                response.insert_header((header::RETRY_AFTER, HeaderValue::from_static("5")));
            }
            ApiError::Unauthorized | ApiError::UnauthorizedMetrics => {
                response
                    .insert_header((header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer")));
            }
            ApiError::TooManyAttempts(secs) => {
                response.insert_header((header::RETRY_AFTER, secs.to_string()));
            }
            ApiError::MethodNotAllowed(allow) => {
                response.insert_header((header::ALLOW, allow.as_str()));
            }
            // The rest of the body may still be on its way: this connection
            // cannot be read further.
            ApiError::RequestTimeout(_) => {
                response.force_close();
            }
            _ => {}
        }
        response.insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")));
        response.json(body)
    }
}
