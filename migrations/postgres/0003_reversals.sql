-- Money going out, and once per payment (PostgreSQL). Keep in step with
-- ../sqlite/0003_reversals.sql.
--
-- A refund or dispute names the provider payment it reverses; hookledger
-- matches it to the credit that payment produced, per scope, through
-- `payments`: one row per payment, with what it credited and what has been
-- reversed since. A reversal can never take more than was credited (the
-- check below is the permanent guard behind the conditional updates in
-- src/store/write/payments.rs).
--
-- The scope of the intent key. An event id is unique within its scope, not
-- only within the source that received it: a provider whose ids are global
-- (Stripe `evt_`) sends one event to every endpoint subscribed, and all the
-- sources of that kind share one scope, so only one of them can apply it.
-- Existing rows keep the scope they had in effect (their source); startup
-- moves them to the configured scope (src/store/scope.rs).
alter table intents add column scope text;
update intents set scope = source;
alter table intents alter column scope set not null;
alter table intents add constraint intents_scope_event_id_key unique (scope, event_id);
-- Verified means stored: the body is kept as the exact bytes received,
-- whatever they are (text cannot hold a NUL, or bytes that are not UTF-8).
alter table intents alter column payload type bytea using convert_to(payload, 'UTF8');

-- `unmatched`: a reversal whose payment has not been credited yet; it is
-- applied in the transaction that credits the payment. `duplicate_effect`: a
-- credit of a payment that another event of the scope credited already
-- (`payments.credited_by` names it); never applied.
alter table intents drop constraint intents_status_check;
alter table intents add constraint intents_status_check
    check (status in ('applied', 'stale', 'ignored', 'rejected', 'dismissed', 'waiting',
        'unmatched', 'duplicate_effect'));
-- The provider payment this event credits (reversal null) or reverses.
alter table intents add column payment_ref text;
-- How a reversal states its amount: 'each' (this refund's own amount) or
-- 'total' (everything refunded on the payment so far, as the provider
-- reports it; the posting is the difference).
alter table intents add column reversal text check (reversal in ('each', 'total'));
alter table intents add column reversal_total bigint check (reversal_total > 0);
-- A reinstatement (a dispute won back) undoes this earlier reversal
-- (an event id of the same scope) and nothing else.
alter table intents add column undoes text;
-- A credit of one part of a payment captured in parts (Checkout.com): each
-- part credits once, by its own intent key, and the payment is never
-- credited whole.
alter table intents add column partial boolean not null default false;
alter table intents add constraint intents_reversal_fields_check
    check ((reversal is null or payment_ref is not null)
        and ((reversal = 'total') = (reversal_total is not null)));
alter table intents add constraint intents_unmatched_check
    check (status <> 'unmatched'
        or (reversal is not null and currency is not null and amount_minor is not null
            and event_sequence is not null));
create index intents_unmatched on intents (scope, payment_ref, intent_id)
    where status = 'unmatched';

-- account_id and currency are null while only an unmatched reversal knows
-- the payment (its row is the lock the crediting transaction waits on).
-- credited_by: the event that credited the payment whole. One row per
-- payment and one column: a payment is credited whole at most once, and
-- never both whole and in parts (CREDIT_PAYMENT decides that under the row
-- lock; ledger_entries.credits_payment below is the permanent guard).
-- payment_id names the row for the ledger whatever scope it is moved to.
create table payments (
    payment_id      bigint generated always as identity primary key,
    scope           text        not null,
    payment_ref     text        not null,
    account_id      text,
    currency        text,
    credited_minor  bigint      not null check (credited_minor >= 0),
    reversed_minor  bigint      not null check (reversed_minor >= 0),
    credited_by     bigint      references intents (intent_id),
    updated_at      timestamptz not null,
    unique (scope, payment_ref),
    check (reversed_minor <= credited_minor),
    check (credited_minor = 0 or (account_id is not null and currency is not null)),
    check (credited_by is null or credited_minor > 0)
);

-- The entry that credits a payment whole names it: a unique key, so no two
-- entries can ever credit one payment whole, however they raced (null for
-- every other entry, which a unique key never compares).
alter table ledger_entries add column credits_payment bigint references payments (payment_id);
alter table ledger_entries add constraint ledger_entries_credits_payment_key
    unique (credits_payment);
