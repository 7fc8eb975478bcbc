#!/usr/bin/env bash
# Installs the machine packages the local stack needs, when they are missing: Python 3.11 with
# venv, Java 17 (Kafka broker, Spark), Maven (resolves jars from Maven Central), PostgreSQL
# 15+ (Debian's package, with contrib: hstore), MariaDB 10.11 (the binlog source) and PostGIS 3 for each installed PostgreSQL major
# (the compatibility suite's geometry/geography columns). Safe to run again: it does nothing when
# everything is there.
set -euo pipefail

missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql postgresql-contrib)
command -v psql >/dev/null 2>&1 || missing+=(postgresql-client)
[ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
command -v mariadb >/dev/null 2>&1 || missing+=(mariadb-client)
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || missing+=(python3.11 python3.11-venv)

install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "missing system packages: $* (install them with your package manager)" >&2
    exit 1
  fi
  echo "installing system packages: $*" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "$@"
}

if [ ${#missing[@]} -gt 0 ]; then
  install "${missing[@]}"
fi

# PostGIS for each PostgreSQL major installed (known only once PostgreSQL is).
postgis=()
for bin in /usr/lib/postgresql/*/bin/postgres; do
  [ -e "$bin" ] || continue
  major=$(basename "$(dirname "$(dirname "$bin")")")
  [ -e "/usr/share/postgresql/$major/extension/postgis.control" ] || postgis+=("postgresql-$major-postgis-3")
done
if [ ${#postgis[@]} -gt 0 ]; then
  install "${postgis[@]}"
fi
