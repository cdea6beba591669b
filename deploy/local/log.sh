# The deploy scripts' one progress line: "==> message" on stderr. Sourced by deploy/local/common.sh,
# deploy/containers/engine.sh and deploy/containers/lib.sh.
log() { printf '%s\n' "==> $*" >&2; }
