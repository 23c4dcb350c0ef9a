-- Retention (README "Retention"): when an event's raw payload was purged.
-- The intent row, its hashes and amounts, every ledger entry and every
-- audit row are kept forever; only the body's bytes go.
alter table intents add column payload_purged_at timestamptz;
