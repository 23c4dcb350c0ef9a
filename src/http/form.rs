//! Urlencoded forms: how large one may be, and their errors as the API's
//! (a body that stalls is `408`, anything else `400`).

use actix_web::error::UrlencodedError;
use actix_web::web::FormConfig;

use super::{ApiError, deadline};

/// A form's bound unless its route sets its own: actix's default, ample
/// for every form but the held queue's bulk form.
pub const DEFAULT_LIMIT: usize = 16 * 1024;

/// Forms of at most `limit` bytes, their errors answered as the API's.
pub fn config(limit: usize) -> FormConfig {
    FormConfig::default()
        .limit(limit)
        .error_handler(|e, _| form_error(e))
}

fn form_error(error: UrlencodedError) -> actix_web::Error {
    match &error {
        UrlencodedError::Payload(e) if deadline::timed_out(e) => {
            ApiError::RequestTimeout(e.to_string()).into()
        }
        _ => ApiError::BadRequest(error.to_string()).into(),
    }
}
