-- Money going out, and once per payment (SQLite). Keep in step with
-- ../postgres/0003_reversals.sql, which explains the columns. SQLite cannot
-- change a CHECK constraint or a column's type in place, so `intents` is
-- rebuilt, and `ledger_entries` with it, exactly as in 0002 (ids copied, new
-- tables renamed last, one transaction); the payload becomes a blob of the
-- same bytes.

create table intents_new (
    intent_id          integer primary key,
    source             text    not null,
    scope              text    not null,
    event_id           text    not null,
    event_type         text    not null,
    status             text    not null
        check (status in ('applied', 'stale', 'ignored', 'rejected', 'dismissed', 'waiting',
            'unmatched', 'duplicate_effect')),
    reason             text,
    account_id         text,
    currency           text,
    amount_minor       integer,
    object_id          text,
    event_sequence     integer,
    occurred_at        text,
    deliveries         integer not null check (deliveries >= 1),
    conflicts          integer not null check (conflicts >= 0),
    payload_sha256     text    not null,
    payload            blob    not null,
    first_received_at  text    not null,
    last_received_at   text    not null,
    late               integer not null default 0 check (late in (0, 1)),
    payment_ref        text,
    reversal           text check (reversal in ('each', 'total')),
    reversal_total     integer check (reversal_total > 0),
    undoes             text,
    partial            integer not null default 0 check (partial in (0, 1)),
    unique (source, event_id),
    unique (scope, event_id),
    check (status not in ('applied', 'stale', 'waiting')
        or (account_id is not null and currency is not null
            and amount_minor is not null and event_sequence is not null)),
    check ((reversal is null or payment_ref is not null)
        and ((reversal = 'total') = (reversal_total is not null))),
    check (status <> 'unmatched'
        or (reversal is not null and currency is not null and amount_minor is not null
            and event_sequence is not null))
) strict;
insert into intents_new (intent_id, source, scope, event_id, event_type, status, reason,
    account_id, currency, amount_minor, object_id, event_sequence, occurred_at, deliveries,
    conflicts, payload_sha256, payload, first_received_at, last_received_at, late)
select intent_id, source, source, event_id, event_type, status, reason,
    account_id, currency, amount_minor, object_id, event_sequence, occurred_at, deliveries,
    conflicts, payload_sha256, cast(payload as blob), first_received_at, last_received_at, late
from intents;

-- Created before the renames, like ledger_entries_new: its reference to
-- intents_new is rewritten when intents_new takes the name intents.
create table payments (
    payment_id      integer primary key,
    scope           text    not null,
    payment_ref     text    not null,
    account_id      text,
    currency        text,
    credited_minor  integer not null check (credited_minor >= 0),
    reversed_minor  integer not null check (reversed_minor >= 0),
    credited_by     integer references intents_new (intent_id),
    updated_at      text    not null,
    unique (scope, payment_ref),
    check (reversed_minor <= credited_minor),
    check (credited_minor = 0 or (account_id is not null and currency is not null)),
    check (credited_by is null or credited_minor > 0)
) strict;

create table ledger_entries_new (
    entry_id             integer primary key,
    intent_id            integer not null references intents_new (intent_id),
    source               text    not null,
    event_id             text    not null,
    account_id           text    not null,
    currency             text    not null,
    amount_minor         integer not null check (amount_minor <> 0),
    balance_after_minor  integer not null,
    object_id            text,
    operator_applied     integer not null check (operator_applied in (0, 1)),
    created_at           text    not null,
    credits_payment      integer references payments (payment_id),
    unique (source, event_id),
    unique (intent_id),
    unique (credits_payment)
) strict;
insert into ledger_entries_new (entry_id, intent_id, source, event_id, account_id, currency,
    amount_minor, balance_after_minor, object_id, operator_applied, created_at)
select entry_id, intent_id, source, event_id, account_id, currency,
    amount_minor, balance_after_minor, object_id, operator_applied, created_at
from ledger_entries;

drop table ledger_entries;
drop table intents;
alter table intents_new rename to intents;
alter table ledger_entries_new rename to ledger_entries;

create index intents_by_status on intents (status, intent_id);
create index intents_by_source on intents (source, intent_id);
create index intents_by_account on intents (account_id, intent_id);
create index intents_by_sequence on intents (source, account_id, event_sequence);
create unique index intents_waiting on intents (source, account_id, event_sequence)
    where status = 'waiting';
create index intents_unmatched on intents (scope, payment_ref, intent_id)
    where status = 'unmatched';
create index ledger_entries_by_account on ledger_entries (account_id, entry_id);
