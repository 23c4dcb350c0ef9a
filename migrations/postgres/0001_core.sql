-- hookledger core schema (PostgreSQL). Keep in step with ../sqlite/0001_core.sql:
-- same tables, same columns, same constraints; only the types differ.
-- Times are passed from Rust (never now() in SQL).

-- One row per (source, event_id): the intent. Kept forever, it is what makes
-- a redelivery recognisable, however late it arrives.
create table intents (
    intent_id          bigint generated always as identity primary key,
    source             text        not null,
    event_id           text        not null,
    event_type         text        not null,
    status             text        not null
        check (status in ('applied', 'stale', 'ignored', 'rejected', 'dismissed')),
    reason             text,
    account_id         text,
    currency           text,
    amount_minor       bigint,
    object_id          text,
    event_sequence     bigint,
    occurred_at        timestamptz,
    deliveries         bigint      not null check (deliveries >= 1),
    conflicts          bigint      not null check (conflicts >= 0),
    payload_sha256     text        not null,
    payload            text        not null,
    first_received_at  timestamptz not null,
    last_received_at   timestamptz not null,
    unique (source, event_id),
    -- A posting (applied or held as stale) always knows what it moves.
    check (status not in ('applied', 'stale')
        or (account_id is not null and currency is not null
            and amount_minor is not null and event_sequence is not null))
);
create index intents_by_status on intents (status, intent_id);
create index intents_by_source on intents (source, intent_id);
create index intents_by_account on intents (account_id, intent_id);

-- Highest sequence applied per (source, account): the out-of-order guard.
create table sequence_guards (
    source         text        not null,
    account_id     text        not null,
    last_sequence  bigint      not null,
    updated_at     timestamptz not null,
    primary key (source, account_id)
);

create table balances (
    account_id     text        not null,
    currency       text        not null,
    balance_minor  bigint not null
        -- Keeps every sum exact: see UPSERT_BALANCE in src/store/write.rs.
        check (balance_minor between -4611686018427387904 and 4611686018427387904),
    updated_at     timestamptz not null,
    primary key (account_id, currency)
);

-- Append-only. unique (source, event_id) is the second, permanent guard
-- against posting one event twice.
create table ledger_entries (
    entry_id             bigint generated always as identity primary key,
    intent_id            bigint      not null references intents (intent_id),
    source               text        not null,
    event_id             text        not null,
    account_id           text        not null,
    currency             text        not null,
    amount_minor         bigint      not null check (amount_minor <> 0),
    balance_after_minor  bigint      not null,
    object_id            text,
    operator_applied     boolean     not null,
    created_at           timestamptz not null,
    unique (source, event_id),
    unique (intent_id)
);
create index ledger_entries_by_account on ledger_entries (account_id, entry_id);

create table audit_log (
    audit_id         bigint generated always as identity primary key,
    action           text        not null,
    source           text        not null,
    event_id         text        not null,
    previous_status  text        not null,
    actor            text        not null,
    note             text,
    created_at       timestamptz not null
);
create index audit_log_by_event on audit_log (source, event_id, audit_id);
