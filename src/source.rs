//! A configured source at run time: its provider, keys and policies.

use std::fmt;

use crate::domain::{OrderingPolicy, SourceName};
use crate::providers::{Mapping, Provider};
use crate::secret::KeyBytes;

pub struct Source {
    pub name: SourceName,
    pub provider: &'static dyn Provider,
    /// Derived from the configured secrets, in order; any one may verify.
    pub keys: Vec<KeyBytes>,
    pub tolerance_secs: u64,
    pub ordering: OrderingPolicy,
    pub mapping: Mapping,
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("name", &self.name)
            .field("kind", &self.provider.kind())
            .field("secrets", &self.keys.len())
            .field("tolerance_secs", &self.tolerance_secs)
            .field("ordering", &self.ordering)
            .field("account_path", &self.mapping.account_path.as_str())
            .finish()
    }
}
