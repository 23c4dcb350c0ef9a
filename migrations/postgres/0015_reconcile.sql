-- Reconcile (README "When a webhook never arrives"): events found in a
-- provider's own records after their webhook never came.

-- Where an intent came from: a webhook delivery, or a reconcile run. A
-- webhook that arrives later for a recovered event is a duplicate of it.
alter table intents add column origin text not null default 'webhook'
    check (origin in ('webhook', 'reconcile'));

-- One row per source that reconciles. `read_through_ms`: every event the
-- provider made visible before this time (unix ms, the start of the last
-- complete run) has been read; the next run reads from an overlap before
-- it. The lease (`leased_by` until `lease_until_ms`, judged by the
-- database's clock, as the outbox's leases are) keeps two instances from
-- sweeping one source at once.
create table reconcile_runs (
    source           text   primary key,
    read_through_ms  bigint,
    last_run_ms      bigint,
    last_outcome     text,
    last_success_ms  bigint,
    recovered        bigint not null default 0,
    leased_by        text,
    lease_until_ms   bigint
);
