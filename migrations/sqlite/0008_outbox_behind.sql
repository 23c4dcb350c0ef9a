-- Keep in step with ../postgres/0008_outbox_behind.sql, which explains it.
alter table outbox add column behind integer not null default 0;
create index if not exists outbox_due on outbox (destination, outbox_id)
    where state = 'pending' and not behind;
