-- The index of sequenced events holds only events that carry a sequence.
-- Keep in step with ../postgres/0016_intents_sequenced.sql, which says why.
create index if not exists intents_sequenced on intents (source, account_id, event_sequence)
    where event_sequence is not null;
drop index if exists intents_by_sequence;
