-- An ordered destination's relay claims a posting only when no earlier
-- posting of its account and currency is undelivered. Behind a dead letter
-- or a failing message, a long backlog of one account would otherwise be
-- walked again by every claim (tools/ordered-claim-cost.py).
-- behind: the row waits for an earlier message of its account (set by the
--   relay's periodic tidy; cleared when that message is delivered, when the
--   row is replayed, or by the tidy when nothing is ahead of it any more).
--   A hint only: the claim still checks the order itself, so a wrong flag
--   can delay a message until the next tidy, never reorder one.
-- outbox_due: the claim's scan, without the rows that wait.
alter table outbox add column behind boolean not null default false;
create index outbox_due on outbox (destination, outbox_id) where state = 'pending' and not behind;
