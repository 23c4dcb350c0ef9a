//! `hookledger bench`: the load benchmark and the database's ceiling in one
//! run. It starts this binary as a server on a fresh config (SQLite in a
//! temporary folder, or the PostgreSQL database given), drives it with
//! pre-signed deliveries over keep-alive connections (new events, then
//! redeliveries, then a mix), stops it, stores more of the same deliveries
//! straight through `ingest` (the ceiling: the same statements with no
//! HTTP), and checks that every balance equals the sum of the credits
//! answered 200 and that the ledger invariants hold. Timing is printed,
//! never judged; the exit status says whether the result was correct.

mod args;
mod ceiling;
mod drain;
mod drive;
mod measure;
mod pgbench;
mod phases;
mod plan;
mod server;
mod sink;
mod stored;
mod verify;

pub use args::BenchArgs;
pub use sink::{header as http_header, read_http_request};

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::{self, random_bytes};
use crate::secret::Secret;
use crate::startup::connect_store;
use measure::HEADER;
use phases::Phases;
use plan::{Ledger, Rng};

/// The source kind benchmarked: hookledger's own signed format.
const KIND: &str = "standard-webhooks";

pub async fn run(args: BenchArgs) -> Result<(), String> {
    if args.connections == 0 || args.events == 0 || args.accounts == 0 || args.seconds == 0 {
        return Err("--connections, --events, --accounts and --seconds must be above 0".into());
    }
    let seed = match args.seed {
        Some(seed) => seed,
        None => u64::from_le_bytes(random_bytes::<8>().map_err(|e| e.to_string())?),
    };
    // Fresh on every run, seeded or not: a database used before (PostgreSQL
    // is used as is) holds the earlier runs' events and accounts.
    let run_id = hex::encode(random_bytes::<6>().map_err(|e| e.to_string())?);
    let folder = std::env::temp_dir().join(format!("hookledger-bench-{run_id}"));
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let secret_text = format!(
        "whsec_{}",
        base64_of(&random_bytes::<24>().map_err(|e| e.to_string())?)
    );
    let database = args
        .database
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}/bench.db", folder.display()));
    let sink = sink::Sink::default();
    let destination = match args.outbox {
        true => Some(sink.start().await?),
        false => None,
    };
    // Named for the run: a PostgreSQL database is used as is, and may hold
    // an earlier run's messages.
    let sink_name = format!("sink-{run_id}");
    let config_path = server::write_config(
        &folder,
        &database,
        (&secret_text, args.pool),
        destination.as_deref().map(|url| (sink_name.as_str(), url)),
        (args.payments, args.refunds > 0, args.numbered),
    )?;
    let outcome = bench(
        &args,
        seed,
        &run_id,
        &config_path,
        (Secret::new(secret_text), &sink),
    )
    .await;
    if args.keep {
        println!("kept {}", folder.display());
    } else {
        let _ = std::fs::remove_dir_all(&folder);
    }
    outcome
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

async fn bench(
    args: &BenchArgs,
    seed: u64,
    run_id: &str,
    config_path: &std::path::Path,
    (secret, sink): (Secret, &sink::Sink),
) -> Result<(), String> {
    let config = config::load(
        Some(config_path),
        &config::process_env,
        &crate::outbox::destinations::check,
    )
    .map_err(|e| e.to_string())?;
    let postgres = !config.database_url.starts_with("sqlite:");
    let mut phases = Phases {
        args,
        duration: Duration::from_secs(args.seconds),
        postgres,
        ledger: Ledger::new(run_id.to_owned(), KIND.to_owned(), secret, args.accounts)
            .paying(args.payments)
            .refunding(args.refunds)
            .numbering(args.numbered),
        rng: Rng::new(seed),
        rows: Vec::new(),
        suffix: String::new(),
    };
    let server_binary = args.server_binary.as_deref();
    let no_relay = args.relay_later || args.relay_apart;
    stored::check_sizes(&args.stored)?;
    // Each stored size but the last: filled, then the HTTP phases against
    // a server of its own. The last is filled before the run goes on as
    // without `--stored`.
    if let Some((last, earlier)) = args.stored.split_last() {
        for (nth, &postings) in earlier.iter().enumerate() {
            phases.suffix = fill_and_time(&config, postings, args.stored_accounts).await?;
            let mut server =
                server::Server::start(config_path, &config.listen, server_binary, no_relay).await?;
            if nth == 0 {
                print_header(args, seed, &server);
            }
            phases.http(&config.listen, &server).await?;
            server.stop().await;
        }
        phases.suffix = fill_and_time(&config, *last, args.stored_accounts).await?;
    }
    let mut server =
        server::Server::start(config_path, &config.listen, server_binary, no_relay).await?;
    let relay_apart = match args.relay_apart {
        true => Some(server::Server::start_relay(config_path, server_binary)?),
        false => None,
    };
    // Printed above when an earlier stored size ran first.
    if args.stored.len() < 2 {
        print_header(args, seed, &server);
    }
    let started = Instant::now();
    phases.http(&config.listen, &server).await?;
    if args.outbox {
        let name = format!("sink-{run_id}");
        let postings = phases.ledger.accepted.len();
        let config = (&config, config_path);
        drain::after_phases(args, config, (&name, sink), started, (postings, postgres)).await?;
    }
    drop(relay_apart);
    server.stop().await;

    let store = connect_store(&config).await.map_err(|e| e.to_string())?;
    let source = Arc::new(config.sources.into_iter().next().ok_or("no source")?);
    let since = phases.ledger.accepted.len();
    phases.ceilings(&store, &source, since).await?;
    let database = (config.database_url.as_str(), &config.destinations[..]);
    let pgbench_row = phases
        .pgbench(database, (config_path, run_id), &source, since)
        .await?;
    phases.print_ratios(pgbench_row);
    let verdict = verify::verify(&store, &phases.ledger, &phases.rows).await;
    store.close().await;
    verdict
}

/// With the server stopped: the database filled to `postings`, then the
/// operator's reads timed at that size; the suffix of the rows measured
/// there (` @10M`).
async fn fill_and_time(
    config: &config::Config,
    postings: u64,
    accounts: u64,
) -> Result<String, String> {
    // The fill's statements and the ledger check at 10 million run for
    // longer than a delivery's statement timeout allows.
    let mut settings = config.database.clone();
    settings.statement_timeout = std::time::Duration::from_secs(3_600);
    let store = crate::store::Store::connect(&config.database_url, &settings)
        .await
        .map_err(|e| e.to_string())?;
    store.migrate().await.map_err(|e| e.to_string())?;
    let outcome = match stored::fill_to(&store, postings, accounts).await {
        Ok(()) => stored::time_reads(&store, postings).await,
        Err(e) => Err(e),
    };
    store.close().await;
    outcome.map(|()| format!(" @{}", stored::label(postings)))
}

/// The run's settings, the database's banner line and the table's head.
fn print_header(args: &BenchArgs, seed: u64, server: &server::Server) {
    let pace = match args.rate {
        Some(rate) => format!("open loop at {rate}/s"),
        None => "closed loop".to_owned(),
    };
    println!(
        "hookledger bench: {KIND}, {} connections, {pace}, {} s per phase, pool {}, seed {seed}",
        args.connections, args.seconds, args.pool
    );
    println!("database: {}", server.database());
    println!("{HEADER}");
}
