# The container stack's pieces, for deploy/containers/up, down, test-basics and tests that start, stop and kill
# replicas. Sourced, not run; every function returns non-zero (with a message) on failure instead of exiting.
#
# Configuration (environment, all optional):
#   PASSKEY_ENV_FILE          the services' configuration (default deploy/kubernetes/base/passkey.env, as the
#                             Kubernetes base uses it)
#   PASSKEY_GATEWAY_PORT      the gateway's port on 127.0.0.1 (default 8080; PASSKEY_ORIGINS follows it)
#   PASSKEY_METRICS_PORT_BASE loopback ports for each replica's /metrics and /healthz: replica N (1-9) of
#                             challenge-service base+N, of verification-service base+10+N, of session-service
#                             base+20+N (default 9100)
#   PASSKEY_VERIFICATION_REPLICAS  how many verification replicas up starts (default 3)
#   PASSKEY_STACK_NAME        a name for a second stack beside the default one (default passkey): it prefixes the
#                             container names and names the network and the database volume, so that a test's
#                             stack and another one do not touch each other (each needs its own ports too)
#   PASSKEY_EXTRA_ENV_FILE    a second KEY=VALUE file read after PASSKEY_ENV_FILE, whose entries win: for example
#                             PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS=0 for a load test. Every client reaches the
#                             gateway from the network's gateway address (port publishing masquerades), so all of
#                             them share one rate-limit bucket per address.
#
# Mutual TLS: the stack makes a throwaway CA and one certificate per process with deploy/local/certificates.sh in
# its state directory (.local/containers/grpc-tls, kept and reused until a day before expiry) and mounts each
# process's own files, in the layout of its Kubernetes Secret (tls.crt, tls.key, ca.crt), read-only at
# /etc/passkey/grpc, where passkey.env's GRPC_TLS_* point. See stack_grpc_certificates.
#
# Access tokens: session-service and verification-service seal their signing keys under a key-encryption key (KEK).
# The stack makes one, once, in its state directory (.local/containers/token-kek/kek/key, kept with the database
# volume until stack_remove --volumes) and mounts that directory read-only at /etc/passkey/token-kek into those two
# services' containers only, where passkey.env's PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE points, as their pods mount
# the Secret passkey-token-kek. See stack_token_kek.
#
# Every container the stack makes carries the label passkey.stack=containers (passkey.stack=<PASSKEY_STACK_NAME>
# for another stack); each service container also passkey.service=<name> and passkey.replica=<N>.
#
# Replicas: every gRPC service (challenge-service, verification-service, session-service) runs as replicas
# N = 1, 2, ... in containers <stack>-<service>-<N>, all under the network alias <service>. replica_start,
# replica_stop, replica_kill and replicas take the service and N; the verification_replica_* names are the same
# for verification-service.

containers_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
stack_repo_root="$(cd "$containers_dir/../.." && pwd)"
# shellcheck source=engine.sh
source "$containers_dir/engine.sh"
# shellcheck source=../local/certificates.sh
source "$stack_repo_root/deploy/local/certificates.sh"

stack_name="${PASSKEY_STACK_NAME:-passkey}"
if [ "$stack_name" = passkey ]; then
    stack_label="passkey.stack=containers"
    stack_state_dir="$stack_repo_root/.local/containers"
else
    stack_label="passkey.stack=$stack_name"
    stack_state_dir="$stack_repo_root/.local/containers-$stack_name"
fi
stack_network="$stack_name"
stack_volume="$stack_name-postgres"
stack_postgres_container="$stack_name-postgres"
stack_gateway_container="$stack_name-gateway"
stack_migrate_container="$stack_name-migrate"
stack_env_file="${PASSKEY_ENV_FILE:-$stack_repo_root/deploy/kubernetes/base/passkey.env}"
gateway_port="${PASSKEY_GATEWAY_PORT:-8080}"
metrics_port_base="${PASSKEY_METRICS_PORT_BASE:-9100}"
verification_replicas="${PASSKEY_VERIFICATION_REPLICAS:-3}"
stack_images=(postgres migrate import admin challenge-service session-service verification-service gateway)
postgres_user=passkey
postgres_database=passkey

