//! The command line: `serve` (the default), `relay`, `outbox replay`,
//! `outbox move`, `init`, `check-config`, `migrate`, `check`, `verify`,
//! `anchor`, `events`,
//! `replay`, `accounts`, `backup`, `send`, `bench`, `config-schema`.

mod banner;
mod bench;
mod check_config;
mod config_schema;
mod error;
mod init;
mod outbox;
mod outbox_move;
mod reconcile;
mod records;
mod replay;
mod send;
mod sign;
mod views;

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};

use crate::clock::SystemClock;
use crate::config::{self, Config};
use crate::outbox::destinations;
use crate::startup::{Application, StartupError, connect_store};
use banner::Banner;

pub use bench::{http_header, read_http_request};
pub use config_schema::schema_text;
pub use error::CliError;
pub use send::SendArgs;
pub use sign::{SignedRequest, sign_body, sign_body_with, signed_sample, signed_sample_with};

#[derive(Debug, Parser)]
#[command(
    name = "hookledger",
    version,
    about = "Payment-webhook receiver with exactly-once balance credits"
)]
pub struct Cli {
    /// Config file (TOML). Default: ./hookledger.toml if present, else a demo setup.
    #[arg(long, global = true, env = "HOOKLEDGER_CONFIG")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the webhook receiver and admin (the default), and the outbox
    /// relays.
    Serve {
        /// Leave the outbox relays to `hookledger relay` processes.
        #[arg(long)]
        no_relay: bool,
    },
    /// Run only the outbox relays: deliver the messages every instance
    /// writes to the configured destinations.
    Relay(outbox::RelayArgs),
    /// Outbox maintenance.
    Outbox {
        #[command(subcommand)]
        command: outbox::OutboxCommand,
    },
    /// Apply database migrations and exit; with --check, apply nothing and
    /// say whether the database's schema is behind this binary (migrations
    /// to apply), equal, or ahead (a newer release migrated it: compatible
    /// or not).
    Migrate {
        /// Say where the schema stands, apply nothing. Exit 0: this binary
        /// serves the database as it is (equal, or ahead and compatible);
        /// 2: behind (`migrate` or `serve` applies what is missing); 1:
        /// ahead and not compatible (`serve` refuses to start).
        #[arg(long)]
        check: bool,
        /// The database to migrate, as its owner (instead of the config's
        /// `database_url`, which `serve` connects with).
        #[arg(long, value_name = "OWNER_URL")]
        database: Option<String>,
        /// PostgreSQL: after migrating, grant this role what `serve` needs
        /// and nothing more (no DDL, no update or delete of a ledger entry
        /// or an audit row), taking back whatever else it had on the
        /// tables; the role must exist.
        #[arg(long, value_name = "ROLE", conflicts_with = "check")]
        serving_role: Option<String>,
    },
    /// Check the ledger invariants (as /admin/api/check does), print them as
    /// JSON; exit 1 if any is violated.
    Check,
    /// Walk every hash chain (each account's ledger, the audit trail) and
    /// print the first break of each as JSON: an edited, deleted,
    /// inserted or reordered row, named by its id; exit 1 if any chain is
    /// broken.
    Verify {
        /// Also check the database against anchors taken earlier (files
        /// from `anchors.dir` or `hookledger anchor`, or the parts of one
        /// as `audit.anchor` messages delivered them, given together): each
        /// one's signature with `anchors.key`, and that every head it names
        /// is still there with the same link, which catches a history
        /// rewritten with its links.
        #[arg(long, value_name = "FILE", num_args = 1..)]
        against: Vec<PathBuf>,
    },
    /// Print an anchor of the hash chains now, as JSON: every chain's head
    /// and their digest, signed with `anchors.key` when it is set. Keep it
    /// outside the database, for `verify --against`.
    Anchor,
    /// List stored events, newest first, filtered as on the admin's events
    /// page.
    Events(views::EventsArgs),
    /// Run stored rejected or ignored events again through the ingest path
    /// with the current config (after fixing, say, an account_path): one by
    /// --source and --event-id, or every one by --status. An applied event
    /// stays applied; each replay is audited.
    Replay(Box<replay::ReplayArgs>),
    /// Find, in the provider's own records, the events whose webhook never
    /// arrived, and apply them once (docs/operating/reconcile.md): one run of one
    /// source with [sources.reconcile].
    Reconcile(Box<reconcile::ReconcileArgs>),
    /// One account: its balances, every event for it, and its ledger.
    Accounts {
        /// The account id, as the provider sends it.
        account: String,
    },
    /// Write a consistent copy of the live SQLite database to PATH (a new
    /// file); the server may keep running.
    Backup {
        /// Where the copy goes; must not exist.
        path: PathBuf,
    },
    /// Validate the config as `serve` would and print what would run, without
    /// secrets; exit 1 listing every problem.
    CheckConfig,
    /// Print the config file's JSON Schema (draft-07), for taplo and the
    /// editors built on it: `hookledger config-schema >
    /// hookledger.schema.json`, then `#:schema ./hookledger.schema.json` at
    /// the top of the config.
    ConfigSchema,
    /// Print the HTTP contract as OpenAPI 3.1 (the admin API serves the
    /// same at /admin/api/openapi.json): `hookledger openapi >
    /// schema/openapi.json`.
    Openapi,
    /// Write a hookledger.toml for one provider kind (never over an existing
    /// file) and print the endpoint URL to give the provider.
    Init(init::InitArgs),
    /// Sign a sample event exactly as the provider would, send it, print the answer.
    Send(Box<SendArgs>),
    /// Load benchmark: start a server on a fresh config, drive it with
    /// pre-signed deliveries, measure the database's ceiling without HTTP,
    /// check every balance; exit 1 if anything is wrong.
    Bench(Box<bench::BenchArgs>),
}

