//! Terminal views of what the admin pages show: `hookledger events` (the
//! filtered list, newest first) and `hookledger accounts ACCOUNT` (balances,
//! every event for the account, the ledger). Read-only.

use clap::Args;

use super::error::CliError;
use crate::config::Config;
use crate::domain::{Status, money};
use crate::startup::{StartupError, connect_store};
use crate::store::{EventFilter, EventRow, Store};

#[derive(Debug, Args)]
pub struct EventsArgs {
    #[arg(long)]
    pub source: Option<String>,
    /// applied, stale, ignored, rejected, dismissed, waiting, unmatched,
    /// duplicate_effect.
    #[arg(long)]
    pub status: Option<String>,
    #[arg(long)]
    pub account: Option<String>,
    #[arg(long = "type")]
    pub event_type: Option<String>,
    /// The provider's event id, exactly.
    #[arg(long)]
    pub id: Option<String>,
    /// At most this many, newest first (1-500).
    #[arg(long, default_value_t = 50)]
    pub limit: i64,
}

async fn open(config: &Config) -> Result<Store, CliError> {
    let store = connect_store(config).await.map_err(StartupError::from)?;
    store.migrate().await.map_err(StartupError::from)?;
    Ok(store)
}

pub async fn events(config: Config, args: EventsArgs) -> Result<(), CliError> {
    if !(1..=500).contains(&args.limit) {
        return Err(CliError::Init("--limit must be between 1 and 500".into()));
    }
    let status = args
        .status
        .as_deref()
        .map(str::parse::<Status>)
        .transpose()
        .map_err(|e| CliError::Init(e.to_string()))?;
    let store = open(&config).await?;
    let rows = store
        .list_events(&EventFilter {
            source: args.source,
            status,
            account_id: args.account,
            event_type: args.event_type,
            event_id: args.id,
            limit: args.limit,
            ..EventFilter::default()
        })
        .await
        .map_err(CliError::Check)?;
    print_events(&rows);
    Ok(())
}

pub async fn account(config: Config, account_id: String) -> Result<(), CliError> {
    let store = open(&config).await?;
    let balances = store
        .account_balances(&account_id)
        .await
        .map_err(CliError::Check)?;
    let events = store
        .list_events(&EventFilter {
            account_id: Some(account_id.clone()),
            limit: 100,
            ..EventFilter::default()
        })
        .await
        .map_err(CliError::Check)?;
    let entries = store
        .account_entries(&account_id, None, 100)
        .await
        .map_err(CliError::Check)?;
    println!("account {account_id}");
    if balances.is_empty() {
        println!("  no balance: nothing was ever posted to this account");
    }
    for balance in &balances {
        let flag = if balance.balance_minor < 0 {
            "  (below zero)"
        } else {
            ""
        };
        println!(
            "  {} {}{flag}",
            balance.currency,
            money(Some(balance.balance_minor), Some(&balance.currency))
        );
    }
    println!("\nevents (newest first; a credit not here was never received for this account)");
    print_events(&events);
    println!("\nledger (newest first)");
    let lines: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            vec![
                e.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                e.account_seq.to_string(),
                money(Some(e.amount_minor), Some(&e.currency)),
                money(Some(e.balance_after_minor), Some(&e.currency)),
                e.source.clone(),
                e.event_id.clone(),
                if e.operator_applied {
                    "operator-applied".into()
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    print_table(
        &[
            "posted (UTC)",
            "posting",
            "amount",
            "balance after",
            "source",
            "event",
            "",
        ],
        &lines,
    );
    Ok(())
}

fn print_events(rows: &[EventRow]) {
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|e| {
            vec![
                e.first_received_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                e.source.clone(),
                e.event_id.clone(),
                e.event_type.clone(),
                e.account_id.clone().unwrap_or_default(),
                money(e.amount_minor, e.currency.as_deref()),
                e.status.clone(),
                e.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    print_table(
        &[
            "received (UTC)",
            "source",
            "event",
            "type",
            "account",
            "amount",
            "status",
            "reason",
        ],
        &lines,
    );
}

/// Columns padded to their widest cell; the last is left as it is.
fn print_table(head: &[&str], lines: &[Vec<String>]) {
    if lines.is_empty() {
        println!("  (none)");
        return;
    }
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for line in lines {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let render = |cells: Vec<&str>| {
        let last = cells.len() - 1;
        let mut out = String::new();
        for (i, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<width$}  "));
            }
        }
        println!("{}", out.trim_end());
    };
    render(head.to_vec());
    for line in lines {
        render(line.iter().map(String::as_str).collect());
    }
}
