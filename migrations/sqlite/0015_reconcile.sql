-- Keep in step with ../postgres/0015_reconcile.sql, which explains it.
alter table intents add column origin text not null default 'webhook'
    check (origin in ('webhook', 'reconcile'));

create table reconcile_runs (
    source           text    primary key,
    read_through_ms  integer,
    last_run_ms      integer,
    last_outcome     text,
    last_success_ms  integer,
    recovered        integer not null default 0,
    leased_by        text,
    lease_until_ms   integer
);