stack_grpc_dir="$stack_state_dir/grpc-tls"
# Where every container finds its gRPC identity (GRPC_TLS_* in passkey.env), as a pod finds its Secret.
grpc_tls_mount=/etc/passkey/grpc
stack_token_kek_dir="$stack_state_dir/token-kek"
# Where the services that issue sessions find the token KEK: passkey.env's PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE is
# the file key there, as in a pod that mounts the Secret passkey-token-kek.
token_kek_mount=/etc/passkey/token-kek
# The processes that issue sessions, and so sign access tokens: only they get the KEK.
token_kek_services=(session-service verification-service)

stack_image() { echo "localhost/passkey/$1:latest"; }

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

# stack_trust_domain: GRPC_TRUST_DOMAIN as the containers get it (the last one of the env files; passkey.internal).
stack_trust_domain() {
    local file value="" line
    for file in "$stack_env_file" "${PASSKEY_EXTRA_ENV_FILE:-}"; do
        [ -n "$file" ] && [ -f "$file" ] || continue
        line="$(grep '^GRPC_TRUST_DOMAIN=' "$file" | tail -n 1)" || true
        [ -n "$line" ] && value="${line#GRPC_TRUST_DOMAIN=}"
    done
    echo "${value:-passkey.internal}"
}

# stack_grpc_certificates [DIR]: makes (or keeps, while valid for another day) the CA and the certificates of
# gateway, challenge-service, verification-service and session-service in DIR/ca (default: the stack's
# grpc-tls directory), and gives each process a directory DIR/<name> holding its own tls.crt, tls.key and ca.crt,
# which its containers mount read-only at /etc/passkey/grpc. The containers run as 65532, which owns nothing on
# the host: DIR is 0700, so no other host user gets in, and the files under it are 0644, so 65532 can read them
# through the mount (which shows the container its own directory only). A file is replaced (by rename, as the
# kubelet swaps a Secret's files) only when its content changed, so running containers see a renewal and reload
# it, and an unchanged set is left alone.
stack_grpc_certificates() {
    local dir="${1:-$stack_grpc_dir}" name source target
    mkdir -p "$dir" && chmod 700 "$dir" || return 1
    make_grpc_certificates "$dir/ca" "$(stack_trust_domain)" ||
        { echo "cannot make the gRPC certificates in $dir/ca" >&2; return 1; }
    for name in "${grpc_identities[@]}"; do
        mkdir -p "$dir/$name" && chmod 755 "$dir/$name" || return 1
        for source in "$name.pem:tls.crt" "$name.key:tls.key" "ca.pem:ca.crt"; do
            target="$dir/$name/${source#*:}"
            cmp -s "$dir/ca/${source%%:*}" "$target" && continue
            cp "$dir/ca/${source%%:*}" "$target.new" && chmod 644 "$target.new" && mv -f "$target.new" "$target" ||
                return 1
        done
    done
}

# grpc_mount_arguments NAME [DIR]: the podman arguments that give a container NAME's gRPC identity (made by
# stack_grpc_certificates).
grpc_mount_arguments() {
    local dir="${2:-$stack_grpc_dir}"
    [ -f "$dir/$1/tls.key" ] || { echo "no gRPC certificate for $1 in $dir (stack_grpc_certificates)" >&2; return 1; }
    printf '%s
' -v "$dir/$1:$grpc_tls_mount:ro"
}

