//! `hookledger outbox move --from OLD --to NEW`: a destination renamed in
//! the config leaves its undelivered messages under the old name, where no
//! relay sends them; this gives them to the new one.

use clap::Args;

use super::error::CliError;
use crate::config::Config;
use crate::startup::{StartupError, connect_store};

#[derive(Debug, Args)]
pub struct MoveArgs {
    /// The old name: a destination the config no longer has.
    #[arg(long)]
    from: String,
    /// The destination that replaced it, as configured.
    #[arg(long)]
    to: String,
}

pub async fn run(config: Config, args: MoveArgs) -> Result<(), CliError> {
    let to = config.destination(&args.to).map_err(CliError::Init)?;
    // A configured destination's messages are its relays' own: moving
    // them would take rows from under a relay that is sending them.
    if config.destination(&args.from).is_ok() {
        return Err(CliError::Init(format!(
            "--from {:?} is still configured: its relays send its messages",
            args.from
        )));
    }
    let store = connect_store(&config).await.map_err(StartupError::from)?;
    store.migrate().await.map_err(StartupError::from)?;
    let done = store
        .move_outbox(&args.from, &to.name, to.ordered_by_account)
        .await
        .map_err(CliError::Check)?;
    let holding = store
        .destinations_holding()
        .await
        .map_err(CliError::Check)?;
    let left = holding
        .iter()
        .find(|h| h.destination == args.from)
        .map_or(0, |h| h.pending + h.dead);
    println!(
        "moved {} message(s) from {} to {}",
        done.moved, args.from, to.name
    );
    if done.dropped > 0 {
        println!(
            "dropped {} message(s) under {}: {} has them already",
            done.dropped, args.from, to.name
        );
    }
    if left > 0 {
        println!(
            "{left} message(s) stay under {}: a relay still on the old config is sending them \
             (move again once every instance runs the new one)",
            args.from
        );
    }
    Ok(())
}
