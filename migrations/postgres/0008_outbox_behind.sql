-- An ordered destination's relay claims a posting only when no earlier
-- posting of its account and currency is undelivered. Behind a dead letter
-- or a failing message, a long backlog of one account would otherwise be
-- walked again by every claim (tools/ordered-claim-cost.py).
-- behind: the row waits behind a stuck message of its account (set by the
--   relay's periodic tidy; cleared when the message ahead is delivered, when
--   the row is replayed, by the tidy when nothing is ahead any more, and for
--   every row of a destination that is no longer ordered). A hint only: the
--   claim still checks the order itself, so a wrong flag can delay a
--   message until the next tidy, never reorder one.
-- outbox_due: the claim's scan, without the rows that wait.
-- Adding a column with a constant default changes the catalog only. The
-- index is built in this transaction and blocks writes to outbox while it
-- builds (a scan of the table, delivered rows kept for
-- retention.outbox_days included). Where that table is large, run both
-- beforehand, the index without blocking: the alter as below, then
-- `create index concurrently if not exists outbox_due ...` with the same
-- columns and predicate; both statements here then find what they make.
-- (Not concurrently here: such a build waits for every open transaction,
-- among them the other instances' waits for the migration lock, which wait
-- for it: a deadlock when instances start together.)
alter table outbox add column if not exists behind boolean not null default false;
create index if not exists outbox_due on outbox (destination, outbox_id)
    where state = 'pending' and not behind;
