//! Identifier newtypes. Each one validates on construction so that the rest of
//! the code never has to ask whether a string is empty, too long or hostile.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {problem}")]
pub struct IdError {
    pub what: &'static str,
    pub problem: &'static str,
}

/// Longest identifier we store. Providers' ids are far shorter (Stripe's are
/// ~30 characters); the bound keeps a hostile payload from bloating indexes.
const MAX_ID_BYTES: usize = 255;

fn check_text(what: &'static str, value: &str) -> Result<(), IdError> {
    let problem = if value.is_empty() {
        "must not be empty"
    } else if value.len() > MAX_ID_BYTES {
        "must be at most 255 bytes"
    } else if value.chars().any(char::is_control) {
        "must not contain control characters"
    } else {
        return Ok(());
    };
    Err(IdError { what, problem })
}

macro_rules! text_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

text_newtype!(
    /// A configured source: the URL path segment of `POST /webhooks/{source}`.
    SourceName
);
text_newtype!(
    /// The provider's id for one event: the idempotency key within a source.
    EventId
);
text_newtype!(
    /// The customer account whose balance an event moves.
    AccountId
);

impl SourceName {
    /// Lower-case ASCII letters, digits, `-` and `_`, starting with a letter
    /// or digit, at most 64 characters: safe in a URL path and in env names.
    pub fn parse(value: &str) -> Result<Self, IdError> {
        let ok = !value.is_empty()
            && value.len() <= 64
            && value.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && value
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(IdError {
                what: "source name",
                problem: "must be 1-64 characters of a-z, 0-9, '-' or '_'",
            })
        }
    }
}

impl EventId {
    /// Any non-empty provider id without control characters: we must accept
    /// whatever the provider sends, since it is the key we deduplicate on.
    pub fn parse(value: &str) -> Result<Self, IdError> {
        check_text("event id", value)?;
        Ok(Self(value.to_owned()))
    }
}

impl AccountId {
    /// Like an event id, and without surrounding white space: `" acct_1"`
    /// would silently become a second account.
    pub fn parse(value: &str) -> Result<Self, IdError> {
        check_text("account id", value)?;
        if value.trim() != value {
            return Err(IdError {
                what: "account id",
                problem: "must not start or end with white space",
            });
        }
        Ok(Self(value.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_names_are_url_safe() {
        assert!(SourceName::parse("stripe").is_ok());
        assert!(SourceName::parse("stripe-eu_2").is_ok());
        for bad in ["", "Stripe", "-x", "a/b", "a b", &"x".repeat(65)] {
            assert!(SourceName::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn event_ids_reject_empty_long_and_control() {
        assert_eq!(EventId::parse("evt_1").unwrap().as_str(), "evt_1");
        assert!(EventId::parse("").is_err());
        assert!(EventId::parse(&"e".repeat(256)).is_err());
        assert!(EventId::parse("evt\n1").is_err());
        assert!(EventId::parse(&"e".repeat(255)).is_ok());
    }

    #[test]
    fn account_ids_reject_surrounding_space() {
        assert!(AccountId::parse("acct_1").is_ok());
        assert!(AccountId::parse("acct 1").is_ok());
        let err = AccountId::parse(" acct_1").unwrap_err();
        assert_eq!(
            err.to_string(),
            "account id must not start or end with white space"
        );
    }
}
