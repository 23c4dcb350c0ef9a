//! The `hookledger` binary: parse the command line, start logging, run, and
//! turn any failure into one line on stderr and a non-zero exit code.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use hookledger::cli::{Cli, run};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("hookledger: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hookledger: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `HOOKLEDGER_LOG` (or `RUST_LOG`) filters, default `info`; logs go to
/// stderr so stdout stays for the start-up banner and command output.
fn init_logging() {
    let filter = std::env::var("HOOKLEDGER_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".to_owned());
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info")))
        .with_writer(std::io::stderr)
        .init();
}
