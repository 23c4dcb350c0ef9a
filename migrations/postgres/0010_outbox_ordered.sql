-- Only ordered destinations' postings in the order check's index. Keep in
-- step with ../sqlite/0010_outbox_ordered.sql.
-- ordered: the row is a posting for a destination with ordered_by_account,
--   so it takes part in its account's order: the ordered claim, the tidy
--   and the clear after a delivery look for earlier undelivered rows with
--   it set. Written with the row from the config of the instance that
--   writes it; a relay of an ordered destination sets it on every
--   undelivered posting of its destination before its first claim and at
--   each tidy (a destination made ordered, rows written before this file),
--   one of an unordered destination clears it; a replay sets it again.
-- outbox_ordered_open replaces outbox_open_by_account, which took every
-- message of every destination at a random place (by account), though
-- only ordered destinations read it (BENCHMARKS.md, "2026-11-27 (second
-- session)"). Rows from before this file are not in it until the first
-- tidy of their ordered destination's relay, which runs before its first
-- claim. Here the old index is dropped (which locks outbox, reads too,
-- until this transaction commits) and the new one built (a scan of the
-- table, though no row has the flag yet). Where that table is large, run
-- beforehand, in this order: the alter as below, `create index
-- concurrently if not exists outbox_ordered_open ...` with the same
-- columns and predicate, `drop index concurrently if exists
-- outbox_open_by_account`; this file then finds all three done.
alter table outbox add column if not exists ordered boolean not null default false;
drop index if exists outbox_open_by_account;
create index if not exists outbox_ordered_open
    on outbox (destination, account_id, currency, account_seq)
    where state <> 'delivered' and ordered;
