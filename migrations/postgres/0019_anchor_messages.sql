-- Anchors sent through the outbox as `audit.anchor` messages
-- (docs/operating/chains.md, "Anchors"). Keep in step with
-- ../sqlite/0019_anchor_messages.sql.
--
-- A table of their own, not rows of `outbox`: an older version's relays
-- claim every outbox row of their destination and render it as an event,
-- and an outbox row is an event's (its intent, its type checked). Only
-- relays of this version on claim these; an older instance never sees them.
--
-- One anchor is `parts` messages (at most 500 chain heads each, so that a
-- part stays under the smallest destination's size limit: SQS takes 256 KiB).
-- `slot` is the anchor's interval (its time over `anchors.interval_secs`):
-- the first instance to queue a slot's anchor for a destination sends it,
-- the others' part 0 conflicts and they queue nothing. `state`, `attempts`,
-- `next_attempt_ms`, `leased_by`, `last_error` and `delivered_ms` mean what
-- they mean in `outbox`.
--
-- Expands only (a new table, empty: its indexes are built at once); the
-- bounds keep squawk's rules, as every migration from 0017 on does.
set local lock_timeout = '5s';
set local statement_timeout = '60s';
create table anchor_messages (
    anchor_message_id bigint generated always as identity primary key,
    destination     text    not null,
    slot            bigint  not null,
    part            bigint  not null check (part >= 0),
    message_id      text    not null,
    body            text    not null,
    state           text    not null check (state in ('pending', 'delivered', 'dead')),
    attempts        bigint  not null check (attempts >= 0),
    next_attempt_ms bigint  not null,
    leased_by       text,
    last_error      text,
    created_ms      bigint  not null,
    delivered_ms    bigint,
    unique (destination, slot, part)
);
create index anchor_messages_due on anchor_messages (destination, next_attempt_ms)
    where state = 'pending';
create index anchor_messages_delivered on anchor_messages (delivered_ms)
    where state = 'delivered';
insert into schema_compatibility (version, readable_from, description)
values (19, 17, 'anchor messages: a new table');
