//! Why a provider's API could not be read, said plainly, with the label
//! the metrics count it under.

/// Why a run could not read the provider's records.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 401 or 403: the key is wrong, revoked, or may not read events.
    #[error("the provider refused the API key: HTTP {status}{detail}")]
    Refused { status: u16, detail: String },
    #[error(
        "the provider kept answering HTTP 429 (rate limited) past {0} tries or a minute's wait"
    )]
    RateLimited(u32),
    #[error("the provider answered HTTP {status}{detail}")]
    Failed { status: u16, detail: String },
    /// 404: what was asked for does not exist at the provider.
    #[error("the provider has no such object: HTTP 404{0}")]
    NotFound(String),
    #[error("could not reach the provider: {0}")]
    Network(String),
    /// A page that is not what the provider documents.
    #[error("the provider's answer is not a page of events: {0}")]
    Malformed(String),
}

impl ApiError {
    /// The metrics label.
    pub fn reason(&self) -> &'static str {
        match self {
            ApiError::Refused { .. } => "refused",
            ApiError::RateLimited(_) => "rate_limited",
            ApiError::Failed { .. } | ApiError::NotFound(_) => "provider_error",
            ApiError::Network(_) => "network",
            ApiError::Malformed(_) => "malformed",
        }
    }
}
