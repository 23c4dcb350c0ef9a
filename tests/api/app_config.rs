//! The config text every test app starts from, and the options a test
//! splices into it.

use crate::helpers::{ADMIN_TOKEN, DEMO_OLD_SECRET, DEMO_SECRET, STRIPE_SECRET};

/// Options for [`TestApp::spawn_with`]: config lines to add at the top
/// level, in `[database]`, and after the standard sources.
#[derive(Default)]
pub struct Options<'a> {
    pub top_level: &'a str,
    pub database: &'a str,
    pub extra_sources: &'a str,
    /// As `serve --no-relay`: the outbox is written, and left to
    /// `hookledger relay` processes.
    pub no_relay: bool,
}

/// The config every test app starts from, with `options` spliced in.
pub fn base_config(database_url: &str, options: &Options<'_>) -> String {
    let Options {
        top_level,
        database,
        extra_sources,
        ..
    } = options;
    // A test that sizes the pool itself replaces the default size.
    let pool = ["max_connections = 8", ""][usize::from(database.contains("max_connections"))];
    format!(
        r#"
listen = "127.0.0.1:0"
database_url = "{database_url}"
workers = 2
# A delivery wakes the drain task; no test may rely on its periodic sweep.
release_sweep_secs = 86400
{top_level}

[database]
{pool}
{database}

[admin]
token = "{ADMIN_TOKEN}"

[[sources]]
name = "demo"
kind = "standard-webhooks"
secrets = ["{DEMO_SECRET}", "{DEMO_OLD_SECRET}"]

[[sources]]
name = "stripe"
kind = "stripe"
secrets = ["{STRIPE_SECRET}"]

[[sources]]
name = "lenient"
kind = "standard-webhooks"
secrets = ["{DEMO_SECRET}"]
on_stale = "apply"

[[sources]]
name = "ledger"
kind = "standard-webhooks"
secrets = ["{DEMO_SECRET}"]
ordering = "contiguous"
gap_timeout_secs = 600

[[sources]]
name = "ledger-small"
kind = "standard-webhooks"
secrets = ["{DEMO_SECRET}"]
ordering = "contiguous"
first_sequence = 0
release_batch = 3
{extra_sources}
"#
    )
}
