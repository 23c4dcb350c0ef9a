-- What arrived with an event besides its body (the event page, and what
-- `hookledger replay` maps a stored event with again).
-- signature_headers: the headers the source's scheme read to verify and map
--   the first delivery, as a JSON object of lowercase name -> value. The
--   signature headers hold MACs of the body, never a secret.
-- signed_at: the time the signature covered (unix seconds), where the
--   scheme signs one.
-- signed_event_id: the event id the signature covered outside the body
--   (Standard Webhooks' webhook-id, say), where the scheme signs one.
-- conflict_sha256: the SHA-256 of the latest redelivered body that differed
--   from the stored one (`conflicts` counts them).
alter table intents add column signature_headers text;
alter table intents add column signed_at integer;
alter table intents add column signed_event_id text;
alter table intents add column conflict_sha256 text;
