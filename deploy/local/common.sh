# Shared by ./deploy/local/run and ./deploy/local/test: install what is missing, find Postgres, start a cluster.
# Sourced, not run.

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# Debian packages the build, the tests and the local stack need.
apt_packages=(libssl-dev libpq-dev libnghttp2-dev libargon2-dev libcurl4-openssl-dev libcrypt-dev postgresql openssl curl python3)
# What only the tests and benchmarks need: real protocol peers, a real browser, and the profilers signin-bench's
# PROFILE=1 runs (linux-perf, strace), and HAProxy, in front of the gateways in the upgrade test (Tests/Upgrade).
test_apt_packages=(dnsmasq-base nghttp2-client nghttp2-server python3-venv python3-pip chromium chromium-driver prometheus
    linux-perf strace haproxy)

# shellcheck source=log.sh
source "$(dirname "${BASH_SOURCE[0]}")/log.sh"

install_missing_packages() {
    local missing=()
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -ne 0 ] && sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_swift() {
    if ! command -v swift >/dev/null 2>&1; then
        [ -x /opt/swift/usr/bin/swift ] && export PATH="/opt/swift/usr/bin:$PATH"
    fi
    command -v swift >/dev/null 2>&1 || { echo "swift is not on PATH (expected /opt/swift/usr/bin)" >&2; exit 1; }
}

# A Python virtual environment with the tools the tests use as real peers.
ensure_python_venv() {
    local venv="$repo_root/.build/venv"
    if [ ! -x "$venv/bin/python" ]; then
        log "creating Python venv for the test peers"
        python3 -m venv "$venv"
    fi
    local stamp="$venv/.requirements.sha256"
    local wanted
    wanted="$(sha256sum "$repo_root/Tests/requirements.txt" | cut -d' ' -f1)"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
        log "installing Python test peers"
        "$venv/bin/pip" install -q --disable-pip-version-check -r "$repo_root/Tests/requirements.txt"
        echo "$wanted" > "$stamp"
    fi
    export PATH="$venv/bin:$PATH"
}

postgres_bin_dir() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    [ -n "$dir" ] || { echo "no PostgreSQL server binaries under /usr/lib/postgresql" >&2; exit 1; }
    echo "$dir"
}

# Runs a command as the postgres user when we are root (initdb refuses root), from / so its cwd is readable.
as_postgres() {
    if [ "$(id -u)" -eq 0 ]; then
        (cd / && runuser -u postgres -- "$@")
    else
        (cd / && "$@")
    fi
}

# start_cluster DIR [extra server options]: initializes DIR/data if needed and starts a server listening only on a
# unix socket in DIR. Sets DATABASE_URL.
start_cluster() {
    local dir="$1"
    shift
    local bin
    bin="$(postgres_bin_dir)"
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir"
    chmod 700 "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        log "initializing a Postgres cluster in $dir/data"
        as_postgres "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-instructions >/dev/null
    fi
    as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses='' -k $dir -c max_connections=300 $*" start >/dev/null
    export DATABASE_URL="postgresql:///postgres?host=$dir&user=postgres"
}

stop_cluster() {
    local dir="$1"
    [ -f "$dir/data/postmaster.pid" ] || return 0
    as_postgres "$(postgres_bin_dir)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}
