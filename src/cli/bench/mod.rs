//! `hookledger bench`: the load benchmark and the database's ceiling in one
//! run. It starts this binary as a server on a fresh config (SQLite in a
//! temporary folder, or the PostgreSQL database given), drives it with
//! pre-signed deliveries over keep-alive connections (new events, then
//! redeliveries, then a mix), stops it, stores more of the same deliveries
//! straight through `ingest` (the ceiling: the same statements with no
//! HTTP), and checks that every balance equals the sum of the credits
//! answered 200 and that the ledger invariants hold. Timing is printed,
//! never judged; the exit status says whether the result was correct.

mod ceiling;
mod drain;
mod drive;
mod measure;
mod pgbench;
mod plan;
mod server;
mod sink;

pub use sink::{header as http_header, read_http_request};

use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::config::{self, random_bytes};
use crate::ingest::Ingestor;
use crate::secret::Secret;
use crate::startup::connect_store;
use measure::{HEADER, PhaseResult};
use plan::{DUPLICATES, Ledger, MIXED, NEW, Planned, Rng};

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Database to run against; default: a new SQLite file in a temporary
    /// folder. A PostgreSQL URL is used as is (the run's accounts are its
    /// own; add `?sslmode=disable` to leave TLS out on a local server).
    #[arg(long)]
    pub database: Option<String>,
    /// Concurrent keep-alive connections (and ceiling tasks).
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Seconds per phase.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Deliveries pre-signed per phase (a phase ends early when they run out).
    #[arg(long, default_value_t = 60_000)]
    pub events: usize,
    /// Accounts the credits are spread over.
    #[arg(long, default_value_t = 1_000)]
    pub accounts: usize,
    /// The server's connection pool size (the ceiling uses the same).
    #[arg(long, default_value_t = 10)]
    pub pool: u32,
    /// Seed of the plan (default: random; printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Keep the temporary folder (config, server log, SQLite file).
    #[arg(long)]
    pub keep: bool,
    /// Run the http new phase only (a long run: the server's memory over
    /// many events), then the correctness check.
    #[arg(long)]
    pub only_new: bool,
    /// Also tell a local HTTP sink of every posting through the outbox (an
    /// `http` destination): the outbox's cost to ingest, and how fast the
    /// relay drains what the phases wrote.
    #[arg(long)]
    pub outbox: bool,
    /// With `--outbox`: the server writes the messages but does not send
    /// them (`serve --no-relay`); a `hookledger relay` process started
    /// after the HTTP phases drains them alone. What the messages cost
    /// ingest by themselves, as where the relay runs on other machines,
    /// and the relay's own rate.
    #[arg(long, requires = "outbox")]
    pub relay_later: bool,
    /// With `--outbox`: the server writes the messages but does not send
    /// them; a `hookledger relay` process started before the phases sends
    /// them while they run, as a deployment with its relay apart does (here
    /// on the same machine). Its CPU is not in the server's column.
    #[arg(long, requires = "outbox", conflicts_with = "relay_later")]
    pub relay_apart: bool,
    /// The hookledger binary whose `serve` is driven (default: this one),
    /// to compare two builds under one load generator; the ceilings are
    /// always this binary's own.
    #[arg(long)]
    pub server_binary: Option<std::path::PathBuf>,
}

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
    let duration = Duration::from_secs(args.seconds);
    let mut ledger = Ledger::new(run_id.to_owned(), KIND.to_owned(), secret, args.accounts);
    let mut rng = Rng::new(seed);
    let server_binary = args.server_binary.as_deref();
    let no_relay = args.relay_later || args.relay_apart;
    let mut server =
        server::Server::start(config_path, &config.listen, server_binary, no_relay).await?;
    let relay_apart = match args.relay_apart {
        true => Some(server::Server::start_relay(config_path, server_binary)?),
        false => None,
    };
    let postgres = !config.database_url.starts_with("sqlite:");
    println!(
        "hookledger bench: {KIND}, {} connections, {} s per phase, pool {}, seed {seed}",
        args.connections, args.seconds, args.pool
    );
    println!("database: {}", server.database());
    println!("{HEADER}");
    let target = drive::Target {
        address: &config.listen,
        path: "/webhooks/bench",
    };
    let mut rows = Vec::new();
    let started = std::time::Instant::now();
    let phases = [("new", NEW), ("duplicate", DUPLICATES), ("mixed", MIXED)];
    let phases = if args.only_new {
        &phases[..1]
    } else {
        &phases[..]
    };
    for &(name, profile) in phases {
        let planned = Arc::new(ledger.plan(&mut rng, profile, args.events, 0)?);
        let cpu = Cpu::read(server.pid(), postgres);
        let client = measure::process_cpu(std::process::id());
        let (mut result, accepted) =
            drive::drive(&target, planned.clone(), args.connections, duration).await?;
        cpu.into(&mut result, server.pid(), postgres);
        result.client_cpu = client
            .zip(measure::process_cpu(std::process::id()))
            .map(|(before, after)| after.saturating_sub(before));
        result.server_rss_kb = measure::process_rss_kb(server.pid());
        accept(&mut ledger, &planned, &accepted);
        result.name = format!("http {name}");
        println!("{}", result.row());
        rows.push(result);
    }
    if args.outbox {
        let name = format!("sink-{run_id}");
        let (relay, since) = match args.relay_later {
            true => (
                Some(server::Server::start_relay(config_path, server_binary)?),
                (std::time::Instant::now(), "the relay started"),
            ),
            false => (None, (started, "the first phase")),
        };
        let alone = relay
            .as_ref()
            .map(|relay| drain::RelayAlone::new(relay.pid(), postgres));
        let postings = ledger.accepted.len();
        drain::report(&config, (&name, sink), since, postings, alone.as_ref()).await?;
    }
    drop(relay_apart);
    server.stop().await;

    let store = connect_store(&config).await.map_err(|e| e.to_string())?;
    let source = Arc::new(config.sources.into_iter().next().ok_or("no source")?);
    let ceilings = [("new", NEW), ("duplicate", DUPLICATES)];
    let ceilings = if args.only_new {
        &[][..]
    } else {
        &ceilings[..]
    };
    // One ingestor for both, as the server has one: its redeliveries are of
    // the ceiling's own new events, which it has seen stored.
    let ingestor = Ingestor::new(&store);
    let since = ledger.accepted.len();
    for &(name, profile) in ceilings {
        let planned = ledger.plan(&mut rng, profile, args.events, since)?;
        let cpu = Cpu::read(std::process::id(), postgres);
        let (mut result, accepted) = ceiling::run(
            &ingestor,
            source.clone(),
            &planned,
            args.connections,
            duration,
        )
        .await?;
        if let Some(database) = cpu.database_since() {
            result.database_cpu = Some(database);
        }
        result.machine = cpu.machine_since();
        accept(&mut ledger, &planned, &accepted);
        result.name = format!("ceiling {name}");
        println!("{}", result.row());
        rows.push(result);
    }
    let pgbench_row = match postgres {
        true => {
            let sample = ledger.plan(&mut rng, NEW, 1, since)?;
            let destinations: Vec<&str> = config
                .destinations
                .iter()
                .map(|d| d.name.as_str())
                .collect();
            let ordered: Vec<&str> = config
                .destinations
                .iter()
                .filter(|d| d.ordered_by_account)
                .map(|d| d.name.as_str())
                .collect();
            let run = pgbench::Run {
                database_url: &config.database_url,
                folder: config_path.parent().ok_or("the config has a folder")?,
                run_id,
                clients: args.pool,
                accounts: args.accounts,
                duration,
                destinations: &destinations,
                ordered: &ordered,
            };
            pgbench::run(&run, &source, &sample[0]).await?
        }
        false => None,
    };
    let ratio = |http: &PhaseResult, ceiling: &PhaseResult, count: fn(&PhaseResult) -> u64| {
        http.per_second(count(http)) / ceiling.per_second(count(ceiling)).max(1e-9)
    };
    if let [new, duplicate, _, ceiling_new, ceiling_duplicate] = &rows[..] {
        println!(
            "http / ceiling: new events {:.2}, duplicates {:.2}",
            ratio(new, ceiling_new, |r| r.new_events),
            ratio(duplicate, ceiling_duplicate, |r| r.duplicates)
        );
    }
    match (pgbench_row, rows.first()) {
        (Some(mut row), Some(new)) => {
            println!("{}", row.row());
            println!(
                "http / pgbench ceiling: new events {:.2}",
                ratio(new, &row, |r| r.new_events)
            );
        }
        _ if postgres => println!("pgbench ceiling: skipped, pgbench is not installed"),
        _ => {}
    }
    let verdict = verify(&store, &ledger, &rows).await;
    store.close().await;
    verdict
}

