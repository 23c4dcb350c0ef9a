-- Keep in step with ../postgres/0009_outbox_key.sql, which explains it.
-- SQLite cannot drop a table's unique constraint: the table is rebuilt
-- (every row copied, its ids kept), and its indexes made again.
create table outbox_keyed (
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
    behind               integer not null default 0,
    check ((message_type = 'ledger.posted') = (account_seq is not null))
) strict;
insert into outbox_keyed (outbox_id, destination, message_id, message_type, intent_id, source,
    event_id, event_status, reason, account_id, currency, amount_minor, balance_after_minor,
    account_seq, object_id, occurred_at, posted_at, operator_applied, state, attempts,
    next_attempt_ms, leased_by, last_error, created_at, delivered_ms, behind)
select outbox_id, destination, message_id, message_type, intent_id, source,
    event_id, event_status, reason, account_id, currency, amount_minor, balance_after_minor,
    account_seq, object_id, occurred_at, posted_at, operator_applied, state, attempts,
    next_attempt_ms, leased_by, last_error, created_at, delivered_ms, behind
from outbox;
drop table outbox;
alter table outbox_keyed rename to outbox;
create unique index outbox_key on outbox (intent_id, message_type, destination);
create index outbox_pending on outbox (destination, outbox_id) where state = 'pending';
create index outbox_open_by_account on outbox (destination, account_id, currency, account_seq)
    where state <> 'delivered';
create index outbox_delivered on outbox (delivered_ms) where state = 'delivered';
create index outbox_dead on outbox (destination, outbox_id) where state = 'dead';
create index outbox_due on outbox (destination, outbox_id)
    where state = 'pending' and not behind;
