-- The outbox (README "Telling your other systems"). Keep in step with
-- ../postgres/0006_outbox.sql, which explains each column.
alter table balances add column postings integer not null default 0 check (postings >= 0);
-- SQLite cannot add a NOT NULL column without a default or add a table
-- constraint afterwards: the column stays nullable here, every new entry
-- sets it (src/store/write/mod.rs), and the unique index below is the same
-- guard as PostgreSQL's constraint.
alter table ledger_entries add column account_seq integer;
update ledger_entries set account_seq = numbered.seq
from (select entry_id,
             row_number() over (partition by account_id, currency order by entry_id) as seq
      from ledger_entries) as numbered
where numbered.entry_id = ledger_entries.entry_id;
update balances set postings = counted.n
from (select account_id, currency, count(*) as n from ledger_entries
      group by account_id, currency) as counted
where counted.account_id = balances.account_id and counted.currency = balances.currency;
create unique index ledger_entries_account_seq_key
    on ledger_entries (account_id, currency, account_seq);

create table outbox (
    outbox_id            integer primary key,
    destination          text    not null,
    message_id           text    not null,
    message_type         text    not null
        check (message_type in ('ledger.posted', 'event.held', 'event.dismissed',
            'event.rejected')),
    intent_id            integer not null,
    source               text    not null,
    event_id             text    not null,
    event_status         text    not null,
    reason               text,
    account_id           text,
    currency             text,
    amount_minor         integer,
    balance_after_minor  integer,
    account_seq          integer,
    object_id            text,
    occurred_at          text,
    posted_at            text    not null,
    operator_applied     integer not null check (operator_applied in (0, 1)),
    state                text    not null check (state in ('pending', 'delivered', 'dead')),
    attempts             integer not null check (attempts >= 0),
    next_attempt_ms      integer not null,
    leased_by            text,
    last_error           text,
    created_at           text    not null,
    delivered_ms         integer,
    unique (destination, message_id),
    check ((message_type = 'ledger.posted') = (account_seq is not null))
) strict;
create index outbox_pending on outbox (destination, outbox_id) where state = 'pending';
create index outbox_open_by_account on outbox (destination, account_id, currency, account_seq)
    where state <> 'delivered';
create index outbox_delivered on outbox (delivered_ms) where state = 'delivered';
-- Dead letters, listed and counted per destination.
create index outbox_dead on outbox (destination, outbox_id) where state = 'dead';