/// Adds the new events answered 200 to the expected sums.
fn accept(ledger: &mut Ledger, planned: &[Planned], accepted: &[usize]) {
    for &index in accepted {
        ledger.accept(&planned[index]);
    }
}

/// CPU counters at the start of a phase.
struct Cpu {
    process: Option<Duration>,
    database: Option<Duration>,
    machine: Option<measure::MachineTicks>,
}

impl Cpu {
    fn read(pid: u32, postgres: bool) -> Self {
        Self {
            process: measure::process_cpu(pid),
            database: postgres.then(measure::postgres_cpu),
            machine: measure::MachineTicks::read(),
        }
    }

    fn into(self, result: &mut PhaseResult, pid: u32, postgres: bool) {
        if let (Some(before), Some(after)) = (self.process, measure::process_cpu(pid)) {
            result.server_cpu = after.saturating_sub(before);
        }
        if postgres {
            result.database_cpu = self.database_since();
        }
        result.machine = self.machine_since();
    }

    fn machine_since(&self) -> Option<measure::MachineShare> {
        let now = measure::MachineTicks::read()?;
        Some(now.since(self.machine?))
    }

    fn database_since(&self) -> Option<Duration> {
        self.database
            .map(|before| measure::postgres_cpu().saturating_sub(before))
    }
}

