#!/usr/bin/env bash
# Installs the machine packages the local stack needs, when they are missing: Python 3.11 with
# venv, Java 17 (Kafka broker, Spark), Maven (resolves jars from Maven Central) and PostgreSQL
# 15+ (Debian's package). Safe to run again: it does nothing when everything is there.
set -euo pipefail

missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql postgresql-contrib)
command -v psql >/dev/null 2>&1 || missing+=(postgresql-client)
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || missing+=(python3.11 python3.11-venv)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "missing system packages: ${missing[*]} (install them with your package manager)" >&2
  exit 1
fi
echo "installing system packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
