# The container stack's pieces, for deploy/containers/up, down, test-basics and tests that start, stop and kill
# replicas. Sourced, not run; every function returns non-zero (with a message) on failure instead of exiting.
#
# Configuration (environment, all optional):
#   PASSKEY_ENV_FILE          the services' configuration (default deploy/kubernetes/base/passkey.env, as the
#                             Kubernetes base uses it)
#   PASSKEY_GATEWAY_PORT      the gateway's port on 127.0.0.1 (default 8080; PASSKEY_ORIGINS follows it)
#   PASSKEY_METRICS_PORT_BASE loopback ports for each service's /metrics and /healthz: challenge-service base+1,
#                             session-service base+2, verification replica N base+10+N (default 9100)
#   PASSKEY_VERIFICATION_REPLICAS  how many verification replicas up starts (default 3)
#   PASSKEY_EXTRA_ENV_FILE    a second KEY=VALUE file read after PASSKEY_ENV_FILE, whose entries win: for example
#                             PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS=0 for a load test. Every client reaches the
#                             gateway from the network's gateway address (port publishing masquerades), so all of
#                             them share one rate-limit bucket per address.
#
# Every container the stack makes carries the label passkey.stack=containers; each service container also
# passkey.service=<name> and, for verification replicas, passkey.replica=<N>.

containers_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
stack_repo_root="$(cd "$containers_dir/../.." && pwd)"
# shellcheck source=engine.sh
source "$containers_dir/engine.sh"

stack_label="passkey.stack=containers"
stack_network=passkey
stack_volume=passkey-postgres
stack_state_dir="$stack_repo_root/.local/containers"
stack_env_file="${PASSKEY_ENV_FILE:-$stack_repo_root/deploy/kubernetes/base/passkey.env}"
gateway_port="${PASSKEY_GATEWAY_PORT:-8080}"
metrics_port_base="${PASSKEY_METRICS_PORT_BASE:-9100}"
verification_replicas="${PASSKEY_VERIFICATION_REPLICAS:-3}"
stack_images=(postgres migrate challenge-service session-service verification-service gateway)
postgres_user=passkey
postgres_database=passkey

stack_image() { echo "localhost/passkey/$1:latest"; }
stack_log() { printf '%s\n' "==> $*" >&2; }

# The restrictions every container of the stack runs under.
stack_security=(--read-only --user 65532:65532 --cap-drop ALL --security-opt no-new-privileges)

stack_images_present() {
    local image
    for image in "${stack_images[@]}"; do
        pm image exists "$(stack_image "$image")" || return 1
    done
}

# The database password, made once and kept (with the volume) until down --volumes.
postgres_password() {
    local file="$stack_state_dir/postgres-password"
    if [ ! -s "$file" ]; then
        mkdir -p "$stack_state_dir"
        (umask 077 && od -An -N18 -tx1 /dev/urandom | tr -d ' \n' >"$file")
    fi
    cat "$file"
}

stack_database_url() {
    echo "postgresql://$postgres_user:$(postgres_password)@postgres:5432/$postgres_database?sslmode=disable"
}

# Arguments every service container gets: restrictions, network, configuration, and the origin that matches the
# published gateway port.
stack_check_env_file() {
    [ -f "$stack_env_file" ] || { echo "no configuration file $stack_env_file (PASSKEY_ENV_FILE)" >&2; return 1; }
    if [ -n "${PASSKEY_EXTRA_ENV_FILE:-}" ] && [ ! -f "$PASSKEY_EXTRA_ENV_FILE" ]; then
        echo "no configuration file $PASSKEY_EXTRA_ENV_FILE (PASSKEY_EXTRA_ENV_FILE)" >&2
        return 1
    fi
}

