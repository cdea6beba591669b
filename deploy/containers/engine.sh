# The container engine: Debian 12's podman (rootful), set up so that it works on this kind of machine.
# Sourced, not run. ensure_podman installs what is missing and writes the engine configuration; it is idempotent.
#
# What this machine needs beyond the package defaults:
# - runc, not crun: crun 1.8 fails here with "cgroups in hybrid mode not supported" (cgroup v1 controllers with a
#   v2 hierarchy beside them). runtime = "runc" in [engine].
# - default_ulimits = [] in [containers]: the packaged default raises RLIMIT_NOFILE, which this VM does not allow
#   ("setrlimit RLIMIT_NOFILE: Operation not permitted"); containers then inherit the engine's limits.
# - netavark with aardvark-dns: bridge networks whose containers find each other by name, and a network alias
#   shared by several containers resolves to all of them (a headless Service). iptables for port publishing.
#   network_backend = "netavark" in [network] (the CNI file the package ships would otherwise be looked at).

engine_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../images/rootfs.sh
source "$engine_dir/../images/rootfs.sh"

podman_packages=(podman runc conmon netavark aardvark-dns iptables)
containers_conf=/etc/containers/containers.conf

# shellcheck source=../local/log.sh
source "$engine_dir/../local/log.sh"

engine_sudo() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

engine_install_missing() {
    local missing=() package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    engine_sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive engine_sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# conf_set FILE SECTION KEY VALUE: sets KEY = VALUE under [SECTION] of a TOML file, replacing an uncommented KEY
# there, adding the section when it is missing; leaves everything else as it is.
conf_set() {
    local file="$1" section="$2" key="$3" value="$4" updated
    engine_sudo mkdir -p "$(dirname "$file")"
    [ -f "$file" ] || engine_sudo touch "$file"
    updated="$(awk -v section="[$section]" -v key="$key" -v value="$value" '
        /^[[:space:]]*\[/ {
            header = $0; gsub(/[[:space:]]/, "", header)
            in_section = (header == section)
            print
            if (in_section && !done) { print key " = " value; done = 1 }
            next
        }
        in_section && $0 ~ "^[[:space:]]*" key "[[:space:]]*=" { next }
        { print }
        END { if (!done) { print ""; print section; print key " = " value } }' "$file")"
    if [ "$updated" != "$(cat "$file")" ]; then
        printf '%s\n' "$updated" | engine_sudo tee "$file" >/dev/null
    fi
}

ensure_podman() {
    engine_install_missing "${podman_packages[@]}"
    conf_set "$containers_conf" containers default_ulimits '[]'
    conf_set "$containers_conf" engine runtime '"runc"'
    conf_set "$containers_conf" network network_backend '"netavark"'
    if ! podman info --format '{{.Host.OCIRuntime.Name}} {{.Host.NetworkBackend}}' >/dev/null 2>&1; then
        echo "podman does not work here:" >&2
        podman info >&2 || true
        return 1
    fi
}

# Every podman call goes through this, so the runtime is runc even where containers.conf was changed back.
pm() { podman --runtime runc "$@"; }

# check_podman_networking: proves on this machine what the stack relies on, with a throwaway image built from
# the host's dash, getent and socat: containers start (rlimits, runtime), two containers sharing a network alias
# on a bridge network both resolve under it, a container reaches another by that name, and a port published on
# 127.0.0.1 is reachable from the host. Removes what it made; prints what failed.
check_podman_networking() {
    engine_install_missing socat
    local work network="passkey-engine-check" image="localhost/passkey/engine-check:latest" status=0
    work="$(mktemp -d)"
    rootfs_init "$work/root"
    rootfs_add_executable "$work/root" /usr/bin/dash /usr/bin/sh
    rootfs_add_executable "$work/root" /usr/bin/getent /usr/bin/getent
    rootfs_add_executable "$work/root" /usr/bin/socat /usr/bin/socat
    rootfs_name_service "$work/root"
    rootfs_users "$work/root" nonroot:65532:65532:/
    printf 'FROM scratch\nCOPY root/ /\nUSER 65532:65532\n' >"$work/Containerfile"
    pm build -q --no-cache -t "$image" "$work" >/dev/null || { rm -rf "$work"; echo "engine check: podman build failed" >&2; return 1; }
    rm -rf "$work"

    pm rm -f engine-check-a engine-check-b >/dev/null 2>&1 || true
    pm network rm -f "$network" >/dev/null 2>&1 || true
    pm network create "$network" >/dev/null
    local serve=(socat -U TCP-LISTEN:8000,fork,reuseaddr OPEN:/etc/hostname,rdonly)
    pm run -d --read-only --cap-drop ALL --security-opt no-new-privileges --name engine-check-a --hostname a \
        --network "$network" --network-alias engine-check -p 127.0.0.1::8000 "$image" "${serve[@]}" >/dev/null || status=1
    pm run -d --read-only --cap-drop ALL --security-opt no-new-privileges --name engine-check-b --hostname b \
        --network "$network" --network-alias engine-check "$image" "${serve[@]}" >/dev/null || status=1
    if [ $status -eq 0 ]; then
        local addresses reply port
        addresses="$(pm run --rm --network "$network" "$image" getent ahostsv4 engine-check | awk '{print $1}' | sort -u | wc -l)"
        [ "$addresses" -eq 2 ] || { echo "engine check: alias engine-check resolved to $addresses addresses, not 2" >&2; status=1; }
        reply="$(pm run --rm --network "$network" "$image" socat -T 5 -u TCP:engine-check-b:8000 STDOUT 2>&1)"
        [ "$reply" = b ] || { echo "engine check: container name engine-check-b did not answer over the bridge: $reply" >&2; status=1; }
        port="$(pm port engine-check-a 8000 | head -n 1 | sed 's/.*://')"
        reply=""
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            reply="$(socat -T 5 -u "TCP:127.0.0.1:$port" STDOUT 2>/dev/null)" && [ "$reply" = a ] && break
            sleep 0.3
        done
        [ "$reply" = a ] || { echo "engine check: published port 127.0.0.1:$port did not answer: $reply" >&2; status=1; }
    else
        echo "engine check: a container did not start" >&2
    fi
    pm rm -f -t 0 engine-check-a engine-check-b >/dev/null 2>&1 || true
    pm network rm -f "$network" >/dev/null 2>&1 || true
    pm rmi -f "$image" >/dev/null 2>&1 || true
    return $status
}
