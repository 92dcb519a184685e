#!/usr/bin/env bash
# Services for the registry's PostgreSQL + S3 tests (issue #13). Source it from .ci/run:
#
#     source .ci/services.sh
#
# It installs Debian's PostgreSQL server (the tests start and stop a throw-away cluster of
# their own on 127.0.0.1, as the "postgres" user when run as root) and makes sure the Python
# drivers and moto's S3 server are there (moto is a test double of S3, not a production
# store). It exports what the tests read:
#   SPLICE_TEST_PG_BIN             directory with initdb and pg_ctl
#   SPLICE_TEST_REQUIRE_SERVICES=1 a missing service fails the PostgreSQL tests (no skip)
set -euo pipefail

if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
# Debian's package starts its own cluster on 5432; the tests do not use it.
if command -v service >/dev/null 2>&1; then
    service postgresql stop >/dev/null 2>&1 || true
fi
python -c "import psycopg, psycopg_pool, boto3, moto.server" 2>/dev/null \
    || pip install -q 'psycopg[binary]>=3.1' 'psycopg-pool>=3.2' 'boto3>=1.34' 'moto[server]>=5'

SPLICE_TEST_PG_BIN="$(dirname "$(ls -d /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -n 1)")"
export SPLICE_TEST_PG_BIN
export SPLICE_TEST_REQUIRE_SERVICES=1
