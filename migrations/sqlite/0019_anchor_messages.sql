-- Anchors sent through the outbox as `audit.anchor` messages. Keep in step
-- with ../postgres/0019_anchor_messages.sql, which says why a table of its
-- own and what each column is.
create table anchor_messages (
    anchor_message_id integer primary key,
    destination     text    not null,
    slot            integer not null,
    part            integer not null check (part >= 0),
    message_id      text    not null,
    body            text    not null,
    state           text    not null check (state in ('pending', 'delivered', 'dead')),
    attempts        integer not null check (attempts >= 0),
    next_attempt_ms integer not null,
    leased_by       text,
    last_error      text,
    created_ms      integer not null,
    delivered_ms    integer,
    unique (destination, slot, part)
);
create index anchor_messages_due on anchor_messages (destination, next_attempt_ms)
    where state = 'pending';
create index anchor_messages_delivered on anchor_messages (delivered_ms)
    where state = 'delivered';
insert into schema_compatibility (version, readable_from, description)
values (19, 17, 'anchor messages: a new table');
