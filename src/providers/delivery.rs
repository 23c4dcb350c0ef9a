//! One incoming request as a provider sees it: the raw body and read access
//! to the headers, with no HTTP framework.

use chrono::{DateTime, Utc};

use super::VerifyError;

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
}
