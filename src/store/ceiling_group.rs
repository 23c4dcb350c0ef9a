//! The set-based variant of the PostgreSQL ceiling's pgbench script
//! (`ceiling`): one transaction stores a group of new in-order credits, on
//! distinct accounts, the way a run of postings is written
//! (`write::run`): the write keys, then one statement per table, however
//! many events the group holds. What the database itself can do with
//! groups, the ceiling of the group writer.
//!
//! Where a statement's values come from the previous one's rows (the
//! intents' ids, the balances read under lock), the Rust code carries them
//! in memory; pgbench cannot, so:
//! - the intents' insert is `INSERT_INTENTS` itself, wrapped to hand back
//!   its ids as one array (`\gset`);
//! - the guards and balances are locked by `LOCK_GUARDS` and
//!   `LOCK_BALANCES` themselves, and their rows discarded;
//! - the ledger entries take `balance_after` and `account_seq` from a join
//!   with the locked balance rows, and the messages are inserted from the
//!   entries' `returning` in the same statement (one statement fewer than
//!   the run, same rows);
//! - the balances and guards are upserted relative to their rows, where
//!   the run writes values computed in memory.
//!
//! Every balance row must exist beforehand (`PREPARE_BALANCES`), as it
//! does for every account once hookledger has run a while; the run's
//! statements that create missing rows are then skipped, as they are in
//! that steady state.

use super::ceiling::{PgbenchCredit, bind, text};
use super::write::{INSERT_INTENTS, LOCK_BALANCES, LOCK_GUARDS};

/// Creates the bench accounts' balance rows (`$1` the account prefix, `$2`
/// the number of accounts, `$3` the currency), at zero, where missing.
pub const PREPARE_BALANCES: &str = "
insert into balances (account_id, currency, balance_minor, updated_at, postings)
select $1 || 'a' || k, $3, 0, now(), 0 from generate_series(1, $2::int8) as k
on conflict (account_id, currency) do nothing";

/// Events per transaction: `group`, at most one per account.
pub fn group_size(group: usize, accounts: usize) -> usize {
    group.clamp(1, accounts.max(1))
}

/// The script of groups of [`group_size`] credits.
pub fn pgbench_group_credit(credit: &PgbenchCredit<'_>, group: usize) -> String {
    let group = Group::new(credit, group_size(group, credit.accounts));
    let (source, currency) = (&group.source, &group.currency);
    let lock_guards = bind(
        LOCK_GUARDS,
        &[
            (group.each(source), "text[]"),
            (group.accounts.clone(), "text[]"),
        ],
    );
    let lock_balances = bind(
        LOCK_BALANCES,
        &[
            (group.accounts.clone(), "text[]"),
            (group.each(currency), "text[]"),
        ],
    );
    let [balances, guards] = group.upserts();
    [
        "\\set n random(1, 100000000000000)".to_owned(),
        format!("\\set acct random(0, {})", credit.accounts.max(1) - 1),
        "\\set amount random(1, 10000)".to_owned(),
        "\\set seq random(1, 1000000000)".to_owned(),
        "begin isolation level read committed;".to_owned(),
        group.keys(),
        group.insert_intents(credit),
        format!("{lock_guards};"),
        format!("{lock_balances};"),
        group.post(credit),
        balances,
        guards,
        "commit;".to_owned(),
    ]
    .join("\n")
        + "\n"
}

/// The SQL expressions one group's statements share.
struct Group {
    size: usize,
    now: String,
    source: String,
    currency: String,
    /// The group's event ids, an array by position.
    events: String,
    /// Their accounts, one each, an array by position.
    accounts: String,
}

impl Group {
    fn new(credit: &PgbenchCredit<'_>, size: usize) -> Self {
        let prefix = text(credit.prefix);
        let mut group = Group {
            size,
            now: format!("to_timestamp({})", credit.now.timestamp()),
            source: text(credit.source),
            currency: text(credit.currency),
            events: String::new(),
            accounts: String::new(),
        };
        group.events = group.each(&format!(
            "{prefix} || 'e' || (CAST(:n AS bigint) * {size} + i)"
        ));
        group.accounts = group.each(&format!(
            "{prefix} || 'a' || ((CAST(:acct AS bigint) + i) % {} + 1)",
            credit.accounts.max(1)
        ));
        group
    }

    /// An array of `expression` (of the event's position `i`, or none: the
    /// same value for each) over the group.
    fn each(&self, expression: &str) -> String {
        format!(
            "array(select {expression} from generate_series(0, {}) as g(i) order by i)",
            self.size - 1
        )
    }

    /// The write keys (stand-in digests), in order, as one statement.
    fn keys(&self) -> String {
        let (accounts, events) = (&self.accounts, &self.events);
        format!(
            "select pg_advisory_xact_lock(k) from (select distinct hashtextextended(key, 0) as k \
             from unnest({accounts} || {events}) as key order by k) as keys;"
        )
    }

