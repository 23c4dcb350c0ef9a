-- When a re-queued message (an operator's replay) was queued again, in
-- milliseconds since the epoch by the database's clock; null for a message
-- waiting since it was written (created_at). Keep in step with
-- ../sqlite/0012_outbox_requeued.sql.
-- Why: the oldest pending message's age (the dashboard,
-- hookledger_outbox_oldest_pending_seconds) was its created_at, so a
-- replay of last week's messages showed a week-old backlog the moment it
-- was queued. The index holds only pending re-queued rows: few, and gone
-- once they are delivered.
alter table outbox add column if not exists queued_ms bigint;
create index if not exists outbox_requeued on outbox (destination, queued_ms)
    where state = 'pending' and queued_ms is not null;
