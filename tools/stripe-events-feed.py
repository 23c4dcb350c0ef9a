"""A stand-in for Stripe's GET /v1/events, for measuring one reconcile
sweep (BENCHMARKS.md, "Reconcile"): COUNT payment_intent.succeeded events
for ACCOUNT, 100 a page, newest first as Stripe lists them, paged with
starting_after, filtered by type; every other type lists nothing. It
answers with a Date header, as Stripe does, and counts the requests it
served (printed on SIGINT/SIGTERM). Standard library only.

usage: stripe-events-feed.py PORT COUNT ACCOUNT
"""

import json
import signal
import sys
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

PORT, COUNT, ACCOUNT = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
NOW = int(time.time())
EVENTS = [
    {
        "id": f"evt_bench_{n:06d}",
        "object": "event",
        "type": "payment_intent.succeeded",
        "created": NOW - COUNT + n,
        "livemode": False,
        "data": {
            "object": {
                "id": f"pi_bench_{n:06d}",
                "object": "payment_intent",
                "amount": 1000,
                "amount_received": 1000,
                "currency": "usd",
                "status": "succeeded",
                "metadata": {"account_id": ACCOUNT},
            }
        },
    }
    for n in range(COUNT)
][::-1]
INDEX = {event["id"]: i for i, event in enumerate(EVENTS)}
SERVED = [0]


class Feed(BaseHTTPRequestHandler):
    def do_GET(self):
        SERVED[0] += 1
        query = parse_qs(urlparse(self.path).query)
        limit = int(query.get("limit", ["10"])[0])
        wanted = query.get("type", [None])[0]
        after = query.get("starting_after", [None])[0]
        events = EVENTS if wanted in (None, "payment_intent.succeeded") else []
        start = INDEX[after] + 1 if after in INDEX and events else 0
        page = events[start : start + limit]
        body = json.dumps(
            {"object": "list", "data": page, "has_more": start + limit < len(events)}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Date", formatdate(usegmt=True))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def stop(*_):
    print(f"served {SERVED[0]} requests", flush=True)
    sys.exit(0)


signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGTERM, stop)
ThreadingHTTPServer(("127.0.0.1", PORT), Feed).serve_forever()
