#!/usr/bin/env bash
# Times each admin page against a running hookledger: the median of 7
# requests' total time (curl on the same machine, so about the server's
# time). Usage: tools/admin-pages.sh BASE_URL ADMIN_TOKEN ACCOUNT EVENT_ID
# (an account and an event id that exist). BENCHMARKS.md has the figures
# for 100,000 stored events, seeded with
#   hookledger bench --only-new --events 100000 --seconds 300 --keep
# and a server started on the kept config.
set -euo pipefail
base=$1 token=$2 account=$3 event=$4
day=$(date -u +%F)
pages=(
  "/admin"
  "/admin/events"
  "/admin/events?account=$account"
  "/admin/events?status=stale"
  "/admin/events?type=balance.credit"
  "/admin/events?id=$event"
  "/admin/events?from=$day&to=$day"
  "/admin/events?source=bench&status=applied&account=$account"
  "/admin/account?id=$account"
  "/admin/audit"
  "/admin/failures"
  "/admin/api/events?limit=500"
  "/metrics"
)
printf '%-62s %10s\n' page "median ms"
for page in "${pages[@]}"; do
  times=()
  for _ in 1 2 3 4 5 6 7; do
    times+=("$(curl -s -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $token" "$base$page")")
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 4p)
  printf '%-62s %10s\n' "$page" "$(awk -v t="$median" 'BEGIN { printf "%.1f", t * 1000 }')"
done
