# Makes the throwaway CA and the per-process certificates for mutual TLS between the gateway and the services
# (GRPC_TLS_*), with OpenSSL. Sourced by ./deploy/local/run, the container stack and the tests; not run.
#
# Each certificate carries the process's SPIFFE ID (URI SAN spiffe://<trust domain>/<name>) as its identity, the
# DNS SAN <name>.<trust domain> as the fallback, and localhost / 127.0.0.1 / <name> so that a client that checks
# host names (grpcurl, grpcio) can reach it too. EC P-256 keys, serverAuth + clientAuth.

grpc_identities=(gateway challenge-service verification-service session-service)

# make_grpc_certificates DIR [TRUST_DOMAIN [DAYS]]: writes DIR/ca.pem (+ ca.key) and DIR/<name>.pem + DIR/<name>.key
# for every identity, unless DIR already holds a set that is valid for at least another day.
make_grpc_certificates() {
    local dir="$1" trust_domain="${2:-passkey.internal}" days="${3:-30}"
    mkdir -p "$dir"
    if [ -f "$dir/ca.pem" ] && [ -f "$dir/trust-domain" ] && [ "$(cat "$dir/trust-domain")" = "$trust_domain" ]; then
        local fresh=1 name
        for name in "${grpc_identities[@]}"; do
            openssl x509 -checkend 86400 -noout -in "$dir/$name.pem" >/dev/null 2>&1 || fresh=0
        done
        [ "$fresh" = 1 ] && return 0
    fi
    (
        umask 077
        openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout "$dir/ca.key" \
            -out "$dir/ca.pem" -days "$days" -subj "/CN=passkey local gRPC CA" \
            -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
        for name in "${grpc_identities[@]}"; do
            make_grpc_leaf "$dir" "$name" "$trust_domain" "$days"
        done
        echo "$trust_domain" > "$dir/trust-domain"
    )
    chmod 644 "$dir"/*.pem
}

# make_grpc_leaf DIR NAME TRUST_DOMAIN DAYS [CA_PREFIX]: one certificate for NAME, issued by DIR/<CA_PREFIX>.pem
# (default ca).
make_grpc_leaf() {
    local dir="$1" name="$2" trust_domain="$3" days="$4" ca="${5:-ca}"
    openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout "$dir/$name.key" \
        -out "$dir/$name.csr" -subj "/CN=$name" 2>/dev/null
    printf '%s\n' \
        "subjectAltName=URI:spiffe://$trust_domain/$name,DNS:$name.$trust_domain,DNS:$name,DNS:localhost,IP:127.0.0.1" \
        "extendedKeyUsage=serverAuth,clientAuth" "keyUsage=critical,digitalSignature" \
        "basicConstraints=critical,CA:FALSE" > "$dir/$name.ext"
    openssl x509 -req -in "$dir/$name.csr" -CA "$dir/$ca.pem" -CAkey "$dir/$ca.key" -CAcreateserial \
        -out "$dir/$name.pem" -days "$days" -extfile "$dir/$name.ext" 2>/dev/null
    rm -f "$dir/$name.csr" "$dir/$name.ext"
}

# grpc_tls_environment DIR NAME: prints the GRPC_TLS_* lines for NAME's files in DIR.
grpc_tls_environment() {
    local dir="$1" name="$2"
    printf 'GRPC_TLS_CERTIFICATE=%s\nGRPC_TLS_KEY=%s\nGRPC_TLS_CA=%s\nGRPC_TRUST_DOMAIN=%s\n' \
        "$dir/$name.pem" "$dir/$name.key" "$dir/ca.pem" "$(cat "$dir/trust-domain")"
}
