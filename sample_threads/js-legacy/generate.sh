#!/usr/bin/env bash
# The LangGraph.js 0.3 sample threads (the layout before v4): js_legacy.sqlite and
# js_legacy_postgres.sql beside this folder, with what LangGraph.js 0.3 reports for every checkpoint
# in expected/js_legacy.jsonl and expected/js_legacy_pg.jsonl.
# Needs Node (npm ci here) and a Postgres server that `psql postgresql:///postgres` reaches.
set -euo pipefail
cd "$(dirname "$0")"
[ -d node_modules/@langchain/langgraph ] || npm ci --no-audit --no-fund
db="statectl_js_legacy_samples_$$"
psql -q postgresql:///postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
trap 'psql -q postgresql:///postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
node generate.mjs ../js_legacy.sqlite ../expected/js_legacy.jsonl \
  "postgresql://$(id -un)@/$db?host=/var/run/postgresql" ../expected/js_legacy_pg.jsonl
pg_dump --no-owner --no-privileges --no-comments -f ../js_legacy_postgres.sql "postgresql:///$db"