/// Runs the command; `inherited` is the listening socket systemd passed
/// (socket activation), which only `serve` uses.
pub async fn run(cli: Cli, inherited: Option<std::net::TcpListener>) -> Result<(), CliError> {
    match cli.command.unwrap_or(Command::Serve { no_relay: false }) {
        Command::Serve { no_relay } => {
            let mut config = load(&cli.config)?;
            config.run_relays = !no_relay;
            serve(config, inherited).await
        }
        Command::Relay(args) => outbox::relay(load(&cli.config)?, args).await,
        Command::Outbox {
            command: outbox::OutboxCommand::Replay(args),
        } => outbox::replay(load(&cli.config)?, args).await,
        Command::Outbox {
            command: outbox::OutboxCommand::Move(args),
        } => outbox_move::run(load(&cli.config)?, args).await,
        Command::Migrate {
            check,
            database,
            serving_role,
        } => {
            let mut config = load(&cli.config)?;
            if let Some(owner) = database {
                config.database_url = owner;
            }
            let store = connect_store(&config).await.map_err(StartupError::from)?;
            if check {
                return check_schema(&store).await;
            }
            let before = store.migrate().await.map_err(StartupError::from)?;
            let after = store.schema_state().await.map_err(StartupError::from)?;
            println!(
                "migrations applied ({}): {} now; {}",
                store.backend(),
                before.pending.len(),
                after.describe()
            );
            let linked = store
                .link_unlinked(chrono::Utc::now())
                .await
                .map_err(CliError::Check)?;
            if linked.chains > 0 {
                println!("linked the unlinked entries of {} chain(s)", linked.chains);
            }
            if let Some(role) = serving_role {
                store
                    .grant_serving_role(&role)
                    .await
                    .map_err(CliError::Check)?;
                println!("granted {role} what serve needs, and nothing more");
            }
            Ok(())
        }
        Command::Check => records::check(load(&cli.config)?).await,
        Command::Verify { against } => records::verify(load(&cli.config)?, against).await,
        Command::Anchor => records::anchor(load(&cli.config)?).await,
        Command::Events(args) => views::events(load(&cli.config)?, args).await,
        Command::Replay(args) => replay::run(load(&cli.config)?, *args).await,
        Command::Reconcile(args) => reconcile::run(load(&cli.config)?, *args).await,
        Command::Accounts { account } => views::account(load(&cli.config)?, account).await,
        Command::Backup { path } => {
            let config = load(&cli.config)?;
            // Never a new, empty database backed up "successfully".
            if let Some(database) = crate::startup::sqlite_file(&config.database_url)
                && !database.exists()
            {
                return Err(CliError::Init(format!(
                    "no database at {} (database_url): nothing to back up",
                    database.display()
                )));
            }
            let store = connect_store(&config).await.map_err(StartupError::from)?;
            store.backup(&path).await.map_err(CliError::Check)?;
            println!("backed up {} to {}", store.describe(), path.display());
            Ok(())
        }
        Command::CheckConfig => {
            for line in check_config::report(&load(&cli.config)?) {
                println!("{line}");
            }
            Ok(())
        }
        Command::ConfigSchema => {
            // Written, not print!: piped into `head`, a closed stdout is no
            // error worth a panic.
            let _ = std::io::stdout().write_all(schema_text().as_bytes());
            Ok(())
        }
        Command::Openapi => {
            let _ = std::io::stdout().write_all(crate::admin::openapi::text().as_bytes());
            Ok(())
        }
        Command::Init(args) => init::run(&args, cli.config.as_deref()).map_err(CliError::Init),
        Command::Send(args) => send::run(*args, cli.config.as_deref())
            .await
            .map_err(CliError::Send),
        Command::Bench(args) => bench::run(*args).await.map_err(CliError::Send),
    }
}

/// `migrate --check`: where the schema stands, and the exit code that
/// says it.
async fn check_schema(store: &crate::store::Store) -> Result<(), CliError> {
    let state = store.schema_state().await.map_err(StartupError::from)?;
    println!("{}", state.describe());
    if state.refusal().is_some() {
        Err(CliError::SchemaAhead)
    } else if !state.pending.is_empty() {
        Err(CliError::SchemaBehind(state.pending.len()))
    } else {
        Ok(())
    }
}

fn load(path: &Option<PathBuf>) -> Result<Config, config::ConfigError> {
    config::load(path.as_deref(), &config::process_env, &destinations::check)
}

async fn serve(config: Config, inherited: Option<std::net::TcpListener>) -> Result<(), CliError> {
    let banner = Banner::from(&config);
    let app = Application::build_on(config, Arc::new(SystemClock), inherited).await?;
    // Written, not println!: a closed stdout (piped into `head`, a
    // supervisor that stopped reading) must not stop the server.
    let mut out = std::io::stdout().lock();
    for line in banner.lines(app.listening(), &app.store().describe()) {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
    drop(out);
    app.stop_on_signals();
    app.run_until_stopped().await.map_err(CliError::Serve)
}
