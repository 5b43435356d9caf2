#!/usr/bin/env bash
# Sandbox copy of the platform's Ray worker start sequence (rlark-platform.md §2.3/§2.4), same log lines.
# Sandbox differences: ports, temp dir and name resolution come from RLARK_SANDBOX_* variables; the Ray node IP is
# the Pod IP (RLARK_SANDBOX_POD_IP), a loopback address of the sandbox's Pod network.
set -e

. "$(dirname "$0")/pod_common.sh"
HEAD_WAIT_ATTEMPTS="${RLARK_SANDBOX_HEAD_WAIT_ATTEMPTS:-120}"

echo "Connecting to Ray head at ${RLARK_HEAD_ADDRESS}:${RLARK_RAY_PORT}..."
HEAD_IP=""
REACHABLE=0
for attempt in $(seq 1 "${HEAD_WAIT_ATTEMPTS}"); do
  HEAD_IP="$(resolve_host "${RLARK_HEAD_ADDRESS}")"
  # Sandbox: beyond the TCP probe, wait until the head's Ray node is registered (its local dashboard says so),
  # since several Ray nodes start at once on one host and a worker that comes too early fails `ray start`.
  if [ -n "${HEAD_IP}" ] && timeout 1 bash -c "exec 3<>/dev/tcp/${HEAD_IP}/${RLARK_RAY_PORT}" 2>/dev/null \
      && python "$(dirname "$0")/ray_check.py" --head-registered "${HEAD_IP}:${RLARK_SANDBOX_HEAD_DASHBOARD_PORT}"; then
    echo "HEAD IP: ${HEAD_IP}"
    echo "Head is reachable at ${HEAD_IP}:${RLARK_RAY_PORT}"
    REACHABLE=1
    break
  fi
  echo "Waiting for head to be reachable at ${RLARK_HEAD_ADDRESS}:${RLARK_RAY_PORT}... (attempt ${attempt})"
  sleep 1
done
if [ "${REACHABLE}" != 1 ]; then
  echo "Error: Ray head at ${RLARK_HEAD_ADDRESS}:${RLARK_RAY_PORT} is not reachable."
  echo "Sandbox: waited ${HEAD_WAIT_ATTEMPTS} attempts, 1 s apart, for ${RLARK_HEAD_ADDRESS} to resolve" \
    "in the hosts file ${RLARK_SANDBOX_HOSTS:-(none)}, its GCS port to accept connections and its dashboard" \
    "(port ${RLARK_SANDBOX_HEAD_DASHBOARD_PORT}) to list the head node ALIVE${HEAD_IP:+; resolved to ${HEAD_IP}}"
  exit 1
fi

take_ray_start_turn
set +e
ray start --address="${HEAD_IP}:${RLARK_RAY_PORT}" \
  --node-ip-address="${RLARK_SANDBOX_POD_IP}" \
  --dashboard-agent-listen-port="${RLARK_SANDBOX_AGENT_PORT}" \
  --min-worker-port="${RLARK_SANDBOX_MIN_WORKER_PORT}" \
  --max-worker-port="${RLARK_SANDBOX_MAX_WORKER_PORT}" \
  --num-cpus="${RLARK_SANDBOX_NUM_CPUS:-1}" \
  --object-store-memory="${RLARK_SANDBOX_OBJECT_STORE_BYTES:-80000000}" \
  --temp-dir="${RAY_TEMP_DIR}" \
  --disable-usage-stats --log-color=false \
  --block 9>&- &
RAY_PID=$!
# Sandbox: the next node's turn to start comes once this one is registered (or its `ray start` ended).
python "$(dirname "$0")/ray_check.py" --node-registered "${HEAD_IP}:${RLARK_SANDBOX_HEAD_DASHBOARD_PORT}" \
  --node-ip "${RLARK_SANDBOX_POD_IP}" --pid "${RAY_PID}" --timeout "${RLARK_SANDBOX_RAY_START_TURN:-300}" 9>&-
end_ray_start_turn
wait "${RAY_PID}"
WORKER_EXIT=$?
set -e
echo "Ray worker process exited with code ${WORKER_EXIT}"
echo "Stopping Ray worker..."
exit 0
