#!/bin/sh
# Entrypoint of passkey/postgres (a FROM-scratch image with Debian's PostgreSQL 15 and dash, nothing else: only
# shell built-ins here). On first start initializes PGDATA with POSTGRES_USER as superuser (password
# POSTGRES_PASSWORD, scram-sha-256 for every TCP client) and creates POSTGRES_DB; then runs the server in the
# foreground on 0.0.0.0:5432. Works under any UID that owns or may create PGDATA, and on a read-only root file
# system: the unix socket goes to /var/run/postgresql, else /tmp, else there is none.
set -eu

: "${PGDATA:=/var/lib/postgresql/data/pgdata}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
export PGDATA

log() { echo "postgres-entrypoint: $*" >&2; }

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        log "POSTGRES_PASSWORD is not set: it is needed to initialize $PGDATA"
        exit 2
    fi
    log "initializing $PGDATA (superuser $POSTGRES_USER, database $POSTGRES_DB)"
    # The password goes through a pipe (dash's here-document), never a file or the command line.
    initdb -D "$PGDATA" -U "$POSTGRES_USER" -E UTF8 --locale=C --auth-local=trust --auth-host=scram-sha-256 \
        --pwfile=/dev/stdin --no-instructions <<EOF
$POSTGRES_PASSWORD
EOF
    # Clients come from the container network, not only from loopback.
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    if [ "$POSTGRES_DB" != postgres ]; then
        # Single-user mode: no listener is opened before the database exists.
        echo "CREATE DATABASE \"$POSTGRES_DB\"" | postgres --single -D "$PGDATA" -c jit=off postgres >/dev/null
    fi
    log "initialized"
fi

socket_directory=""
for candidate in /var/run/postgresql /tmp; do
    if [ -d "$candidate" ] && [ -w "$candidate" ]; then
        socket_directory="$candidate"
        break
    fi
done

exec postgres -D "$PGDATA" -c listen_addresses='*' -c "unix_socket_directories=$socket_directory" -c jit=off "$@"
