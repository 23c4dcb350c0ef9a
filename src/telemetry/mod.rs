//! The log subscriber, and the budget that keeps what unauthenticated
//! clients can make us log bounded. Counters live in [`crate::metrics`].

mod budget;

pub use budget::{LogBudget, Overflow};

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// actix-http logs every malformed or timed-out connection at ERROR
/// ("stream error: ..."), so any client could fill the log and trip error
/// alerts. The connection wrapper in `startup` counts and logs those itself,
/// through the [`LogBudget`]; actix's own lines are dropped.
const QUIET_ACTIX: &str = "actix_http::h1::dispatcher=off";

/// `HOOKLEDGER_LOG` (or `RUST_LOG`) filters, default `info`; logs go to
/// stderr so stdout stays for the start-up banner and command output.
/// Coloured only on a terminal: a file or a pipe gets plain text.
pub fn init_logging() {
    let filter = std::env::var("HOOKLEDGER_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".to_owned());
    let filter = EnvFilter::try_new(format!("{filter},{QUIET_ACTIX}"))
        .unwrap_or_else(|_| EnvFilter::new(format!("info,{QUIET_ACTIX}")));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
