-- The events whose payloads retention will empty: done, not emptied yet,
-- by when they were last received. Keep in step with
-- ../sqlite/0011_payload_purge.sql.
-- Why: without it each batch of the payload purge (store::retention) went
-- through every done event ever stored, emptied ones included, to find the
-- few old enough, and on SQLite held the one write lock meanwhile (about
-- 0.25 s a batch at a million events, growing with the table). The index
-- holds only the events not emptied yet, so a batch reads its rows and no
-- others, oldest first.
-- The index is built in this transaction and blocks writes to intents while
-- it builds. Where that table is large, build it beforehand without
-- blocking: `create index concurrently if not exists intents_payload_due on
-- intents (last_received_at) where payload_purged_at is null and status in
-- ('applied', 'ignored', 'dismissed', 'duplicate_effect')`; this file then
-- finds it. A concurrent build that failed leaves an invalid index of that
-- name, which `if not exists` would keep: dropped and built again here.
do $$
begin
    if exists (select 1 from pg_index i join pg_class c on c.oid = i.indexrelid
               join pg_namespace n on n.oid = c.relnamespace
               where c.relname = 'intents_payload_due' and n.nspname = current_schema()
                   and not i.indisvalid) then
        drop index intents_payload_due;
    end if;
end
$$;
create index if not exists intents_payload_due on intents (last_received_at)
    where payload_purged_at is null
        and status in ('applied', 'ignored', 'dismissed', 'duplicate_effect');
