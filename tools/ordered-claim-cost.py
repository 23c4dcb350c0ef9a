#!/usr/bin/env python3
"""What the relay's claim costs on an ordered destination when one account
is blocked (its first message a dead letter) with BACKLOG messages waiting
behind it, and 64 messages of other accounts due: before and after the
relay's tidy flags the waiting rows (`behind`), and what the tidy costs,
first and then each time. The claim is read from src/store/outbox/relay.rs
(SQLite's form), the tidy's statements from src/store/outbox/behind.rs,
the schema from migrations/sqlite.
Python's sqlite3; each claim is rolled back, so every run claims the same
rows.

    python3 tools/ordered-claim-cost.py [BACKLOG ...]
"""
import glob
import os
import re
import sqlite3
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Each row its own event (the outbox's key is the intent, type and
# destination), for an ordered destination (`ordered`).
MESSAGE = """insert into outbox (destination, message_id, message_type, intent_id, source,
    event_id, event_status, account_id, currency, amount_minor, balance_after_minor,
    account_seq, object_id, occurred_at, posted_at, operator_applied, state, attempts,
    next_attempt_ms, created_at, ordered)
values ('d', ?, 'ledger.posted', (select coalesce(max(intent_id), 0) + 1 from outbox), 'b', ?,
    'applied', ?, 'USD', 1, 1, ?, null, '2026', '2026', 0, ?, 0, 0, '2026', 1)"""


def claim_sql():
    text = open(os.path.join(ROOT, "src/store/outbox/relay.rs")).read()
    found = re.search(
        r'macro_rules! due_rows \{.*?concat!\(\s*"(.*?)",\s*\$lock,\s*"\)(.*?)"\s*\)',
        text,
        re.S,
    )
    if not found:
        sys.exit("the claim statement was not found in src/store/outbox/relay.rs")
    return re.sub(r"\$(\d+)", r"?\1", found.group(1) + ")" + found.group(2))


def flag_sql():
    text = open(os.path.join(ROOT, "src/store/outbox/behind.rs")).read()
    flag = re.search(r'const FLAG: &str = "(.*?)";', text, re.S)
    if not flag:
        sys.exit("the tidy's statement was not found in src/store/outbox/behind.rs")
    return re.sub(r"\$(\d+)", r"?\1", flag.group(1))


def unflag_sql():
    text = open(os.path.join(ROOT, "src/store/outbox/behind.rs")).read()
    ahead = re.search(r'macro_rules! ahead \{.*?"(.*?)"', text, re.S)
    unflag = re.search(r'const UNFLAG: &str = concat!\(\s*"(.*?)",\s*ahead!\(\)', text, re.S)
    if not (ahead and unflag):
        sys.exit("the tidy's clearing statement was not found in src/store/outbox/behind.rs")
    return re.sub(r"\$(\d+)", r"?\1", unflag.group(1) + ahead.group(1))


def tidy(conn, unflag, flag):
    """The whole tidy, one transaction: (seconds, rows flagged)."""
    started = time.perf_counter()
    conn.execute("begin")
    conn.execute(unflag, ("d",))
    flagged = conn.execute(flag, ("d", 10**15)).rowcount
    conn.execute("commit")
    return time.perf_counter() - started, flagged


def timed_claims(conn, claim):
    runs = 20
    started = time.perf_counter()
    for _ in range(runs):
        conn.execute("begin")
        rows = conn.execute(claim, ("d", "me", 10**15, 10**15 + 1, True, 64)).fetchall()
        conn.execute("rollback")
    return len(rows), (time.perf_counter() - started) / runs


def database():
    folder = tempfile.mkdtemp()
    conn = sqlite3.connect(os.path.join(folder, "claim.db"), isolation_level=None)
    for migration in sorted(glob.glob(os.path.join(ROOT, "migrations/sqlite/*.sql"))):
        conn.executescript(open(migration).read())
    return conn


def main():
    backlogs = [int(a) for a in sys.argv[1:]] or [0, 1000, 10000, 50000]
    claim = claim_sql()
    flag = flag_sql()
    unflag = unflag_sql()
    for backlog in backlogs:
        conn = database()
        conn.execute("begin")
        conn.execute(MESSAGE, ("m-dead", "e-dead", "blocked", 1, "dead"))
        for i in range(backlog):
            conn.execute(MESSAGE, (f"m{i}", f"e{i}", "blocked", i + 2, "pending"))
        for i in range(64):
            conn.execute(MESSAGE, (f"n{i}", f"f{i}", f"free{i}", 1, "pending"))
        conn.execute("commit")
        claimed, before = timed_claims(conn, claim)
        first, flagged = tidy(conn, unflag, flag)
        claimed_after, after = timed_claims(conn, claim)
        later, _ = tidy(conn, unflag, flag)
        print(
            f"blocked {backlog:>6}: one claim {before * 1e3:.2f} ms ({claimed} rows); "
            f"the first tidy flagged {flagged} in {first * 1e3:.1f} ms; "
            f"then one claim {after * 1e3:.2f} ms ({claimed_after} rows); "
            f"each later tidy {later * 1e3:.1f} ms"
        )

if __name__ == "__main__":
    main()
