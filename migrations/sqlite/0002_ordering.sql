-- Ordering policies (SQLite). Keep in step with ../postgres/0002_ordering.sql.
--
-- SQLite cannot change a CHECK constraint in place, so `intents` is rebuilt,
-- and `ledger_entries` with it: its foreign key must follow the new table.
-- The new tables are filled first and renamed last; SQLite (3.26+, no
-- legacy_alter_table) rewrites ledger_entries_new's reference to intents_new
-- when intents_new takes the name intents. Ids are copied, so every
-- ledger_entries.intent_id still points at its intent. The migration runs in
-- one transaction: it applies whole or not at all.

create table intents_new (
    intent_id          integer primary key,
    source             text    not null,
    event_id           text    not null,
    event_type         text    not null,
    status             text    not null
        check (status in ('applied', 'stale', 'ignored', 'rejected', 'dismissed', 'waiting')),
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
    payload            text    not null,
    first_received_at  text    not null,
    last_received_at   text    not null,
    -- The event arrived below its account's sequence guard (applied late, or
    -- held as stale).
    late               integer not null default 0 check (late in (0, 1)),
    unique (source, event_id),
    -- A posting (applied, held as stale, or waiting) always knows what it moves.
    check (status not in ('applied', 'stale', 'waiting')
        or (account_id is not null and currency is not null
            and amount_minor is not null and event_sequence is not null))
) strict;
insert into intents_new (intent_id, source, event_id, event_type, status, reason, account_id,
    currency, amount_minor, object_id, event_sequence, occurred_at, deliveries, conflicts,
    payload_sha256, payload, first_received_at, last_received_at, late)
select intent_id, source, event_id, event_type, status, reason, account_id,
    currency, amount_minor, object_id, event_sequence, occurred_at, deliveries, conflicts,
    payload_sha256, payload, first_received_at, last_received_at,
    -- Before this migration every stale event was late, and so was every
    -- event applied with on_stale = "apply" (its reason said so).
    case when status = 'stale' or reason = 'applied out of order' then 1 else 0 end
from intents;

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
    unique (source, event_id),
    unique (intent_id)
) strict;
insert into ledger_entries_new select * from ledger_entries;

drop table ledger_entries;
drop table intents;
alter table intents_new rename to intents;
alter table ledger_entries_new rename to ledger_entries;

create index intents_by_status on intents (status, intent_id);
create index intents_by_source on intents (source, intent_id);
create index intents_by_account on intents (account_id, intent_id);
create index intents_by_sequence on intents (source, account_id, event_sequence);
-- At most one waiting event per (source, account, sequence): the permanent
-- guard behind the check ingest makes under the guard row's lock.
create unique index intents_waiting on intents (source, account_id, event_sequence)
    where status = 'waiting';
create index ledger_entries_by_account on ledger_entries (account_id, entry_id);

-- Account-level operator actions (skip gap) have no single event.
create table audit_log_new (
    audit_id         integer primary key,
    action           text not null,
    source           text not null,
    event_id         text,
    previous_status  text not null,
    actor            text not null,
    note             text,
    created_at       text not null,
    account_id       text,
    detail           text,
    check (event_id is not null or account_id is not null)
) strict;
insert into audit_log_new (audit_id, action, source, event_id, previous_status, actor, note,
    created_at)
select audit_id, action, source, event_id, previous_status, actor, note, created_at
from audit_log;
drop table audit_log;
alter table audit_log_new rename to audit_log;
create index audit_log_by_event on audit_log (source, event_id, audit_id);

-- Sequence numbers an operator skipped in a contiguous stream, so a late
-- event for one of them is recognised as such.
create table sequence_skips (
    skip_id         integer primary key,
    source          text    not null,
    account_id      text    not null,
    first_skipped   integer not null,
    last_skipped    integer not null,
    audit_id        integer not null references audit_log (audit_id),
    created_at      text    not null,
    check (first_skipped <= last_skipped)
) strict;
create index sequence_skips_by_account on sequence_skips (source, account_id, first_skipped);
create index audit_log_by_account on audit_log (source, account_id, audit_id);
