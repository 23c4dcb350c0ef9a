//! The PostgreSQL ceiling's pgbench script (`hookledger bench`): the
//! transaction a new in-order credit runs, made of the store's own
//! statements (`INSERT_INTENT`, `LOCK_GUARD`, `POST_PG`, `ADVANCE_GUARD`, in
//! the order `ingest` runs them for a high-water source), with each `$n`
//! replaced by a typed expression of pgbench variables. pgbench then runs it
//! from C, with no HTTP, no Rust driver and no decisions in between: what
//! the database itself can do with these statements on this schema.
//! `ceiling::tests` (PostgreSQL) runs the script's statements and checks the
//! rows they write against what `ingest` writes.

use chrono::{DateTime, Utc};

use super::write::{ADVANCE_GUARD, INSERT_INTENT, LOCK_GUARD, upsert_balance};
use crate::domain::SEQUENCE_FLOOR;

/// The three writes of a posting in one statement, as hookledger wrote
/// them before its ledger was linked (`store::chain`, whose links are
/// computed in Rust between the balance's statement and the entry's): the
/// balance's own statement (`upsert_balance!`, whose `$1`-`$4` are this
/// statement's too), then the entry, unlinked, and the messages. A
/// database the ceiling filled is a scratch one; served, its entries would
/// be linked by the backfill.
///
/// Why it is as safe as the three: the balance update takes the row lock
/// and adds in place, and out of range is a statement that succeeds and
/// returns no row; the entry is inserted from the balance's returned row
/// only, so then nothing at all is written and the transaction stays
/// usable (the callers that catch `BalanceLimit` go on with it and hold the
/// event, as after the three statements); the unique keys of the ledger
/// fail the whole statement as they failed the insert; the messages join
/// the entry's returned row to the intent this transaction wrote, one per
/// destination in `$12` (none for an empty list), `ordered` for those in
/// `$13`, doing nothing on a conflict. PostgreSQL runs every data-modifying
/// CTE to completion whether or not the outer query reads it.
const POST_PG: &str = concat!(
    "with balance as (",
    upsert_balance!(),
    "
), entry as (
    insert into ledger_entries (intent_id, source, event_id, account_id, currency, amount_minor,
        balance_after_minor, object_id, operator_applied, created_at, credits_payment,
        account_seq)
    select $5, $6, $7, $1, $2, $3, balance_minor, $8, $9, $4, $10, postings from balance
    returning intent_id, balance_after_minor, account_seq
), message as (
    insert into outbox (destination, message_id, message_type, intent_id, source, event_id,
        event_status, account_id, currency, amount_minor, balance_after_minor, account_seq,
        object_id, occurred_at, posted_at, operator_applied, state, attempts, next_attempt_ms,
        created_at, ordered)
    select d.destination, $11, 'ledger.posted', i.intent_id, i.source, i.event_id, 'applied',
        $1, $2, $3, e.balance_after_minor, e.account_seq, $8, i.occurred_at, $4, $9,
        'pending', 0, 0, $4, d.destination = any($13::text[])
    from entry e
    join intents i on i.intent_id = e.intent_id
    cross join unnest($12::text[]) as d(destination)
    on conflict (intent_id, message_type, destination) do nothing
)
select balance_minor from balance"
);

/// What the script's deliveries look like: the bench's own (sizes matter,
/// contents do not). Event ids are `<prefix>e<n>` and accounts
/// `<prefix>a<k>` for `k` in `1..=accounts`.
pub struct PgbenchCredit<'a> {
    pub source: &'a str,
    pub scope: &'a str,
    pub prefix: &'a str,
    pub accounts: usize,
    pub event_type: &'a str,
    pub currency: &'a str,
    pub payload: &'a [u8],
    pub payload_sha256: &'a str,
    pub signature_headers: Option<&'a str>,
    pub signed_at: Option<i64>,
    /// Destinations of `ledger.posted` messages (none: no outbox rows).
    pub destinations: &'a [&'a str],
    /// Those of them that are ordered (their rows' `ordered` flag).
    pub ordered: &'a [&'a str],
    pub now: DateTime<Utc>,
}

/// SQL text as a literal. pgbench reads `:name` in SQL as a variable, so
/// text that may hold a colon goes in as hex.
pub(super) fn text(value: &str) -> String {
    format!(
        "convert_from(decode('{}', 'hex'), 'UTF8')",
        hex::encode(value)
    )
}

