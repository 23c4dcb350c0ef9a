//! A configured source at run time: its provider, keys and policies.

use std::fmt;

use crate::domain::SourceName;
use crate::providers::{Mapping, Provider};
use crate::secret::KeyBytes;

/// What to do with an event older than its account's sequence guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnStale {
    /// Hold it as `stale` for an operator (the default).
    Hold,
    /// Apply it anyway (reason "applied out of order"); the guard stays put.
    Apply,
}

pub struct Source {
    pub name: SourceName,
    pub provider: &'static dyn Provider,
    /// Derived from the configured secrets, in order; any one may verify.
    pub keys: Vec<KeyBytes>,
    pub tolerance_secs: u64,
    pub on_stale: OnStale,
    pub mapping: Mapping,
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("name", &self.name)
            .field("kind", &self.provider.kind())
            .field("secrets", &self.keys.len())
            .field("tolerance_secs", &self.tolerance_secs)
            .field("on_stale", &self.on_stale)
            .field("account_path", &self.mapping.account_path.as_str())
            .finish()
    }
}
