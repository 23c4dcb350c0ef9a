//! Where a stored event came from: a webhook delivery, or a reconcile run
//! that found it in the provider's own records after its webhook never
//! arrived (docs/operating/reconcile.md).

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    /// Delivered to `/webhooks/{source}`, its signature verified.
    #[default]
    Webhook,
    /// Fetched over TLS from the provider's API with the source's own key.
    Reconcile,
}

impl Origin {
    pub const ALL: [Origin; 2] = [Origin::Webhook, Origin::Reconcile];

    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Webhook => "webhook",
            Origin::Reconcile => "reconcile",
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Origin {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Origin::ALL
            .into_iter()
            .find(|origin| origin.as_str() == text)
            .ok_or_else(|| format!("unknown origin {text:?} (webhook or reconcile)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_origin_reads_back_as_itself() {
        for origin in Origin::ALL {
            assert_eq!(origin.as_str().parse::<Origin>(), Ok(origin));
        }
        assert!("email".parse::<Origin>().is_err());
    }
}
