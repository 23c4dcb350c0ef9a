//! `--outbox`: after the HTTP phases, waits for the relay to deliver every
//! message the postings wrote, and checks the sink got each one.

use std::path::Path;
use std::time::{Duration, Instant};

use super::args::BenchArgs;
use super::measure;
use super::server::Server;
use super::sink::Sink;
use crate::config::Config;
use crate::startup::connect_store;

/// How long the relay may take to catch up after the last phase.
const DRAIN_WAIT: Duration = Duration::from_secs(300);

/// The relay process on its own (`--relay-later`): its pid, and the CPU
/// it, this process (the sink) and PostgreSQL had used when it started.
struct RelayAlone {
    pid: u32,
    relay: Option<Duration>,
    sink: Option<Duration>,
    database: Option<Duration>,
}

impl RelayAlone {
    fn new(pid: u32, postgres: bool) -> Self {
        Self {
            pid,
            relay: measure::process_cpu(pid),
            sink: measure::process_cpu(std::process::id()),
            database: postgres.then(measure::postgres_cpu),
        }
    }

    /// CPU per message since [`RelayAlone::new`], in microseconds: the
    /// relay's, the sink's and PostgreSQL's.
    fn per_message(&self, messages: usize) -> String {
        let since = |before: Option<Duration>, now: Option<Duration>| {
            let used = now?.saturating_sub(before?);
            Some(used.as_secs_f64() * 1e6 / messages.max(1) as f64)
        };
        let relay = since(self.relay, measure::process_cpu(self.pid));
        let sink = since(self.sink, measure::process_cpu(std::process::id()));
        let database = since(self.database, Some(measure::postgres_cpu()));
        let shown = |us: Option<f64>| us.map_or("-".to_owned(), |us| format!("{us:.0} µs"));
        format!(
            "CPU per message: relay {}, sink {}, PostgreSQL {}",
            shown(relay),
            shown(sink),
            shown(database)
        )
    }
}

/// With `--relay-later`, starts the relay on the server's config now;
/// then [`report`]s the drain of the `postings` written since `started`
/// (the first phase), or since the relay started.
pub async fn after_phases(
    args: &BenchArgs,
    (config, config_path): (&Config, &Path),
    (name, sink): (&str, &Sink),
    started: Instant,
    (postings, postgres): (usize, bool),
) -> Result<(), String> {
    let (relay, since) = match args.relay_later {
        true => (
            Some(Server::start_relay(
                config_path,
                args.server_binary.as_deref(),
            )?),
            (Instant::now(), "the relay started"),
        ),
        false => (None, (started, "the first phase")),
    };
    let alone = relay
        .as_ref()
        .map(|relay| RelayAlone::new(relay.pid(), postgres));
    report(config, (name, sink), since, postings, alone.as_ref()).await
}

/// Prints how long the relay took to deliver everything since `started`
/// (what `since` names), and with `alone` the CPU each message cost; an
/// error if it did not, or if the sink missed a posting.
async fn report(
    config: &Config,
    (name, sink): (&str, &Sink),
    (started, since): (Instant, &str),
    postings: usize,
    alone: Option<&RelayAlone>,
) -> Result<(), String> {
    let phases_ended = Instant::now();
    let store = connect_store(config).await.map_err(|e| e.to_string())?;
    loop {
        let stats = store.outbox_stats(name).await.map_err(|e| e.to_string())?;
        if stats.pending == 0 {
            break;
        }
        if phases_ended.elapsed() > DRAIN_WAIT {
            return Err(format!(
                "outbox: {} message(s) still pending {DRAIN_WAIT:?} after the phases",
                stats.pending
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    store.close().await;
    let (ids, requests) = sink.counts();
    let whole = started.elapsed().as_secs_f64();
    println!(
        "outbox: {ids} postings delivered ({requests} requests), drained {:.1} s after the \
         phases ended: {:.0} messages/s since {since}",
        phases_ended.elapsed().as_secs_f64(),
        ids as f64 / whole.max(1e-9)
    );
    if let Some(alone) = alone {
        println!("outbox: {}", alone.per_message(ids));
    }
    if ids != postings {
        return Err(format!(
            "outbox: the sink got {ids} distinct postings, the ledger has {postings}"
        ));
    }
    Ok(())
}
