-- An operator's reset of a high-water sequence guard (README "Reset a
-- sequence guard"). The events applied before it (ledger entries up to
-- after_entry_id on the account) no longer bound the guard: the invariant
-- check compares the guard with reset_to and what was applied since.
create table guard_resets (
    reset_id        bigint generated always as identity primary key,
    source          text        not null,
    account_id      text        not null,
    guard_before    bigint      not null,
    reset_to        bigint      not null,
    after_entry_id  bigint      not null,
    audit_id        bigint      not null references audit_log (audit_id),
    created_at      timestamptz not null,
    check (reset_to < guard_before)
);
create index guard_resets_by_account on guard_resets (source, account_id, reset_id);
