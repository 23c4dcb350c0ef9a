-- Ordering policies (PostgreSQL). Keep in step with ../sqlite/0002_ordering.sql.
--
-- `waiting`: an event parked behind a gap in a contiguous stream. It knows
-- what it moves (like applied and stale), and at most one waiting event holds
-- each (source, account, sequence): the unique partial index is the
-- permanent guard behind the check ingest makes under the guard row's lock.
alter table intents drop constraint intents_status_check;
alter table intents drop constraint intents_check;
alter table intents add constraint intents_status_check
    check (status in ('applied', 'stale', 'ignored', 'rejected', 'dismissed', 'waiting'));
alter table intents add constraint intents_posting_check
    check (status not in ('applied', 'stale', 'waiting')
        or (account_id is not null and currency is not null
            and amount_minor is not null and event_sequence is not null));
-- The event arrived below its account's sequence guard (applied late, or
-- held as stale).
alter table intents add column late boolean not null default false;
-- Before this migration every stale event was late, and so was every event
-- applied with on_stale = "apply" (its reason said so).
update intents set late = true
where status = 'stale' or reason = 'applied out of order';
create index intents_by_sequence on intents (source, account_id, event_sequence);
create unique index intents_waiting on intents (source, account_id, event_sequence)
    where status = 'waiting';

-- Account-level operator actions (skip gap) have no single event.
alter table audit_log alter column event_id drop not null;
alter table audit_log add column account_id text;
alter table audit_log add column detail text;
alter table audit_log add constraint audit_log_subject_check
    check (event_id is not null or account_id is not null);

-- Sequence numbers an operator skipped in a contiguous stream, so a late
-- event for one of them is recognised as such.
create table sequence_skips (
    skip_id         bigint generated always as identity primary key,
    source          text        not null,
    account_id      text        not null,
    first_skipped   bigint      not null,
    last_skipped    bigint      not null,
    audit_id        bigint      not null references audit_log (audit_id),
    created_at      timestamptz not null,
    check (first_skipped <= last_skipped)
);
create index sequence_skips_by_account on sequence_skips (source, account_id, first_skipped);
create index audit_log_by_account on audit_log (source, account_id, audit_id);
