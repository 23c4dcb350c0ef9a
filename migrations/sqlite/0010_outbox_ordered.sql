-- Keep in step with ../postgres/0010_outbox_ordered.sql, which explains it.
alter table outbox add column ordered integer not null default 0 check (ordered in (0, 1));
drop index if exists outbox_open_by_account;
create index if not exists outbox_ordered_open
    on outbox (destination, account_id, currency, account_seq)
    where state <> 'delivered' and ordered;
