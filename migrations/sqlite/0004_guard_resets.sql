-- An operator's reset of a high-water sequence guard (README "Reset a
-- sequence guard"). The events applied before it (ledger entries up to
-- after_entry_id on the account) no longer bound the guard: the invariant
-- check compares the guard with reset_to and what was applied since.
create table guard_resets (
    reset_id        integer primary key,
    source          text    not null,
    account_id      text    not null,
    guard_before    integer not null,
    reset_to        integer not null,
    after_entry_id  integer not null,
    audit_id        integer not null references audit_log (audit_id),
    created_at      text    not null,
    check (reset_to < guard_before)
) strict;
create index guard_resets_by_account on guard_resets (source, account_id, reset_id);
