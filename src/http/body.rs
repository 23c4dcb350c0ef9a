//! Reading a request body with a hard size limit, and header access for
//! providers.

use actix_web::HttpRequest;
use actix_web::http::header::{CONTENT_LENGTH, HeaderMap};
use actix_web::web::{Bytes, Payload};

use super::ApiError;
use super::deadline::timed_out;
use crate::providers::HeaderSource;

/// Reads the whole body, refusing more than `limit` bytes: at once from a
/// `Content-Length` over the limit, else as soon as the stream passes it.
pub async fn read_limited(
    request: &HttpRequest,
    payload: Payload,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(ApiError::BodyTooLarge(limit));
    }
    match payload.to_bytes_limited(limit).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(error)) if error.as_error().is_some_and(timed_out) => {
            Err(ApiError::RequestTimeout(error.to_string()))
        }
        Ok(Err(_)) => Err(ApiError::BodyUnreadable),
        Err(_) => Err(ApiError::BodyTooLarge(limit)),
    }
}

/// Providers read headers through this.
pub(super) struct ActixHeaders<'a>(pub &'a HeaderMap);

impl HeaderSource for ActixHeaders<'_> {
    fn raw_header(&self, name: &str) -> Option<&[u8]> {
        self.0.get(name).map(|value| value.as_bytes())
    }

    fn names(&self) -> Vec<String> {
        // actix stores names lowercase.
        self.0.keys().map(|name| name.as_str().to_owned()).collect()
    }
}
