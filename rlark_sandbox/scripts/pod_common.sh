# Shared first steps of the sandbox's head and worker start sequences (rlark-platform.md §2.3/§2.4):
# rank, SSH key, prepare script, Ray CLI check. Sourced by ray_head.sh and ray_worker.sh.

RAY_TEMP_DIR="${RAY_TEMP_DIR:-/tmp/ray}"
RLARK_RAY_PORT="${RLARK_RAY_PORT:-6379}"

RLINF_NODE_RANK=$(( ${RLARK_NODE_RANK_START:-0} + ${POD_NAME##*-} ))
export RLINF_NODE_RANK
echo "RLINF_NODE_RANK: ${RLINF_NODE_RANK}"

if [ -n "${RLARK_SSH_PUBLIC_KEY:-}" ]; then
  mkdir -p "${HOME}/.ssh"
  printf '%s\n' "${RLARK_SSH_PUBLIC_KEY}" >> "${HOME}/.ssh/authorized_keys"
  chmod 600 "${HOME}/.ssh/authorized_keys"
  echo "SSH public key injected into authorized_keys"
fi

if [ -n "${RLARK_PREPARE_SCRIPT:-}" ]; then
  echo "Executing prepare script..."
  bash -c "${RLARK_PREPARE_SCRIPT}"
fi

if ! command -v ray >/dev/null 2>&1; then
  echo "Error: Ray CLI is not found. Please ensure Ray is installed."
  exit 1
fi

resolve_host() {
  awk -v name="$1" '$2 == name { print $1; exit }' "${RLARK_SANDBOX_HOSTS:-/dev/null}" 2>/dev/null
}

# Sandbox: every Ray node of the sandbox runs on this one host, and Ray gives a starting raylet 30 s to register
# with the GCS (ray/_private/node.py: "The current node timed out during startup"), which several nodes starting
# at once on a loaded 2-core host can miss. So the `ray start`s of the sandbox's nodes take turns, those of other
# Jobs too (a restarting Header's node beside another Job's start): each holds RLARK_SANDBOX_RAY_START_LOCK (one
# per sandbox) until its node is registered, and waits at most
# RLARK_SANDBOX_RAY_START_TURN seconds for its turn. Fd 9 holds the lock; pass `9>&-` to what must not keep it.
take_ray_start_turn() {
  [ -n "${RLARK_SANDBOX_RAY_START_LOCK:-}" ] || return 0
  exec 9>>"${RLARK_SANDBOX_RAY_START_LOCK}"
  if ! flock -w "${RLARK_SANDBOX_RAY_START_TURN:-300}" 9; then
    echo "Sandbox: another Ray node of this Job was still starting after ${RLARK_SANDBOX_RAY_START_TURN:-300} s" \
      "(lock ${RLARK_SANDBOX_RAY_START_LOCK}); starting anyway"
  fi
}

end_ray_start_turn() {
  [ -n "${RLARK_SANDBOX_RAY_START_LOCK:-}" ] || return 0
  flock -u 9 2>/dev/null || true
  exec 9>&-
}
