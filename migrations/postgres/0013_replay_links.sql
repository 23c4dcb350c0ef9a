-- A replay whose payload maps, with the current config, to another intent
-- key (a refund stored `ignored` under its event id before refunds were
-- mapped, which maps to `refund:re_...` now) applies under that key. The
-- two rows name each other: the original its new key (`replayed_into`,
-- set once: a re-keyed event is never rewritten, see REWRITE_INTENT), the
-- new row the event it was replayed from (`replayed_from`). Both are event
-- ids within the row's own scope.
alter table intents add column replayed_into text;
alter table intents add column replayed_from text;