service_arguments() {
    printf '%s\n' "${stack_security[@]}" --network "$stack_network" --label "$stack_label" --pull never \
        --env-file "$stack_env_file"
    if [ -n "${PASSKEY_EXTRA_ENV_FILE:-}" ]; then
        printf '%s\n' --env-file "$PASSKEY_EXTRA_ENV_FILE"
    fi
    if [ "$gateway_port" != 8080 ]; then
        printf '%s\n' -e "PASSKEY_ORIGINS=http://localhost:$gateway_port"
    fi
}

# container_running NAME: true while the container exists and runs.
container_running() {
    [ "$(pm inspect --format '{{.State.Running}}' "$1" 2>/dev/null)" = true ]
}

# wait_http_ok NAME URL SECONDS: waits for URL to answer 200 while container NAME runs; on failure prints why and
# the container's last log lines.
wait_http_ok() {
    local name="$1" url="$2" seconds="$3" deadline=$((SECONDS + $3))
    while [ $SECONDS -lt $deadline ]; do
        if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" 2>/dev/null)" = 200 ]; then
            return 0
        fi
        if ! container_running "$name"; then
            echo "$name exited (status $(pm inspect --format '{{.State.ExitCode}}' "$name" 2>/dev/null)):" >&2
            pm logs --tail 20 "$name" >&2 2>&1 || true
            return 1
        fi
        sleep 0.2
    done
    echo "$name: $url did not answer 200 within $seconds s:" >&2
    pm logs --tail 20 "$name" >&2 2>&1 || true
    return 1
}

# --- Postgres and the schema ------------------------------------------------------------------------------------

start_postgres() {
    pm rm -f -t 10 passkey-postgres >/dev/null 2>&1 || true
    pm volume exists "$stack_volume" || pm volume create --label "$stack_label" "$stack_volume" >/dev/null
    pm run -d --name passkey-postgres --hostname postgres --network "$stack_network" --network-alias postgres \
        --label "$stack_label" --label passkey.service=postgres --pull never "${stack_security[@]}" \
        -v "$stack_volume:/var/lib/postgresql/data" \
        -e POSTGRES_USER="$postgres_user" -e POSTGRES_DB="$postgres_database" \
        -e POSTGRES_PASSWORD="$(postgres_password)" \
        "$(stack_image postgres)" >/dev/null || return 1
    local deadline=$((SECONDS + 90))
    while [ $SECONDS -lt $deadline ]; do
        # grep reads everything (no -q): an early exit would fail the pipeline under pipefail.
        if pm logs passkey-postgres 2>&1 | grep "database system is ready to accept connections" >/dev/null; then
            return 0
        fi
        if ! container_running passkey-postgres; then break; fi
        sleep 0.3
    done
    echo "Postgres did not become ready:" >&2
    pm logs --tail 30 passkey-postgres >&2 2>&1 || true
    return 1
}

# run_migrations: runs passkey/migrate to completion against the stack's database; fails on a non-zero exit.
run_migrations() {
    local arguments status
    stack_check_env_file || return 1
    mapfile -t arguments < <(service_arguments)
    pm rm -f passkey-migrate >/dev/null 2>&1 || true
    pm run --rm --name passkey-migrate "${arguments[@]}" -e DATABASE_URL="$(stack_database_url)" \
        "$(stack_image migrate)" >&2 && status=0 || status=$?
    if [ "$status" -ne 0 ]; then
        echo "passkey-migrate exited with status $status" >&2
        return 1
    fi
}

# --- services ---------------------------------------------------------------------------------------------------

# start_service CONTAINER SERVICE METRICS_PORT [podman run arguments...]: starts one replica of SERVICE (image
# passkey/SERVICE) under the network alias SERVICE, with its /metrics and /healthz on 127.0.0.1:METRICS_PORT, and
# waits until /healthz answers 200 (the service reports SERVING: database reachable, listening, not draining).
start_service() {
    local container="$1" service="$2" port="$3" arguments
    shift 3
    stack_check_env_file || return 1
    mapfile -t arguments < <(service_arguments)
    pm rm -f -t 10 "$container" >/dev/null 2>&1 || true
    pm run -d --name "$container" --hostname "$container" --network-alias "$service" "${arguments[@]}" \
        --label passkey.service="$service" --label passkey.metrics-port="$port" \
        -e DATABASE_URL="$(stack_database_url)" -p "127.0.0.1:$port:9090" "$@" \
        "$(stack_image "$service")" >/dev/null || return 1
    wait_http_ok "$container" "http://127.0.0.1:$port/healthz" 30
}

