# Assembling minimal root file systems for FROM-scratch images out of files installed on this (Debian 12) host.
# Sourced, not run. Every function takes the root directory first. The layout is Debian's merged /usr: files land at
# their canonical path under usr/, and /bin, /sbin, /lib and /lib64 are symlinks, as on the host.

# rootfs_init ROOT: an empty tree with the merged-/usr symlinks and the directories every image has.
rootfs_init() {
    local root="$1"
    rm -rf "$root"
    mkdir -p "$root"/usr/bin "$root"/usr/sbin "$root"/usr/lib "$root"/usr/lib64 "$root"/etc
    ln -s usr/bin "$root/bin"
    ln -s usr/sbin "$root/sbin"
    ln -s usr/lib "$root/lib"
    ln -s usr/lib64 "$root/lib64"
}

# rootfs_copy ROOT SOURCE [DEST]: copies SOURCE, following symlinks, to DEST inside ROOT (default: SOURCE's own path
# with its directory made canonical, so /lib/x86_64-linux-gnu/libc.so.6 lands in usr/lib/x86_64-linux-gnu).
rootfs_copy() {
    local root="$1" source="$2" dest="${3:-}"
    if [ -z "$dest" ]; then
        dest="$(readlink -f "$(dirname "$source")")/$(basename "$source")"
    fi
    mkdir -p "$root$(dirname "$dest")"
    cp -L --preserve=mode "$source" "$root$dest"
}

# rootfs_libraries FILE...: the shared libraries (and the dynamic loader) that the dynamic linker loads for each
# FILE, one path a line, sorted. Fails when one cannot be found.
rootfs_libraries() {
    local file output
    for file in "$@"; do
        output="$(ldd "$file" 2>&1)" || {
            # ldd exits non-zero for a static executable or a file that is not ELF: nothing to copy then.
            case "$output" in
                *"not a dynamic executable"* | *"statically linked"*) continue ;;
                *) echo "ldd $file: $output" >&2; return 1 ;;
            esac
        }
        if grep -q "not found" <<<"$output"; then
            echo "ldd $file: a library is missing:" >&2
            grep "not found" <<<"$output" >&2
            return 1
        fi
        awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$output"
    done | LC_ALL=C sort -u
}

# rootfs_add_executable ROOT SOURCE DEST: copies an ELF executable or library to DEST and every shared library it
# loads to its canonical path.
rootfs_add_executable() {
    local root="$1" source="$2" dest="$3" library libraries
    rootfs_copy "$root" "$source" "$dest"
    libraries="$(rootfs_libraries "$source")" || return 1
    while IFS= read -r library; do
        if [ -n "$library" ]; then rootfs_copy "$root" "$library"; fi
    done <<<"$libraries"
}

# rootfs_users ROOT LINE...: /etc/passwd and /etc/group with root and the given users, each as
# NAME:UID:GID:HOME; every user gets a group of its own name and GID.
rootfs_users() {
    local root="$1" entry name uid gid home
    shift
    printf 'root:x:0:0:root:/root:/sbin/nologin\n' >"$root/etc/passwd"
    printf 'root:x:0:\n' >"$root/etc/group"
    for entry in "$@"; do
        IFS=: read -r name uid gid home <<<"$entry"
        printf '%s:x:%s:%s:%s:%s:/sbin/nologin\n' "$name" "$uid" "$gid" "$name" "$home" >>"$root/etc/passwd"
        printf '%s:x:%s:\n' "$name" "$gid" >>"$root/etc/group"
    done
}

# rootfs_name_service ROOT: nsswitch.conf for glibc's built-in files and dns sources (glibc 2.34+ has both in
# libc.so.6; no libnss_*.so is needed), and the CA bundle from Debian's ca-certificates.
rootfs_name_service() {
    local root="$1"
    printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
    if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
        rootfs_copy "$root" /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
    fi
}

# rootfs_normalize ROOT EPOCH: the same modes and times whatever the host's umask and clock: directories 0755,
# executables 0755, other files 0644, every mtime EPOCH.
rootfs_normalize() {
    local root="$1" epoch="$2"
    find "$root" -type d -exec chmod 0755 {} +
    find "$root" -type f -perm /111 -exec chmod 0755 {} +
    find "$root" -type f ! -perm /111 -exec chmod 0644 {} +
    find "$root" -exec touch -h -d "@$epoch" {} +
}