# stack_token_kek [DIR]: makes the key-encryption key of the access-token signing keys in DIR/kek/key (default: the
# stack's token-kek directory), 32 random bytes as 64 hex digits, unless it is there already: every replica, and
# every later up on the same database volume, must use the same one, or the processes cannot open the keys stored
# under it. As for the gRPC certificates, DIR is 0700, so no other host user gets in, and DIR/kek 0755 with the key
# 0644 inside, so 65532 can read it through the mount (which shows the container DIR/kek only).
stack_token_kek() {
    local dir="${1:-$stack_token_kek_dir}"
    mkdir -p "$dir/kek" && chmod 700 "$dir" && chmod 755 "$dir/kek" || return 1
    [ -s "$dir/kek/key" ] && return 0
    command -v openssl >/dev/null || { echo "the token KEK needs openssl" >&2; return 1; }
    openssl rand -hex 32 >"$dir/kek/key.new" && chmod 644 "$dir/kek/key.new" && mv -f "$dir/kek/key.new" "$dir/kek/key" ||
        { echo "cannot make the token KEK in $dir" >&2; return 1; }
}

# token_kek_mount_arguments SERVICE [DIR]: the podman arguments that give a container of SERVICE the token KEK (made
# by stack_token_kek), read-only: a mount for session-service and verification-service, nothing for the others.
token_kek_mount_arguments() {
    local dir="${2:-$stack_token_kek_dir}" service
    for service in "${token_kek_services[@]}"; do
        [ "$service" = "$1" ] || continue
        [ -s "$dir/kek/key" ] || { echo "no token KEK in $dir (stack_token_kek)" >&2; return 1; }
        printf '%s\n' -v "$dir/kek:$token_kek_mount:ro"
    done
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

# stack_pin_bridge_address: gives the network's bridge a fixed MAC address (its current one), once its first
# container has made it. The kernel otherwise gives a bridge the lowest MAC of its ports, so it changes as replicas
# come and go, while the containers keep the old one in their ARP caches for the network's gateway address: their
# DNS queries to aardvark-dns and their replies to clients of published ports are then lost until the entry is
# refreshed (seconds to minutes). Netavark pins the address itself from 1.9 (containers/netavark#833); Debian 12
# has 1.4. Idempotent.
stack_pin_bridge_address() {
    local bridge address
    bridge="$(pm network inspect --format '{{.NetworkInterface}}' "$stack_network" 2>/dev/null)" || return 0
    [ -n "$bridge" ] && [ -e "/sys/class/net/$bridge/address" ] || return 0
    # addr_assign_type 3: set by hand (NET_ADDR_SET), so already fixed.
    [ "$(cat "/sys/class/net/$bridge/addr_assign_type" 2>/dev/null)" = 3 ] && return 0
    address="$(cat "/sys/class/net/$bridge/address")"
    engine_sudo ip link set dev "$bridge" address "$address" ||
        { echo "cannot fix the MAC address of bridge $bridge" >&2; return 1; }
}

# --- Postgres and the schema ------------------------------------------------------------------------------------

start_postgres() {
    pm rm -f -t 10 "$stack_postgres_container" >/dev/null 2>&1 || true
    pm volume exists "$stack_volume" || pm volume create --label "$stack_label" "$stack_volume" >/dev/null
    pm run -d --name "$stack_postgres_container" --hostname postgres --network "$stack_network" --network-alias postgres \
        --label "$stack_label" --label passkey.service=postgres --pull never "${stack_security[@]}" \
        -v "$stack_volume:/var/lib/postgresql/data" \
        -e POSTGRES_USER="$postgres_user" -e POSTGRES_DB="$postgres_database" \
        -e POSTGRES_PASSWORD="$(postgres_password)" \
        "$(stack_image postgres)" >/dev/null || return 1
    # The first container on the network has made its bridge: its address must not change from now on.
    stack_pin_bridge_address || return 1
    local deadline=$((SECONDS + 90))
    while [ $SECONDS -lt $deadline ]; do
        # grep reads everything (no -q): an early exit would fail the pipeline under pipefail.
        if pm logs "$stack_postgres_container" 2>&1 | grep "database system is ready to accept connections" >/dev/null; then
            return 0
        fi
        if ! container_running "$stack_postgres_container"; then break; fi
        sleep 0.3
    done
    echo "Postgres did not become ready:" >&2
    pm logs --tail 30 "$stack_postgres_container" >&2 2>&1 || true
    return 1
}

# run_migrations: runs passkey/migrate to completion against the stack's database; fails on a non-zero exit.
run_migrations() {
    local arguments status
    stack_check_env_file || return 1
    mapfile -t arguments < <(service_arguments)
    pm rm -f "$stack_migrate_container" >/dev/null 2>&1 || true
    pm run --rm --name "$stack_migrate_container" "${arguments[@]}" -e DATABASE_URL="$(stack_database_url)" \
        "$(stack_image migrate)" >&2 && status=0 || status=$?
    if [ "$status" -ne 0 ]; then
        echo "passkey-migrate exited with status $status" >&2
        return 1
    fi
}

# run_import [passkey-import arguments...]: runs passkey/import to completion against the stack's database, its
# standard input this function's (`run_import --format jsonl - <users.jsonl`); returns passkey-import's exit status
# (docs/import.md). The container's root file system is read-only; it runs in /tmp, a tmpfs of its own, where the
# rejects file of standard input (stdin.rejects) goes and ends with it: mount a directory and name it with
# --rejects to keep one.
run_import() {
    local arguments status
    stack_check_env_file || return 1
    mapfile -t arguments < <(service_arguments)
    pm run --rm -i --tmpfs /tmp:rw,size=64m,mode=1777 --workdir /tmp "${arguments[@]}" \
        -e DATABASE_URL="$(stack_database_url)" "$(stack_image import)" "$@" && status=0 || status=$?
    return "$status"
}

# --- services ---------------------------------------------------------------------------------------------------

# start_service CONTAINER SERVICE METRICS_PORT [podman run arguments...]: starts one replica of SERVICE (image
# passkey/SERVICE) under the network alias SERVICE, with its /metrics and /healthz on 127.0.0.1:METRICS_PORT, and
# waits until /healthz answers 200 (the service reports SERVING: database reachable, listening, not draining).
start_service() {
    local container="$1" service="$2" port="$3" arguments tls kek=()
    shift 3
    stack_check_env_file || return 1
    mapfile -t arguments < <(service_arguments)
    stack_grpc_certificates && mapfile -t tls < <(grpc_mount_arguments "$service") && [ ${#tls[@]} -gt 0 ] ||
        return 1
    # The KEK for the services that issue sessions (none for the others).
    stack_token_kek && mapfile -t kek < <(token_kek_mount_arguments "$service") || return 1
    pm rm -f -t 10 "$container" >/dev/null 2>&1 || true
    pm run -d --name "$container" --hostname "$container" --network-alias "$service" "${arguments[@]}" "${tls[@]}" \
        "${kek[@]}" \
        --label passkey.service="$service" --label passkey.metrics-port="$port" \
        -e DATABASE_URL="$(stack_database_url)" -p "127.0.0.1:$port:9090" "$@" \
        "$(stack_image "$service")" >/dev/null || return 1
    stack_pin_bridge_address || return 1
    wait_http_ok "$container" "http://127.0.0.1:$port/healthz" 30
}

# The gRPC services that run as replicas, and where each one's metrics ports begin (see PASSKEY_METRICS_PORT_BASE).
declare -gA replica_port_offset=([challenge-service]=0 [verification-service]=10 [session-service]=20)

# replica_check SERVICE N: fails with a message unless SERVICE is a replicated service and N is 1-9.
replica_check() {
    if [ -z "${1:-}" ] || [ -z "${replica_port_offset[$1]+set}" ]; then
        echo "not a replicated service: '${1:-}' (one of ${!replica_port_offset[*]})" >&2
        return 1
    fi
    case "${2:-}" in
        [1-9]) ;;
        *) echo "$1: replica number '${2:-}' is not 1-9" >&2; return 1 ;;
    esac
}

replica_name() { replica_check "$1" "$2" && echo "$stack_name-$1-$2"; }
replica_metrics_port() { replica_check "$1" "$2" && echo $((metrics_port_base + replica_port_offset[$1] + $2)); }
replica_metrics_url() {
    local port
    port="$(replica_metrics_port "$1" "$2")" && echo "http://127.0.0.1:$port/metrics"
}
replica_health_url() {
    local port
    port="$(replica_metrics_port "$1" "$2")" && echo "http://127.0.0.1:$port/healthz"
}

# replica_start SERVICE N: starts replica N of SERVICE (replacing a stopped one of that number) and waits until it
# is SERVING on /healthz. Other replicas of SERVICE keep running: a rolling restart starts a new number, then
# stops the old one.
replica_start() {
    local name port
    name="$(replica_name "$1" "$2")" && port="$(replica_metrics_port "$1" "$2")" || return 1
    start_service "$name" "$1" "$port" --label passkey.replica="$2"
}

# replica_stop SERVICE N [SECONDS]: SIGTERM, then waits for the replica to drain and exit (SIGKILL only after
# SECONDS, default 30). Prints the exit status; the stopped container stays for its logs until it is started
# again or the stack is removed.
replica_stop() {
    local name
    name="$(replica_name "$1" "$2")" || return 1
    pm stop -t "${3:-30}" "$name" >/dev/null || return 1
    pm inspect --format '{{.State.ExitCode}}' "$name"
}

# replica_kill SERVICE N: SIGKILL, no drain; waits until the container has exited.
replica_kill() {
    local name
    name="$(replica_name "$1" "$2")" || return 1
    pm kill --signal KILL "$name" >/dev/null || return 1
    pm wait "$name" >/dev/null 2>&1 || true
}

# replicas SERVICE: the running replicas, one a line: N, container name, address on the network, metrics URL.
replicas() {
    local n name address
    replica_check "$1" 1 || return 1
    for name in $(pm ps --filter "label=$stack_label" --filter "label=passkey.service=$1" \
        --format '{{.Names}}' | sort -V); do
        n="$(pm inspect --format '{{index .Config.Labels "passkey.replica"}}' "$name")"
        address="$(pm inspect --format "{{(index .NetworkSettings.Networks \"$stack_network\").IPAddress}}" "$name")"
        echo "$n $name $address $(replica_metrics_url "$1" "$n")"
    done
}

start_challenge_service() { replica_start challenge-service 1; }
start_session_service() { replica_start session-service 1; }

# The verification replicas by their earlier names: the same as the replica_* functions for verification-service.
verification_replica_name() { replica_name verification-service "$1"; }
verification_replica_metrics_port() { replica_metrics_port verification-service "$1"; }
verification_replica_metrics_url() { replica_metrics_url verification-service "$1"; }
verification_replica_start() { replica_start verification-service "$1"; }
verification_replica_stop() { replica_stop verification-service "$@"; }
verification_replica_kill() { replica_kill verification-service "$1"; }
verification_replicas() { replicas verification-service; }

start_gateway() {
    local arguments tls
    stack_check_env_file || return 1
    mapfile -t arguments < <(service_arguments)
    stack_grpc_certificates && mapfile -t tls < <(grpc_mount_arguments gateway) && [ ${#tls[@]} -gt 0 ] || return 1
    pm rm -f -t 10 "$stack_gateway_container" >/dev/null 2>&1 || true
    pm run -d --name "$stack_gateway_container" --hostname gateway --network-alias gateway "${arguments[@]}" "${tls[@]}" \
        --label passkey.service=gateway -p "127.0.0.1:$gateway_port:8080" \
        "$(stack_image gateway)" >/dev/null || return 1
    wait_http_ok "$stack_gateway_container" "http://127.0.0.1:$gateway_port/readyz" 30
}

# stack_remove [--volumes]: removes every container of the stack (SIGTERM first, 10 s to drain), the network, and
# with --volumes the database volume, its password, the token KEK that seals the signing keys stored in it, and the
# gRPC CA and certificates.
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
        rm -rf "$stack_token_kek_dir"
        rm -rf "$stack_grpc_dir"
    fi
}
