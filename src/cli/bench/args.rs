//! The command line of `hookledger bench`.

use clap::Args;

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
    /// Every new credit is a payment's (its own payment id, the source's
    /// `payment_path` set), as a provider's credits are: the path that
    /// books each payment once.
    #[arg(long)]
    pub payments: bool,
    /// With `--payments`: this share (percent) of new events are refunds,
    /// each of a payment planned before it, for part or all of it, once
    /// (the source's `reverses_path` set, and late debits applied: a
    /// refund that overtakes a newer credit of its account is not held).
    /// The path that matches refunds to their payments.
    #[arg(long, default_value_t = 0, requires = "payments", value_parser = clap::value_parser!(u32).range(0..=90))]
    pub refunds: u32,
    /// The source is `contiguous`: each account's credits are numbered 1,
    /// 2, 3, ... and sent in that order (none late), as a sender that
    /// numbers its events does; the path that applies a stream in exact
    /// order.
    #[arg(long, conflicts_with = "payments")]
    pub numbered: bool,
    /// Open loop: deliveries are due at this many per second, on a fixed
    /// schedule shared by the connections, and each one's latency counts
    /// from when it was due (a delivery that waits for a free connection
    /// waits in its latency, as a provider's would). Default: closed loop,
    /// each connection sending its next delivery when the last is answered,
    /// where the latency follows the rate (64 in flight at R/s spend 64/R
    /// seconds each, Little's law).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub rate: Option<u64>,
    /// The hookledger binary whose `serve` is driven (default: this one),
    /// to compare two builds under one load generator; the ceilings are
    /// always this binary's own.
    #[arg(long)]
    pub server_binary: Option<std::path::PathBuf>,
    /// Start from a database that already holds this many postings, with
    /// their entries, balances, guards, delivered messages, ignored and
    /// held events (the shape is in `store/fill.rs`), filled set-based
    /// before the server starts, and time the admin's reads, the ledger
    /// check and retention at that size. A list (`0,1000000,10000000`)
    /// runs the HTTP phases at each size in turn, filling between them. A
    /// database filled before (a PostgreSQL one, or `--database` naming an
    /// SQLite file) is filled on from where it stands.
    #[arg(long, value_delimiter = ',', conflicts_with = "outbox")]
    pub stored: Vec<u64>,
    /// With `--stored`: the accounts the stored postings spread over
    /// (`acct_0` takes every hundredth; the rest go round the others).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(2..))]
    pub stored_accounts: u64,
}