start_challenge_service() {
    start_service passkey-challenge-service challenge-service $((metrics_port_base + 1))
}

start_session_service() {
    start_service passkey-session-service session-service $((metrics_port_base + 2))
}

# The verification replicas: N = 1, 2, ...; each is container passkey-verification-service-N.
verification_replica_name() { echo "passkey-verification-service-$1"; }
verification_replica_metrics_port() { echo $((metrics_port_base + 10 + $1)); }
verification_replica_metrics_url() { echo "http://127.0.0.1:$(verification_replica_metrics_port "$1")/metrics"; }

# verification_replica_start N: starts replica N (replacing a stopped one of that number) and waits until it is
# SERVING on /healthz.
verification_replica_start() {
    start_service "$(verification_replica_name "$1")" verification-service "$(verification_replica_metrics_port "$1")" \
        --label passkey.replica="$1"
}

# verification_replica_stop N [SECONDS]: SIGTERM, then waits for the replica to drain and exit (SIGKILL only after
# SECONDS, default 30). Prints the exit status; the stopped container stays for its logs until it is started again.
verification_replica_stop() {
    local name
    name="$(verification_replica_name "$1")"
    pm stop -t "${2:-30}" "$name" >/dev/null || return 1
    pm inspect --format '{{.State.ExitCode}}' "$name"
}

# verification_replica_kill N: SIGKILL, no drain; waits until the container has exited.
verification_replica_kill() {
    local name
    name="$(verification_replica_name "$1")"
    pm kill --signal KILL "$name" >/dev/null || return 1
    pm wait "$name" >/dev/null 2>&1 || true
}

# verification_replicas: the running replicas, one a line: N, container name, address on the network, metrics URL.
verification_replicas() {
    local n name address
    for name in $(pm ps --filter "label=$stack_label" --filter label=passkey.service=verification-service \
        --format '{{.Names}}' | sort -V); do
        n="$(pm inspect --format '{{index .Config.Labels "passkey.replica"}}' "$name")"
        address="$(pm inspect --format "{{(index .NetworkSettings.Networks \"$stack_network\").IPAddress}}" "$name")"
        echo "$n $name $address $(verification_replica_metrics_url "$n")"
    done
}

start_gateway() {
    local arguments
    stack_check_env_file || return 1
    mapfile -t arguments < <(service_arguments)
    pm rm -f -t 10 passkey-gateway >/dev/null 2>&1 || true
    pm run -d --name passkey-gateway --hostname gateway --network-alias gateway "${arguments[@]}" \
        --label passkey.service=gateway -p "127.0.0.1:$gateway_port:8080" \
        "$(stack_image gateway)" >/dev/null || return 1
    wait_http_ok passkey-gateway "http://127.0.0.1:$gateway_port/readyz" 30
}

# stack_remove [--volumes]: removes every container of the stack (SIGTERM first, 10 s to drain), the network, and
# with --volumes the database volume and its password.
stack_remove() {
    local containers
    containers="$(pm ps -a --filter "label=$stack_label" --format '{{.Names}}')"
    if [ -n "$containers" ]; then
        # shellcheck disable=SC2086
        pm rm -f -t 10 $containers >/dev/null
    fi
    if pm network exists "$stack_network" 2>/dev/null; then pm network rm -f "$stack_network" >/dev/null; fi
    if [ "${1:-}" = --volumes ]; then
        if pm volume exists "$stack_volume" 2>/dev/null; then pm volume rm -f "$stack_volume" >/dev/null; fi
        rm -f "$stack_state_dir/postgres-password"
    fi
}
