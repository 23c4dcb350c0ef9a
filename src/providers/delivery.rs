//! One incoming request as a provider sees it: the raw body and read access
//! to the headers, with no HTTP framework.

use chrono::{DateTime, Utc};

use super::verification::VerifyError;

/// Read access to request headers.
pub trait HeaderSource {
    /// The header's bytes as received, if present. Names are
    /// case-insensitive.
    fn raw_header(&self, name: &str) -> Option<&[u8]>;

    /// The names of the headers present, lowercase, for a failure's record
    /// (never their values).
    fn names(&self) -> Vec<String> {
        Vec::new()
    }

    /// The header's value, if present and visible ASCII (tab allowed).
    fn header(&self, name: &str) -> Option<&str> {
        self.raw_header(name)
            .filter(|v| v.iter().all(|&b| b == b'\t' || (b' '..=b'~').contains(&b)))
            .and_then(|v| std::str::from_utf8(v).ok())
    }
}

/// Headers as plain (name, value) pairs: for tests and the CLI.
pub struct HeaderPairs<'a>(pub &'a [(&'a str, &'a str)]);

impl HeaderSource for HeaderPairs<'_> {
    fn raw_header(&self, name: &str) -> Option<&[u8]> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_bytes())
    }

    fn names(&self) -> Vec<String> {
        self.0.iter().map(|(n, _)| n.to_ascii_lowercase()).collect()
    }
}

/// Headers that remember which of them a scheme read (and found): what
/// verified and mapped a delivery, kept with its event. Bounded: at most
/// [`RecordingHeaders::MAX`] headers of at most [`RecordingHeaders::VALUE_MAX`]
/// bytes each, whatever a client sends.
pub struct RecordingHeaders<'a> {
    inner: &'a dyn HeaderSource,
    read: std::sync::Mutex<Vec<(String, String)>>,
}

impl<'a> RecordingHeaders<'a> {
    pub const MAX: usize = 16;
    pub const VALUE_MAX: usize = 2048;

    pub fn new(inner: &'a dyn HeaderSource) -> Self {
        Self {
            inner,
            read: std::sync::Mutex::default(),
        }
    }

    /// The headers read, as a JSON object of lowercase name -> value;
    /// `None` if none was.
    pub fn to_json(&self) -> Option<String> {
        let read = self.read.lock().unwrap_or_else(|p| p.into_inner());
        if read.is_empty() {
            return None;
        }
        let object: serde_json::Map<String, serde_json::Value> = read
            .iter()
            .map(|(name, value)| (name.clone(), serde_json::Value::from(value.as_str())))
            .collect();
        Some(serde_json::Value::Object(object).to_string())
    }
}

impl HeaderSource for RecordingHeaders<'_> {
    fn raw_header(&self, name: &str) -> Option<&[u8]> {
        let value = self.inner.raw_header(name)?;
        let name = name.to_ascii_lowercase();
        let mut read = self.read.lock().unwrap_or_else(|p| p.into_inner());
        if read.len() < Self::MAX && !read.iter().any(|(seen, _)| *seen == name) {
            let kept = &value[..value.len().min(Self::VALUE_MAX)];
            read.push((name, String::from_utf8_lossy(kept).into_owned()));
        }
        Some(value)
    }

    fn names(&self) -> Vec<String> {
        self.inner.names()
    }
}

pub struct Delivery<'a> {
    pub headers: &'a dyn HeaderSource,
    pub body: &'a [u8],
    /// When it arrived (the app's clock): the order of last resort for
    /// events that carry no time of their own (Paystack's refunds).
    pub received_at: DateTime<Utc>,
}

impl Delivery<'_> {
    /// A header the scheme needs: missing, or present but not visible
    /// ASCII (no signature scheme uses anything else), or its value.
    pub fn required(&self, name: &'static str) -> Result<&str, VerifyError> {
        match self.headers.header(name) {
            Some(value) => Ok(value),
            None if self.headers.raw_header(name).is_some() => Err(VerifyError::MalformedHeader {
                header: name,
                problem: "not visible ASCII",
            }),
            None => Err(VerifyError::MissingHeader(name)),
        }
    }

    /// An optional header: absent (or not ASCII, which no provider sends)
    /// is `None`.
    pub fn optional(&self, name: &str) -> Option<&str> {
        self.headers.header(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_that_is_not_ascii_is_malformed_not_missing() {
        let pairs = [("Stripe-Signature", "t=1,v1=é"), ("x-ok", "t=1,\tv1=ab")];
        let headers = HeaderPairs(&pairs);
        let delivery = Delivery {
            headers: &headers,
            body: b"",
            received_at: DateTime::UNIX_EPOCH,
        };
        assert_eq!(
            delivery.required("stripe-signature"),
            Err(VerifyError::MalformedHeader {
                header: "stripe-signature",
                problem: "not visible ASCII"
            })
        );
        assert_eq!(delivery.required("X-OK"), Ok("t=1,\tv1=ab"));
        assert_eq!(
            delivery.required("webhook-id"),
            Err(VerifyError::MissingHeader("webhook-id"))
        );
    }

    #[test]
    fn recording_keeps_each_header_read_once_and_only_those() {
        let pairs = [
            ("Stripe-Signature", "t=1,v1=ab"),
            ("Authorization", "Bearer never-read"),
            ("X-Long", "x"),
        ];
        let headers = HeaderPairs(&pairs);
        let recorded = RecordingHeaders::new(&headers);
        assert_eq!(recorded.to_json(), None);
        let delivery = Delivery {
            headers: &recorded,
            body: b"",
            received_at: DateTime::UNIX_EPOCH,
        };
        assert_eq!(delivery.required("stripe-signature"), Ok("t=1,v1=ab"));
        assert_eq!(delivery.optional("STRIPE-SIGNATURE"), Some("t=1,v1=ab"));
        assert_eq!(delivery.optional("webhook-id"), None);
        assert_eq!(
            recorded.to_json().as_deref(),
            Some(r#"{"stripe-signature":"t=1,v1=ab"}"#)
        );
    }

    #[test]
    fn recording_is_bounded() {
        let long = "v".repeat(RecordingHeaders::VALUE_MAX + 10);
        let names: Vec<String> = (0..RecordingHeaders::MAX + 4)
            .map(|n| format!("x-{n}"))
            .collect();
        let pairs: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), long.as_str())).collect();
        let headers = HeaderPairs(&pairs);
        let recorded = RecordingHeaders::new(&headers);
        for name in &names {
            assert_eq!(recorded.raw_header(name).map(<[u8]>::len), Some(long.len()));
        }
        let json: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&recorded.to_json().unwrap()).unwrap();
        assert_eq!(json.len(), RecordingHeaders::MAX);
        assert!(
            json.values()
                .all(|v| v.as_str().unwrap().len() == RecordingHeaders::VALUE_MAX)
        );
    }
}
