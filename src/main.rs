//! The `hookledger` binary: parse the command line, start logging, run, and
//! turn any failure into one line on stderr and a non-zero exit code.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use hookledger::cli::{Cli, run};
use hookledger::telemetry::init_logging;

/// jemalloc's background thread returns freed pages to the system within
/// seconds. glibc's malloc kept a connection flood's buffers (~60 MB,
/// freed but below the top of the heap, so never trimmed) for good; a
/// `malloc_trim(0)` proved them free, not leaked.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    // Before the runtime's threads start (see inherited_listener).
    let inherited = match hookledger::server::inherited_listener() {
        Ok(inherited) => inherited,
        Err(e) => {
            eprintln!("hookledger: {e}");
            return ExitCode::FAILURE;
        }
    };
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
    match runtime.block_on(run(cli, inherited)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hookledger: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
