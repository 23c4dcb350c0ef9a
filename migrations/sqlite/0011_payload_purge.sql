-- Keep in step with ../postgres/0011_payload_purge.sql, which explains it.
create index if not exists intents_payload_due on intents (last_received_at)
    where payload_purged_at is null
        and status in ('applied', 'ignored', 'dismissed', 'duplicate_effect');
