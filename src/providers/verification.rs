//! What a kind's `verify` answers: what the signature proved
//! ([`Verified`]), or why it proved nothing ([`VerifyError`], with the
//! stable codes metrics and error bodies use).

/// What a successful verification proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Position of the key that verified (the source maps it to the
    /// configured secret; never the secret).
    pub key_index: usize,
    /// The signed timestamp, where the scheme signs one.
    pub timestamp: Option<i64>,
    /// The event id, where the scheme signs it outside the body.
    pub event_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("{0} header is missing")]
    MissingHeader(&'static str),
    #[error("{header} header is malformed: {problem}")]
    MalformedHeader {
        header: &'static str,
        problem: &'static str,
    },
    /// The signature is inside the body (Adyen), and the body is unusable.
    #[error("the signed fields cannot be read: {0}")]
    MalformedBody(String),
    #[error(
        "signed timestamp is {skew_secs} s from now, outside the tolerance of {tolerance_secs} s"
    )]
    OutsideTolerance { skew_secs: i64, tolerance_secs: u64 },
    #[error("no signature matched any of the {keys} configured secret(s)")]
    NoMatch { keys: usize },
}

impl VerifyError {
    /// A stable code for metrics and the JSON error body.
    pub fn code(&self) -> &'static str {
        match self {
            VerifyError::MissingHeader(_) => "missing_signature_header",
            VerifyError::MalformedHeader { .. } => "malformed_signature_header",
            VerifyError::MalformedBody(_) => "malformed_signed_body",
            VerifyError::OutsideTolerance { .. } => "timestamp_outside_tolerance",
            VerifyError::NoMatch { .. } => "signature_mismatch",
        }
    }
}
