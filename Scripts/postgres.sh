#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on 127.0.0.1 for the relay's tests, installed from Debian's
# packages when missing. initdb and the server refuse to run as root, so as root they run as
# the `postgres` user. fsync is off: the data is thrown away.
#
#   eval "$(Scripts/postgres.sh start)"   starts it (idempotent) and prints the PG* exports
#   Scripts/postgres.sh restart           pg_ctl restart -m fast (the relay's restart tests use it)
#   Scripts/postgres.sh stop              stops it
#   Scripts/postgres.sh running           exits 0 when it runs, 1 when it does not
#   Scripts/postgres.sh log               the last 40 lines of its log, and the kernel's out-of-memory kills
#
# ASYNCMAIL_PGPORT (default 54329) and ASYNCMAIL_PGDATA (default /tmp/asyncmail-postgres-PORT)
# choose where. The tests only read PGHOST, PGPORT, PGUSER and PGDATABASE, so they run against
# any PostgreSQL you already have.
set -euo pipefail
port=${ASYNCMAIL_PGPORT:-54329}
data=${ASYNCMAIL_PGDATA:-/tmp/asyncmail-postgres-$port}

find_bin() { find /usr/lib/postgresql -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n 1; }
bin=$(find_bin)
if [ -z "$bin" ]; then
    echo "installing PostgreSQL from Debian's packages" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    bin=$(find_bin)
fi

as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_ctl_() { as_owner "$bin/pg_ctl" -D "$data" "$@"; }

case "${1:-start}" in
start)
    if [ ! -f "$data/PG_VERSION" ]; then
        mkdir -p "$data"
        [ "$(id -u)" = 0 ] && chown postgres "$data"
        as_owner "$bin/initdb" -D "$data" -U postgres -A trust --no-sync >/dev/null
    fi
    if ! pg_ctl_ status >/dev/null 2>&1; then
        pg_ctl_ -l "$data/server.log" -w -t 60 start \
            -o "-h 127.0.0.1 -p $port -k /tmp -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
            >/dev/null
    fi
    echo "export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=postgres"
    ;;
restart)
    # With its log file again, so that the new server does not hold this script's output open.
    pg_ctl_ -l "$data/server.log" -w -t 60 -m fast restart >/dev/null
    ;;
stop)
    pg_ctl_ -w -m fast stop >/dev/null || true
    ;;
running)
    pg_ctl_ status >/dev/null 2>&1
    ;;
log)
    tail -n 40 "$data/server.log" 2>/dev/null || echo "no log at $data/server.log"
    # The kernel's out-of-memory killer leaves its account here only (readable as root).
    dmesg 2>/dev/null | grep -i -E "out of memory|killed process" | tail -n 5 || true
    ;;
*)
    echo "usage: $0 start|restart|stop|running|log" >&2
    exit 2
    ;;
esac
