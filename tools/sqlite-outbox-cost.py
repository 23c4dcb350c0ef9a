#!/usr/bin/env python3
"""What one outbox row costs SQLite, apart from everything else: a tight loop
over the statements of a posting (intent, balance, ledger entry, and the
`ledger.posted` message) on the real schema (migrations/sqlite), with and
without the message, and without each partial index of the outbox.
Python's sqlite3, synchronous=off, 100 postings per transaction: the times
are the engine's work plus Python's per-statement overhead, for comparing
the variants with each other only. The WAL bytes per posting (no
checkpoint during the run) are what the writer must write and sync: every
page a transaction changes is written whole, so an index whose inserts
land at random places costs a page per posting where one that grows at its
end costs a fraction.

    python3 tools/sqlite-outbox-cost.py [EVENTS]
"""
import glob
import os
import sqlite3
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVENTS = int(sys.argv[1]) if len(sys.argv) > 1 else 20000

INTENT = """insert into intents (source, scope, event_id, event_type, status, account_id,
    currency, amount_minor, event_sequence, deliveries, conflicts, payload_sha256, payload,
    first_received_at, last_received_at, late, partial)
values ('b', 'b', ?, 'balance.credit', 'applied', ?, 'USD', 100, ?, 1, 0, '00', x'7b7d',
    '2026', '2026', 0, 0) returning intent_id"""
BALANCE = """insert into balances (account_id, currency, balance_minor, updated_at, postings)
values (?, 'USD', 100, '2026', 1)
on conflict (account_id, currency) do update
set balance_minor = balances.balance_minor + excluded.balance_minor,
    postings = balances.postings + 1
returning balance_minor, postings"""
ENTRY = """insert into ledger_entries (intent_id, source, event_id, account_id, currency,
    amount_minor, balance_after_minor, object_id, operator_applied, created_at,
    credits_payment, account_seq)
values (?, 'b', ?, ?, 'USD', 100, ?, null, 0, '2026', null, ?)"""
MESSAGE = """insert into outbox (destination, message_id, message_type, intent_id, source,
    event_id, event_status, account_id, currency, amount_minor, balance_after_minor,
    account_seq, object_id, occurred_at, posted_at, operator_applied, state, attempts,
    next_attempt_ms, created_at)
select 'sink', ?, 'ledger.posted', intent_id, source, event_id, 'applied', ?, 'USD', 100, ?,
    ?, null, occurred_at, '2026', 0, 'pending', 0, 0, '2026'
from intents where intent_id = ?
on conflict (intent_id, message_type, destination) do nothing"""


def run(message_id, drop=(), messages=True, add=()):
    folder = tempfile.mkdtemp()
    db = sqlite3.connect(os.path.join(folder, "x.db"), isolation_level=None)
    db.execute("pragma journal_mode=wal")
    db.execute("pragma synchronous=off")
    db.execute("pragma wal_autocheckpoint=0")
    for migration in sorted(glob.glob(os.path.join(ROOT, "migrations/sqlite/*.sql"))):
        db.executescript(open(migration).read())
    for index in drop:
        db.execute(f"drop index {index}")
    for statement in add:
        db.execute(statement)
    started = time.perf_counter()
    db.execute("begin")
    for i in range(EVENTS):
        account = f"cus_{i % 1000}"
        intent_id = db.execute(INTENT, (f"evt_{i}", account, i)).fetchone()[0]
        balance, seq = db.execute(BALANCE, (account,)).fetchone()
        db.execute(ENTRY, (intent_id, f"evt_{i}", account, balance, seq))
        if messages:
            db.execute(MESSAGE, (message_id(i), account, balance, seq, intent_id))
        if i % 100 == 99:
            db.execute("commit")
            db.execute("begin")
    db.execute("commit")
    took = (time.perf_counter() - started) / EVENTS * 1e6
    wal = os.path.getsize(os.path.join(folder, "x.db-wal")) / EVENTS
    db.close()
    return took, wal


def random_id(_):
    return f"msg_{os.urandom(16).hex()}"


VARIANTS = [
    ("no message", dict(message_id=random_id, messages=False)),
    ("message, every index", dict(message_id=random_id)),
    # Before migration 0010 every message was in the order check's index;
    # now only an ordered destination's postings are.
    ("message, plus the order index of 0006", dict(
        message_id=random_id,
        add=["create index old_open on outbox (destination, account_id, currency, account_seq)"
             " where state <> 'delivered'"])),
    ("message, no outbox_pending", dict(message_id=random_id, drop=["outbox_pending"])),
    # The unique key before migration 0009: on the message id, a hash.
    ("message, plus the old (destination, message_id) key", dict(
        message_id=random_id,
        add=["create unique index old_key on outbox (destination, message_id)"])),
]
for label, variant in VARIANTS:
    runs = [run(**variant) for _ in range(3)]
    best = min(took for took, _ in runs)
    wal = min(wal for _, wal in runs)
    print(f"{label:52s} {best:6.1f} µs, {wal:7.0f} WAL bytes per posting (best of 3)")