/// Every balance of the run equals the sum of its accepted credits, every
/// answer said what was expected, and the ledger invariants hold.
async fn verify(
    store: &crate::store::Store,
    ledger: &Ledger,
    rows: &[PhaseResult],
) -> Result<(), String> {
    let mut wrong = Vec::new();
    for account in 0..ledger.accounts() {
        let id = ledger.account_id(account);
        let balances = store
            .account_balances(&id)
            .await
            .map_err(|e| e.to_string())?;
        let actual: i64 = balances.iter().map(|b| b.balance_minor).sum();
        let expected = ledger.expected.get(&account).copied().unwrap_or(0);
        if actual != expected {
            wrong.push(format!("{id}: {actual} stored, {expected} sent"));
        }
    }
    let misjudged: u64 = rows.iter().map(|r| r.misjudged).sum();
    let violations = store.check_invariants().await.map_err(|e| e.to_string())?;
    let events = ledger.accepted.len();
    if wrong.is_empty() && misjudged == 0 && violations.is_empty() {
        println!(
            "correct: {} balances equal the sums of {events} credits answered 200; \
             every duplicate was called one; invariants hold",
            ledger.accounts()
        );
        return Ok(());
    }
    for line in wrong.iter().take(10) {
        println!("wrong balance: {line}");
    }
    for violation in &violations {
        println!("invariant violated: {violation:?}");
    }
    Err(format!(
        "incorrect: {} wrong balance(s), {misjudged} answer(s) misjudging a duplicate, {} \
         invariant violation(s)",
        wrong.len(),
        violations.len()
    ))
}
