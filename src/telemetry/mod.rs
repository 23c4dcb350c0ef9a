//! The log subscriber, the budget that keeps what unauthenticated clients
//! can make us log bounded, and the metrics: counters and histograms other
//! modules record into, and their Prometheus exposition.

mod budget;
mod instruments;
mod metrics;
pub mod prometheus;
pub mod source_stats;
pub mod timeline;

pub use budget::{LogBudget, Overflow};
pub use instruments::OutboxInstruments;
pub use metrics::{Counters, Metrics};

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// actix-http logs every malformed or timed-out connection at ERROR
/// ("stream error: ..."), so any client could fill the log and trip error
/// alerts. The connection wrapper in `startup` counts and logs those itself,
/// through the [`LogBudget`]; actix's own lines are dropped.
const QUIET_ACTIX: &str = "actix_http::h1::dispatcher=off";

/// `HOOKLEDGER_LOG` (or `RUST_LOG`) filters, default `info`; logs go to
/// stderr so stdout stays for the start-up banner and command output.
/// `HOOKLEDGER_LOG_FORMAT=json` writes one JSON object per line (the
/// event's fields at the top level, beside `timestamp`, `level`, `target`
/// and `message`), for a log pipeline; otherwise text, coloured only on a
/// terminal.
pub fn init_logging() {
    let filter = std::env::var("HOOKLEDGER_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".to_owned());
    let filter = EnvFilter::try_new(format!("{filter},{QUIET_ACTIX}"))
        .unwrap_or_else(|_| EnvFilter::new(format!("info,{QUIET_ACTIX}")));
    let format = std::env::var("HOOKLEDGER_LOG_FORMAT").unwrap_or_default();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format.as_str() {
        "json" => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .init(),
        _ => builder.with_ansi(std::io::stderr().is_terminal()).init(),
    }
    if !matches!(format.as_str(), "" | "json" | "text") {
        tracing::warn!("HOOKLEDGER_LOG_FORMAT={format:?} is not json or text: logging text");
    }
}
