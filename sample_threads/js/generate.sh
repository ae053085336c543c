#!/usr/bin/env bash
# The LangGraph.js sample threads: js.sqlite and js_postgres.sql beside this folder, with what
# LangGraph.js reports for every checkpoint in expected/js.jsonl and expected/js_pg.jsonl.
# Needs Node (npm ci here) and a Postgres server that `psql postgresql:///postgres` reaches.
set -euo pipefail
cd "$(dirname "$0")"
[ -d node_modules/@langchain/langgraph ] || npm ci --no-audit --no-fund
db="statectl_js_samples_$$"
psql -q postgresql:///postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
trap 'psql -q postgresql:///postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
node generate.mjs ../js.sqlite ../expected/js.jsonl \
  "postgresql://$(id -un)@/$db?host=/var/run/postgresql" ../expected/js_pg.jsonl
pg_dump --no-owner --no-privileges --no-comments -f ../js_postgres.sql "postgresql:///$db"
