-- The outbox (README "Telling your other systems"). Keep in step with
-- ../sqlite/0006_outbox.sql.
--
-- account_seq: a posting's position in its account's ledger, per currency,
-- gapless. The balance row counts its postings (incremented by the same
-- statement that moves the balance, under its row lock), and the ledger
-- entry keeps the count it got.
alter table balances add column postings bigint not null default 0 check (postings >= 0);
alter table ledger_entries add column account_seq bigint;
update ledger_entries e set account_seq = numbered.seq
from (select entry_id,
             row_number() over (partition by account_id, currency order by entry_id) as seq
      from ledger_entries) numbered
where numbered.entry_id = e.entry_id;
update balances b set postings = counted.n
from (select account_id, currency, count(*) as n from ledger_entries
      group by account_id, currency) counted
where counted.account_id = b.account_id and counted.currency = b.currency;
alter table ledger_entries alter column account_seq set not null;
alter table ledger_entries add constraint ledger_entries_account_seq_key
    unique (account_id, currency, account_seq);

-- One row per message and destination, written in the transaction that
-- posts (or holds, dismisses, rejects) the event it tells of. The message's
-- fields are stored, and the JSON is rendered from them on every attempt.
-- Scheduling times are integer milliseconds since the epoch: compared, never
-- as text. next_attempt_ms is also the lease: a claim moves it past the
-- send's deadline, so no other relay takes the row while it is in flight,
-- and a crashed relay's row is taken again once it passes.
create table outbox (
    outbox_id            bigint generated always as identity primary key,
    destination          text        not null,
    message_id           text        not null,
    message_type         text        not null
        check (message_type in ('ledger.posted', 'event.held', 'event.dismissed',
            'event.rejected')),
    -- The event told of (no foreign key: intents are never deleted, and the
    -- check would cost every posting a lookup and a lock).
    intent_id            bigint      not null,
    source               text        not null,
    event_id             text        not null,
    event_status         text        not null,
    reason               text,
    account_id           text,
    currency             text,
    amount_minor         bigint,
    balance_after_minor  bigint,
    account_seq          bigint,
    object_id            text,
    occurred_at          timestamptz,
    posted_at            timestamptz not null,
    operator_applied     boolean     not null,
    state                text        not null check (state in ('pending', 'delivered', 'dead')),
    attempts             bigint      not null check (attempts >= 0),
    next_attempt_ms      bigint      not null,
    leased_by            text,
    last_error           text,
    created_at           timestamptz not null,
    delivered_ms         bigint,
    unique (destination, message_id),
    check ((message_type = 'ledger.posted') = (account_seq is not null))
);
-- What a relay claims: pending rows of its destination, in id order.
create index outbox_pending on outbox (destination, outbox_id) where state = 'pending';
-- The ordered destinations' check for an earlier undelivered posting.
create index outbox_open_by_account on outbox (destination, account_id, currency, account_seq)
    where state <> 'delivered';
create index outbox_delivered on outbox (delivered_ms) where state = 'delivered';
-- Dead letters, listed and counted per destination.
create index outbox_dead on outbox (destination, outbox_id) where state = 'dead';
