#!/usr/bin/env bash
# Sandbox copy of the platform's Ray head start sequence (rlark-platform.md §2.3/§2.4), same log lines.
# Sandbox differences: ports, temp dir and name resolution come from RLARK_SANDBOX_* variables; the Ray node IP and
# the dashboard host are the Pod IP (RLARK_NODE_IP), a loopback address of the sandbox's Pod network.
set -e

. "$(dirname "$0")/pod_common.sh"
CHECK_TIMEOUT="${RLARK_SANDBOX_CHECK_TIMEOUT:-900}"

if [ -n "${RLARK_DOMAIN:-}" ]; then
  DOMAIN_HOST="${POD_NAME}.rlark-domain"
  DOMAIN_IP=""
  for attempt in $(seq 1 120); do
    DOMAIN_IP="$(resolve_host "${DOMAIN_HOST}")"
    if [ -n "${DOMAIN_IP}" ]; then
      break
    fi
    echo "Waiting for domain IP from /etc/hosts... (attempt ${attempt})"
    sleep 1
  done
  if [ -n "${DOMAIN_IP}" ]; then
    echo "Resolved domain IP: ${DOMAIN_IP} (${DOMAIN_HOST})"
    RLARK_NODE_IP="${DOMAIN_IP}"
  fi
fi

stop_cluster() {
  echo "Stopping Ray cluster..."
}
trap stop_cluster EXIT

take_ray_start_turn
ray start --head \
  --node-ip-address="${RLARK_NODE_IP}" \
  --port="${RLARK_RAY_PORT}" \
  --ray-client-server-port="${RLARK_SANDBOX_CLIENT_PORT}" \
  --dashboard-host="${RLARK_NODE_IP}" \
  --dashboard-port="${RLARK_SANDBOX_DASHBOARD_PORT}" \
  --dashboard-agent-listen-port="${RLARK_SANDBOX_AGENT_PORT}" \
  --min-worker-port="${RLARK_SANDBOX_MIN_WORKER_PORT}" \
  --max-worker-port="${RLARK_SANDBOX_MAX_WORKER_PORT}" \
  --num-cpus="${RLARK_SANDBOX_NUM_CPUS:-1}" \
  --object-store-memory="${RLARK_SANDBOX_OBJECT_STORE_BYTES:-80000000}" \
  --temp-dir="${RAY_TEMP_DIR}" \
  --disable-usage-stats --log-color=false 9>&-
end_ray_start_turn
export RAY_ADDRESS="${RLARK_NODE_IP}:${RLARK_RAY_PORT}"

echo "Waiting for ${RLARK_TOTAL_NODES:-1} nodes to join the Ray cluster..."
if python "$(dirname "$0")/ray_check.py" --nodes "${RLARK_TOTAL_NODES:-1}" --timeout "${CHECK_TIMEOUT}"; then
  echo "Ray cluster check passed."
else
  echo "Ray cluster check failed."
  echo "Warning: Ray cluster check failed, proceeding anyway."
fi

echo "Ray cluster is ready. Printing cluster information:"
echo "=================================================="
ray status --address="${RAY_ADDRESS}" || true
echo "=================================================="

if [ -n "${RLARK_RUN_SCRIPT:-}" ]; then
  echo "Executing run script..."
  set +e
  bash -c "${RLARK_RUN_SCRIPT}"
  RUN_EXIT=$?
  set -e
  exit "${RUN_EXIT}"
fi

echo "No run script provided, keeping cluster alive."
while true; do
  sleep 3600
done
