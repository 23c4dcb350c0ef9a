-- The outbox's unique key, from (destination, message_id) to
-- (intent_id, message_type, destination). Keep in step with
-- ../sqlite/0009_outbox_key.sql.
-- Why: message_id is a hash, so every new message went into that index at a
-- random place: one more page of the index written per message, on a table
-- that keeps its delivered rows for retention.outbox_days (BENCHMARKS.md,
-- "2026-11-27: the outbox's unique key"). intent_id grows with time, so the
-- new key's inserts land at its end, on the page the last message touched.
-- The key means the same: message_id is the hash of (message_type, the
-- event's source and event_id), and an intent is one (source, event_id).
-- It also finds an event's messages (the event page) by its intent.
-- A replay of one message finds it by outbox_id (and checks its id).
-- The index is built in this transaction and blocks writes to outbox while
-- it builds. Where that table is large, build it beforehand without
-- blocking: `create unique index concurrently if not exists outbox_key on
-- outbox (intent_id, message_type, destination)`; this file then finds it.
-- (Not concurrently here: see 0008_outbox_behind.sql.)
-- A concurrent build that failed leaves an invalid index of that name,
-- which `if not exists` would keep and no `on conflict` can use: dropped
-- and built again here.
do $$
begin
    if exists (select 1 from pg_index i join pg_class c on c.oid = i.indexrelid
               join pg_namespace n on n.oid = c.relnamespace
               where c.relname = 'outbox_key' and n.nspname = current_schema()
                   and not i.indisvalid) then
        drop index outbox_key;
    end if;
end
$$;
create unique index if not exists outbox_key on outbox (intent_id, message_type, destination);
alter table outbox drop constraint if exists outbox_destination_message_id_key;
