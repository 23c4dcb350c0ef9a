//! The command line: `serve` (the default), `migrate`, `check`, `send`.

mod send;

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};

use crate::clock::SystemClock;
use crate::config::{self, Config, DEMO_ORDERED_SOURCE};
use crate::startup::{Application, StartupError, connect_store};

pub use send::{
    SendArgs, SignedRequest, sign_body, sign_body_with, signed_sample, signed_sample_with,
};

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
    /// Run the webhook receiver and admin (the default).
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Check the ledger invariants (as /admin/api/check does), print them as
    /// JSON; exit 1 if any is violated.
    Check,
    /// Sign a sample event exactly as the provider would, send it, print the answer.
    Send(Box<SendArgs>),
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Startup(#[from] StartupError),
    #[error("server stopped with an error: {0}")]
    Serve(std::io::Error),
    #[error("{0}")]
    Send(String),
    #[error("{0} invariant violation(s); see the JSON on stdout")]
    Violations(usize),
    #[error("cannot check the ledger: {0}")]
    Check(crate::store::StoreError),
}

impl From<config::ConfigError> for CliError {
    fn from(error: config::ConfigError) -> Self {
        CliError::Startup(error.into())
    }
}

pub async fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(load(&cli.config)?).await,
        Command::Migrate => {
            let config = load(&cli.config)?;
            let store = connect_store(&config).await.map_err(StartupError::from)?;
            store.migrate().await.map_err(StartupError::from)?;
            println!("migrations applied ({})", store.backend());
            Ok(())
        }
        Command::Check => check(load(&cli.config)?).await,
        Command::Send(args) => send::run(*args).await.map_err(CliError::Send),
    }
}

/// Migrates first (as `serve` does, so a new database checks clean), then
/// runs the check once.
async fn check(config: Config) -> Result<(), CliError> {
    let store = connect_store(&config).await.map_err(StartupError::from)?;
    store.migrate().await.map_err(StartupError::from)?;
    let violations = store.check_invariants().await.map_err(CliError::Check)?;
    let report = serde_json::json!({"ok": violations.is_empty(), "violations": violations});
    println!("{report:#}");
    if violations.is_empty() {
        Ok(())
    } else {
        Err(CliError::Violations(violations.len()))
    }
}

fn load(path: &Option<PathBuf>) -> Result<Config, config::ConfigError> {
    config::load(path.as_deref(), &config::process_env)
}

async fn serve(config: Config) -> Result<(), CliError> {
    let banner = Banner::from(&config);
    let app = Application::build(config, Arc::new(SystemClock)).await?;
    banner.print(app.port(), app.store().backend());
    app.run_until_stopped().await.map_err(CliError::Serve)
}

/// What the person who started hookledger needs to see: where it listens, the
/// admin URL and, for self-managed secrets only, the values to use.
struct Banner {
    host: String,
    database: String,
    lines: Vec<String>,
    demo_secret: Option<String>,
}

impl From<&Config> for Banner {
    fn from(config: &Config) -> Self {
        let host = config
            .listen
            .rsplit_once(':')
            .map_or("127.0.0.1", |(h, _)| h);
        let host = if host == "0.0.0.0" || host == "[::]" {
            "127.0.0.1"
        } else {
            host
        };
        let database = match config.database_url.split_once("://") {
            Some(("sqlite", path)) => format!("SQLite at {path}"),
            _ => "PostgreSQL".to_owned(),
        };
        let mut lines = Vec::new();
        let mut demo_secret = None;
        for managed in &config.self_managed {
            lines.push(format!(
                "  {:<20} {}  (kept in {})",
                managed.what,
                managed.secret.expose(),
                managed.file.display()
            ));
            if managed.what == "demo source secret" {
                demo_secret = Some(managed.secret.expose().to_owned());
            }
        }
        Self {
            host: host.to_owned(),
            database,
            lines,
            demo_secret,
        }
    }
}

impl Banner {
    fn print(&self, port: u16, backend: &str) {
        let base = format!("http://{}:{port}", self.host);
        println!(
            "hookledger listening on {base} ({}, {backend})",
            self.database
        );
        println!("  admin page           {base}/admin");
        for line in &self.lines {
            println!("{line}");
        }
        if let Some(secret) = &self.demo_secret {
            println!("  demo source          POST {base}/webhooks/demo (standard-webhooks)");
            println!(
                "  ordered demo source  POST {base}/webhooks/{DEMO_ORDERED_SOURCE} (standard-webhooks, contiguous ordering)"
            );
            println!(
                "  try it               cargo run --release -- send --url {base}/webhooks/demo --secret {secret} --account acct_1 --amount 1500 --currency USD"
            );
            println!(
                "  note                 no config file, so the demo source is on; write hookledger.toml (see hookledger.example.toml) for real sources"
            );
        }
    }
}
