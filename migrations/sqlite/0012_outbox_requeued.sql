-- Keep in step with ../postgres/0012_outbox_requeued.sql, which explains it.
alter table outbox add column queued_ms integer;
create index if not exists outbox_requeued on outbox (destination, queued_ms)
    where state = 'pending' and queued_ms is not null;