/// The script: variables, then the transaction.
pub fn pgbench_new_credit(credit: &PgbenchCredit<'_>) -> String {
    let now = format!("to_timestamp({})", credit.now.timestamp());
    let event = format!("{} || 'e' || :n", text(credit.prefix));
    let account = format!("{} || 'a' || :acct", text(credit.prefix));
    let optional = |value: Option<String>| value.unwrap_or_else(|| "null".to_owned());
    let intent = [
        (text(credit.source), "text"),
        (text(credit.scope), "text"),
        (event.clone(), "text"),
        (text(credit.event_type), "text"),
        ("'applied'".to_owned(), "text"),
        ("null".to_owned(), "text"),
        (account.clone(), "text"),
        (text(credit.currency), "text"),
        (":amount".to_owned(), "bigint"),
        ("null".to_owned(), "text"),
        (":seq".to_owned(), "bigint"),
        (now.clone(), "timestamptz"),
        (text(credit.payload_sha256), "text"),
        (
            format!("decode('{}', 'hex')", hex::encode(credit.payload)),
            "bytea",
        ),
        (now.clone(), "timestamptz"),
        ("null".to_owned(), "text"),
        ("null".to_owned(), "text"),
        ("null".to_owned(), "bigint"),
        ("null".to_owned(), "text"),
        ("false".to_owned(), "boolean"),
        (optional(credit.signature_headers.map(text)), "text"),
        (optional(credit.signed_at.map(|t| t.to_string())), "bigint"),
        (event.clone(), "text"),
        (text("webhook"), "text"),
    ];
    let guard = |sequence: String| {
        [
            (text(credit.source), "text"),
            (account.clone(), "text"),
            (sequence, "bigint"),
            (now.clone(), "timestamptz"),
        ]
    };
    let destinations: Vec<String> = credit.destinations.iter().map(|d| text(d)).collect();
    let ordered: Vec<String> = credit.ordered.iter().map(|d| text(d)).collect();
    let posting = [
        (account.clone(), "text"),
        (text(credit.currency), "text"),
        (":amount".to_owned(), "bigint"),
        (now.clone(), "timestamptz"),
        (":intent_id".to_owned(), "bigint"),
        (text(credit.source), "text"),
        (event.clone(), "text"),
        ("null".to_owned(), "text"),
        ("false".to_owned(), "boolean"),
        ("null".to_owned(), "bigint"),
        (format!("'msg_' || md5({event})"), "text"),
        (format!("array[{}]", destinations.join(", ")), "text[]"),
        (format!("array[{}]::text[]", ordered.join(", ")), "text[]"),
    ];
    let floor = format!("({SEQUENCE_FLOOR})");
    [
        "\\set n random(1, 9000000000000000000)".to_owned(),
        format!("\\set acct random(1, {})", credit.accounts.max(1)),
        "\\set amount random(1, 10000)".to_owned(),
        "\\set seq random(1, 1000000000)".to_owned(),
        "begin isolation level read committed;".to_owned(),
        format!("{} \\gset", bind(INSERT_INTENT, &intent)),
        format!("{};", bind(LOCK_GUARD, &guard(floor))),
        format!("{};", bind(POST_PG, &posting)),
        format!("{};", bind(ADVANCE_GUARD, &guard(":seq".to_owned()))),
        "commit;".to_owned(),
    ]
    .join("\n")
        + "\n"
}

/// `sql` with every `$n` replaced by `CAST(<expression n> AS <type n>)`,
/// on one line (pgbench reads a meta-command such as `\gset` on the line
/// its query ends on).
pub(super) fn bind(sql: &str, params: &[(String, &str)]) -> String {
    let mut out = String::with_capacity(sql.len() * 2);
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let digits: String = rest[at + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let number: usize = digits.parse().expect("every $ in these statements is a $n");
        let (expression, sql_type) = &params[number - 1];
        out.push_str(&format!("CAST({expression} AS {sql_type})"));
        rest = &rest[at + 1 + digits.len()..];
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A bench credit over `accounts` whose texts hold colons.
#[cfg(test)]
pub(super) fn test_credit(accounts: usize) -> PgbenchCredit<'static> {
    PgbenchCredit {
        source: "bench",
        scope: "bench",
        prefix: "run:1-",
        accounts,
        event_type: "balance.credit",
        currency: "USD",
        payload: br#"{"a":1}"#,
        payload_sha256: "00",
        signature_headers: Some(r#"{"webhook-id":"m:1"}"#),
        signed_at: Some(1),
        destinations: &["sink:1"],
        ordered: &[],
        now: DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
    }
}

/// The names pgbench reads as variables in `script` (`:name`, not a
/// `::cast`).
#[cfg(test)]
pub(super) fn pgbench_variables(script: &str) -> Vec<&str> {
    script
        .match_indices(':')
        .filter(|(at, _)| !script[..*at].ends_with(':') && !script[at + 1..].starts_with(':'))
        .map(|(at, _)| {
            let name = &script[at + 1..];
            let end = name
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(name.len());
            &name[..end]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_become_typed_expressions_on_one_line() {
        let params: Vec<(String, &str)> = (0..12)
            .map(|i| match i % 2 {
                0 => ("'a'".to_owned(), "text"),
                _ => (":n".to_owned(), "bigint"),
            })
            .collect();
        assert_eq!(
            bind("select $2,\n  $1 || $12x", &params),
            "select CAST(:n AS bigint), CAST('a' AS text) || CAST(:n AS bigint)x"
        );
    }

    #[test]
    fn colons_only_name_variables() {
        let script = pgbench_new_credit(&test_credit(10));
        let variables = pgbench_variables(&script);
        assert!(!variables.is_empty());
        for name in variables {
            assert!(
                ["n", "acct", "amount", "seq", "intent_id"].contains(&name),
                "{name}"
            );
        }
        assert_eq!(script.lines().count(), 10, "{script}");
        assert!(!script.contains('$'), "{script}");
    }
}
