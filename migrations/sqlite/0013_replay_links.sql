-- Keep in step with ../postgres/0013_replay_links.sql, which explains it.
alter table intents add column replayed_into text;
alter table intents add column replayed_from text;