    /// `INSERT_INTENTS`, handing back the new ids by position as `:ids`.
    fn insert_intents(&self, credit: &PgbenchCredit<'_>) -> String {
        let optional = |value: Option<String>| value.unwrap_or_else(|| "null".to_owned());
        let payload = format!("decode('{}', 'hex')", hex::encode(credit.payload));
        let headers = optional(credit.signature_headers.map(text));
        let signed_at = optional(credit.signed_at.map(|t| t.to_string()));
        let intents = [
            (self.each(&self.source), "text[]"),
            (self.each(&text(credit.scope)), "text[]"),
            (self.events.clone(), "text[]"),
            (self.each(&text(credit.event_type)), "text[]"),
            (self.each("'applied'"), "text[]"),
            (self.each("null::text"), "text[]"),
            (self.accounts.clone(), "text[]"),
            (self.each(&self.currency), "text[]"),
            (self.each("CAST(:amount AS bigint)"), "int8[]"),
            (self.each("null::text"), "text[]"),
            (self.each("CAST(:seq AS bigint)"), "int8[]"),
            (self.each(&self.now), "timestamptz[]"),
            (self.each(&text(credit.payload_sha256)), "text[]"),
            (self.each(&payload), "bytea[]"),
            (self.each(&self.now), "timestamptz[]"),
            (self.each("null::text"), "text[]"),
            (self.each("null::text"), "text[]"),
            (self.each("null::bigint"), "int8[]"),
            (self.each("null::text"), "text[]"),
            (self.each("false"), "bool[]"),
            (self.each(&format!("{headers}::text")), "text[]"),
            (self.each(&format!("{signed_at}::bigint")), "int8[]"),
            (self.events.clone(), "text[]"),
            (self.each(&text("webhook")), "text[]"),
        ];
        format!(
            "with ins as ({}) select array_agg(ins.intent_id order by e.n) as ids from ins \
             join unnest({}) with ordinality as e(event_id, n) on e.event_id = ins.event_id \
             \\gset",
            bind(INSERT_INTENTS, &intents),
            self.events
        )
    }

    /// The ledger entries, computed against the locked balance rows, and
    /// with destinations their messages in the same statement.
    fn post(&self, credit: &PgbenchCredit<'_>) -> String {
        let (source, currency, now) = (&self.source, &self.currency, &self.now);
        let (events, accounts) = (&self.events, &self.accounts);
        let entries = format!(
            "insert into ledger_entries (intent_id, source, event_id, account_id, currency, \
             amount_minor, balance_after_minor, object_id, operator_applied, created_at, \
             credits_payment, account_seq) \
             select u.intent_id, {source}, u.event_id, u.account_id, {currency}, \
             CAST(:amount AS bigint), b.balance_minor + CAST(:amount AS bigint), null, false, \
             {now}, null, b.postings + 1 \
             from unnest(CAST(:ids AS int8[]), {events}, {accounts}) \
             as u(intent_id, event_id, account_id) \
             join balances b on b.account_id = u.account_id and b.currency = {currency} \
             returning intent_id, event_id, account_id, balance_after_minor, account_seq"
        );
        if credit.destinations.is_empty() {
            return format!("{entries};");
        }
        let names = |list: &[&str]| list.iter().map(|d| text(d)).collect::<Vec<_>>().join(", ");
        format!(
            "with l as ({entries}) insert into outbox (destination, message_id, message_type, \
             intent_id, source, event_id, event_status, account_id, currency, amount_minor, \
             balance_after_minor, account_seq, object_id, occurred_at, posted_at, \
             operator_applied, state, attempts, next_attempt_ms, created_at, ordered) \
             select d.destination, 'msg_' || md5(l.event_id), 'ledger.posted', l.intent_id, \
             {source}, l.event_id, 'applied', l.account_id, {currency}, CAST(:amount AS bigint), \
             l.balance_after_minor, l.account_seq, null, {now}, {now}, false, 'pending', 0, 0, \
             {now}, d.destination = any(array[{}]::text[]) \
             from l cross join unnest(array[{}]::text[]) as d(destination) \
             on conflict (intent_id, message_type, destination) do nothing;",
            names(credit.ordered),
            names(credit.destinations)
        )
    }

    /// The balances and guards, each one upsert relative to its rows.
    fn upserts(&self) -> [String; 2] {
        let (source, currency, now, accounts) =
            (&self.source, &self.currency, &self.now, &self.accounts);
        [
            format!(
                "insert into balances (account_id, currency, balance_minor, updated_at, postings) \
                 select a, {currency}, CAST(:amount AS bigint), {now}, 1 \
                 from unnest({accounts}) as a \
                 on conflict (account_id, currency) do update \
                 set balance_minor = balances.balance_minor + excluded.balance_minor, \
                 updated_at = excluded.updated_at, postings = balances.postings + 1;"
            ),
            format!(
                "insert into sequence_guards (source, account_id, last_sequence, updated_at) \
                 select {source}, a, CAST(:seq AS bigint), {now} from unnest({accounts}) as a \
                 on conflict (source, account_id) do update \
                 set last_sequence = greatest(sequence_guards.last_sequence, \
                 excluded.last_sequence), updated_at = excluded.updated_at;"
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credit(accounts: usize) -> PgbenchCredit<'static> {
        crate::store::ceiling::test_credit(accounts)
    }

    #[test]
    fn a_group_is_one_event_per_account_at_most() {
        assert_eq!(group_size(32, 20), 20);
        assert_eq!(group_size(32, 1_000), 32);
        assert_eq!(group_size(0, 1_000), 1);
        let script = pgbench_group_credit(&credit(20), 32);
        assert!(script.contains("generate_series(0, 19)"), "{script}");
    }

    #[test]
    fn every_statement_is_one_line_with_pgbench_variables_only() {
        let script = pgbench_group_credit(&credit(100), 8);
        // Four variables, begin, keys, intents, guards, balances, the
        // postings with their messages, balances, guards, commit.
        assert_eq!(script.lines().count(), 13, "{script}");
        assert!(!script.contains('$'), "every parameter bound: {script}");
        let variables = crate::store::ceiling::pgbench_variables(&script);
        assert!(!variables.is_empty());
        for name in variables {
            assert!(
                ["n", "acct", "amount", "seq", "ids"].contains(&name),
                "{name}"
            );
        }
        let without_outbox = pgbench_group_credit(
            &PgbenchCredit {
                destinations: &[],
                ..credit(100)
            },
            8,
        );
        assert!(!without_outbox.contains("insert into outbox"));
        assert!(script.contains("insert into outbox"));
    }
}
