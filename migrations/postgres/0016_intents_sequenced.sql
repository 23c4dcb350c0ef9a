-- The index of sequenced events holds only events that carry a sequence.
-- Keep in step with ../sqlite/0016_intents_sequenced.sql.
-- Why: intents_by_sequence (source, account_id, event_sequence) took every
-- event, and most providers' events carry no sequence: each new event
-- still put an entry at its account's place in it, a page of the index
-- written per event (on SQLite 9-14% of the new-event rate, BENCHMARKS.md
-- "2026-11-29 (fourth session)"). Every statement that reads it compares
-- event_sequence (=, <, >), which implies the index's condition on both
-- backends; the parked events of an account are read through
-- intents_waiting.
-- The new index is built in this transaction and blocks writes to intents
-- while it builds (a scan of the table). Where that table is large, build
-- it beforehand without blocking: `create index concurrently if not
-- exists intents_sequenced on intents (source, account_id,
-- event_sequence) where event_sequence is not null`, then `drop index
-- concurrently if exists intents_by_sequence`; this file then finds both
-- done. (Not concurrently here: see 0008_outbox_behind.sql.)
create index if not exists intents_sequenced on intents (source, account_id, event_sequence)
    where event_sequence is not null;
drop index if exists intents_by_sequence;
