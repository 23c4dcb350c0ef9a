#!/usr/bin/env bash
# Seed corpora for the fuzz targets from the test fixtures and the example
# config; libFuzzer grows them from there (the corpus folders are not kept
# in git).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/verify corpus/normalise corpus/money corpus/config corpus/json_path
for fixture in ../tests/fixtures/*/*.json; do
  name=$(basename "$(dirname "$fixture")")-$(basename "$fixture")
  cp "$fixture" "corpus/normalise/$name"
  { printf 'stripe-signature: t=1780000000,v1=abc\nwebhook-id: msg_1\n'
    printf 'webhook-timestamp: 1780000000\nwebhook-signature: v1,abc\n\n'
    cat "$fixture"; } > "corpus/verify/$name"
done
printf 'USD 12.34' > corpus/money/usd
printf 'JPY 1500' > corpus/money/jpy
printf 'BHD 1.005' > corpus/money/bhd
cp ../hookledger.example.toml corpus/config/example.toml
printf 'data.object.metadata.account_id' > corpus/json_path/stripe
printf 'note_attributes.[name=account_id].value' > corpus/json_path/shopify
