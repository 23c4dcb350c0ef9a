#!/usr/bin/env python3
"""What hookledger instances and their PostgreSQL database cost at a steady
load: N instances of BINARY on one new database of the local server, behind
haproxy (deploy/haproxy/haproxy.cfg) when N > 1, driven at RATE signed
Standard Webhooks credits per second (open loop: each due on a schedule,
its latency counted from when it was due) for SECONDS. Reports each
instance's CPU (percent of one core) and RSS, haproxy's, PostgreSQL's (all
of the server's processes), and the latency. Standard library only.

  tools/instance-cost.py --binary target/release/hookledger --instances 3 \
      --rate 200 --seconds 30

docs/production/load-balancing.md has the figures.
"""

import argparse
import base64
import hashlib
import hmac
import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def rss_mb(pid):
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE / 1e6


def postgres_pids():
    out = subprocess.run(["pgrep", "-u", "postgres"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def postgres_ticks():
    total = 0
    for pid in postgres_pids():
        try:
            total += cpu_ticks(pid)
        except OSError:
            pass
    return total


def signed(event_id, account, amount):
    ts = str(int(time.time()))
    body = json.dumps({
        "type": "balance.credit",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(ts))),
        "data": {"account_id": account, "amount_minor": amount, "currency": "USD"},
    }).encode()
    mac = hmac.new(base64.b64decode(SECRET.removeprefix("whsec_")),
                   f"{event_id}.{ts}.".encode() + body, hashlib.sha256)
    return body, {
        "webhook-id": event_id,
        "webhook-timestamp": ts,
        "webhook-signature": "v1," + base64.b64encode(mac.digest()).decode(),
        "content-type": "application/json",
    }


def sender(port, due, latencies, failures):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while True:
        item = due.get()
        if item is None:
            return
        at, n = item
        body, headers = signed(f"cost_{n}_{uuid.uuid4().hex[:8]}", f"acct_{n % 1000}", 100)
        try:
            conn.request("POST", "/webhooks/demo", body, headers)
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                failures.append(response.status)
            latencies.append(time.monotonic() - at)
        except (OSError, http.client.HTTPException) as e:
            failures.append(str(e))
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--instances", type=int, default=1)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    args.binary = os.path.abspath(args.binary)

    dir = tempfile.mkdtemp(prefix="hookledger-cost-")
    database = "cost_" + uuid.uuid4().hex[:10]
    subprocess.run(["psql", f"{args.server}/postgres", "-qc", f"create database {database}"],
                   check=True)
    url = f"{args.server}/{database}?sslmode=disable"
    with open(f"{dir}/hookledger.toml", "w") as f:
        f.write(f'[[sources]]\nname = "demo"\nkind = "standard-webhooks"\n'
                f'secrets = ["{SECRET}"]\n[limits]\nmax_connections_per_address = 0\n'
                f'trusted_proxies = ["127.0.0.1/32"]\n')
    processes, ports = [], []
    try:
        for n in range(args.instances):
            port = free_port()
            env = {"PATH": os.environ["PATH"], "HOOKLEDGER_CONFIG": f"{dir}/hookledger.toml",
                   "HOOKLEDGER_DATABASE_URL": url, "HOOKLEDGER_LISTEN": f"127.0.0.1:{port}",
                   "HOOKLEDGER_DATA_DIR": f"{dir}/data{n}"}
            processes.append(subprocess.Popen([args.binary, "serve"], env=env, cwd=dir,
                                              stdout=subprocess.DEVNULL,
                                              stderr=open(f"{dir}/hookledger{n}.log", "w")))
            ports.append(port)
            time.sleep(1.5)
        front = ports[0]
        haproxy = None
        if args.instances > 1:
            front = free_port()
            here = os.path.dirname(os.path.abspath(__file__))
            text = open(os.path.join(here, "../deploy/haproxy/haproxy.cfg")).read()
            lines = [line for line in text.splitlines() if not line.strip().startswith("server ")]
            text = "\n".join(lines).replace("bind 127.0.0.1:8000", f"bind 127.0.0.1:{front}")
            text += "".join(f"\n    server h{n} 127.0.0.1:{p} check" for n, p in enumerate(ports))
            with open(f"{dir}/haproxy.cfg", "w") as f:
                f.write(text + "\n")
            haproxy = subprocess.Popen(["haproxy", "-db", "-f", f"{dir}/haproxy.cfg"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            processes.append(haproxy)
            time.sleep(3)
        due, latencies, failures = queue.Queue(), [], []
        workers = [threading.Thread(target=sender, args=(front, due, latencies, failures))
                   for _ in range(32)]
        for w in workers:
            w.start()
        # Warm up, then measure.
        pids = [p.pid for p in processes]
        start = time.monotonic()
        n = 0
        measured_from, before, pg_before = None, None, None
        while True:
            now = time.monotonic()
            if measured_from is None and now - start >= 5:
                measured_from = now
                before = [cpu_ticks(pid) for pid in pids]
                pg_before = postgres_ticks()
                latencies.clear()
            if measured_from is not None and now - measured_from >= args.seconds:
                break
            at = start + n / args.rate
            if at > now:
                time.sleep(at - now)
            due.put((at, n))
            n += 1
        elapsed = time.monotonic() - measured_from
        after = [cpu_ticks(pid) for pid in pids]
        pg_after = postgres_ticks()
        rss = [rss_mb(pid) for pid in pids]
        for _ in workers:
            due.put(None)
        for w in workers:
            w.join()
        lat = sorted(latencies)
        pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else float("nan")
        print(f"{args.instances} instance(s), {args.rate}/s for {args.seconds} s: "
              f"{len(lat)} answered, {len(failures)} failed, p50 {pct(0.5):.1f} ms, "
              f"p99 {pct(0.99):.1f} ms")
        for i, pid in enumerate(pids):
            name = "haproxy" if haproxy is not None and pid == haproxy.pid else f"hookledger{i}"
            cpu = 100 * (after[i] - before[i]) / TICK / elapsed
            print(f"  {name:12} CPU {cpu:5.1f}% of a core, RSS {rss[i]:6.1f} MB")
        pg = 100 * (pg_after - pg_before) / TICK / elapsed
        print(f"  {'PostgreSQL':12} CPU {pg:5.1f}% of a core (every server process)")
    finally:
        for p in processes:
            p.send_signal(signal.SIGKILL)
            p.wait()
        subprocess.run(["psql", f"{args.server}/postgres", "-qc",
                        f"drop database if exists {database} with (force)"])


if __name__ == "__main__":
    main()
