-- hookledger core schema (SQLite). Keep in step with ../postgres/0001_core.sql:
-- same tables, same columns, same constraints; only the types differ.
-- Times are passed from Rust (never now() in SQL) and stored as text.
-- STRICT tables: a value of the wrong type (a REAL amount) is an error, not
-- silently stored.

-- One row per (source, event_id): the intent. Kept forever, it is what makes
-- a redelivery recognisable, however late it arrives.
create table intents (
    intent_id          integer primary key,
    source             text    not null,
    event_id           text    not null,
    event_type         text    not null,
    status             text    not null
        check (status in ('applied', 'stale', 'ignored', 'rejected', 'dismissed')),
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
    unique (source, event_id),
    -- A posting (applied or held as stale) always knows what it moves.
    check (status not in ('applied', 'stale')
        or (account_id is not null and currency is not null
            and amount_minor is not null and event_sequence is not null))
) strict;
create index intents_by_status on intents (status, intent_id);
create index intents_by_source on intents (source, intent_id);
create index intents_by_account on intents (account_id, intent_id);

-- Highest sequence applied per (source, account): the out-of-order guard.
create table sequence_guards (
    source         text    not null,
    account_id     text    not null,
    last_sequence  integer not null,
    updated_at     text    not null,
    primary key (source, account_id)
) strict;

create table balances (
    account_id     text    not null,
    currency       text    not null,
    balance_minor  integer not null
        -- Keeps every sum exact: see UPSERT_BALANCE in src/store/write.rs.
        check (balance_minor between -4611686018427387904 and 4611686018427387904),
    updated_at     text not null,
    primary key (account_id, currency)
) strict;

-- Append-only. unique (source, event_id) is the second, permanent guard
-- against posting one event twice.
create table ledger_entries (
    entry_id             integer primary key,
    intent_id            integer not null references intents (intent_id),
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
create index ledger_entries_by_account on ledger_entries (account_id, entry_id);

create table audit_log (
    audit_id         integer primary key,
    action           text not null,
    source           text not null,
    event_id         text not null,
    previous_status  text not null,
    actor            text not null,
    note             text,
    created_at       text not null
) strict;
create index audit_log_by_event on audit_log (source, event_id, audit_id);
