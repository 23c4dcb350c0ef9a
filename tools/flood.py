#!/usr/bin/env python3
"""Partial-body flood against a running hookledger, with a signed sender
measuring its latency meanwhile. Standard library only.

Attackers connect from 127.0.0.10, .11, ... (one loopback address each), send
complete headers announcing 1000 bytes and 10 of them, wait until the server
closes, and reconnect at once. The sender posts signed Standard Webhooks
credits from 127.0.0.2, one new connection per delivery, and reports p50/p99
and failures. With --pid, the server's RSS is sampled before, at the peak and
after.

  tools/flood.py --url http://127.0.0.1:8080 --source demo \
      --secret "$(cat data/demo_secret)" --addresses 1 --connections 2000 \
      --seconds 20 --pid "$(pgrep -f 'hookledger')"
"""

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import statistics
import time
import urllib.parse


def rss_kib(pid):
    if not pid:
        return None
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


async def attacker(host, port, local, path, stop, counts):
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n0123456789"
    ).encode()
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(host, port, local_addr=(local, 0))
            writer.write(head)
            await writer.drain()
            counts["opened"] += 1
            answer = await reader.read(64)
            counts["408" if b" 408 " in answer else "closed"] += 1
            writer.close()
        except OSError:
            counts["error"] += 1
            await asyncio.sleep(0.01)


def signed(secret, event_id, account):
    key = base64.b64decode(secret.removeprefix("whsec_"))
    now = int(time.time())
    body = json.dumps({
        "type": "payment.succeeded",
        "timestamp": now,
        "data": {"account_id": account, "amount_minor": 100, "currency": "USD"},
    }).encode()
    mac = hmac.new(key, f"{event_id}.{now}.".encode() + body, hashlib.sha256).digest()
    headers = {
        "webhook-id": event_id,
        "webhook-timestamp": str(now),
        "webhook-signature": "v1," + base64.b64encode(mac).decode(),
        "content-type": "application/json",
    }
    return headers, body


async def sender(host, port, path, secret, stop, latencies, failures):
    n = 0
    while not stop.is_set():
        n += 1
        headers, body = signed(secret, f"flood_probe_{time.time_ns()}_{n}", "acct_flood_probe")
        request = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n"
        request += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        request += f"Content-Length: {len(body)}\r\n\r\n"
        started = time.perf_counter()
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, local_addr=("127.0.0.2", 0)), 30)
            writer.write(request.encode() + body)
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(), 30)
            writer.close()
            if answer.startswith(b"HTTP/1.1 200"):
                latencies.append(time.perf_counter() - started)
            else:
                failures.append(answer[:40])
        except (OSError, asyncio.TimeoutError) as error:
            failures.append(repr(error))
        await asyncio.sleep(0.02)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--source", default="demo")
    parser.add_argument("--secret", default="")
    parser.add_argument("--addresses", type=int, default=1)
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--pid", type=int)
    parser.add_argument("--no-sender", action="store_true",
                        help="attack only (run the sender as a second process, so its "
                             "latency is not the attacker's event loop)")
    args = parser.parse_args()
    url = urllib.parse.urlparse(args.url)
    host, port = url.hostname, url.port or 80
    path = f"/webhooks/{args.source}"

    before = rss_kib(args.pid)
    stop = asyncio.Event()
    counts = {"opened": 0, "408": 0, "closed": 0, "error": 0}
    latencies, failures = [], []
    tasks = [
        asyncio.create_task(attacker(host, port, f"127.0.0.{10 + i % args.addresses}",
                                     path, stop, counts))
        for i in range(args.connections)
    ]
    if not args.no_sender:
        tasks.append(asyncio.create_task(sender(host, port, path, args.secret, stop,
                                                latencies, failures)))
    peak = before
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        rss = rss_kib(args.pid)
        if rss is not None:
            peak = max(peak or 0, rss)
    stop.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.sleep(3)
    after = rss_kib(args.pid)

    latencies.sort()
    report = {
        "attack": counts,
        "sender_ok": len(latencies),
        "sender_failed": len(failures),
        "sender_failures_sample": [str(f) for f in failures[:3]],
    }
    if latencies:
        report["sender_p50_ms"] = round(1000 * statistics.median(latencies), 1)
        report["sender_p99_ms"] = round(1000 * latencies[int(0.99 * (len(latencies) - 1))], 1)
        report["sender_max_ms"] = round(1000 * latencies[-1], 1)
    if before is not None:
        report["rss_mib"] = {"before": before // 1024, "peak": peak // 1024, "after": after // 1024}
    print(json.dumps(report, indent=2))


asyncio.run(main())
