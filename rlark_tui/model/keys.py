"""Label and annotation keys of the RLark platform, plus the keys rlark-tui writes on a Job.

Platform keys are facts of rlark-platform.md; the `rlark.io/launch-record` and `rlark.io/deployment-plan` keys are ours.
"""

GPU_RESOURCE = "nvidia.com/gpu"
DEVICE_PREFIX = "rlinf.io/"

JOB_LABEL = "rlinf.io/job"
"""On every Task: the owning Job's name."""

TASK_NAME_LABEL = "rlark.io/task-name"
"""On every Pod CR: the name of its Task."""

CLUSTER_ID_LABEL = "rlark.io/cluster-id"
"""On Node CRs only (never on real nodes): the cluster namespace `rlark-<id>`."""

HOSTNAME_LABEL = "kubernetes.io/hostname"

RAY_ROLE_ANNOTATION = "rlark.io/ray-role"
RAY_TOTAL_NODES_ANNOTATION = "rlark.io/ray-total-nodes"
RAY_RANK_START_ANNOTATION = "rlark.io/ray-node-rank-start"
RAY_HEAD_TASK_ANNOTATION = "rlark.io/ray-head-task-name"

DISPLAY_NAME_ANNOTATION = "rlark.io/display-name"
RESTARTED_AT_ANNOTATION = "rlark.io/restarted-at"
CHECK_SUMMARY_ANNOTATION = "rlark.io/check-summary"
"""rlark's hand-over on the Job: a saved run check's time, recorder, results and decision (model/check_summary.py)."""
"""Set by the console's Restart and Edit-and-restart (an ISO time) together with `spec.stopped: false`."""
GPU_MODEL_ANNOTATION = "rlark.io/gpu-model"
DEVICE_MODEL_ANNOTATION = "rlark.io/device-model"
MODEL_ANNOTATION = "rlark.io/model"
"""The console reads these three as annotations, else as labels of the same name (kcp keeps them on the Node CR)."""
DEVICE_RESOURCE = "rlinf.io/device"
"""The console's device resources: `rlinf.io/device` and `rlinf.io/device-*`."""

LAUNCH_RECORD_ANNOTATION = "rlark.io/launch-record"
"""JSON object: the draft's `record` (runId, codeRef, configRef, expectedNumNodes, progressPattern, ...)."""

DEPLOYMENT_PLAN_ANNOTATION = "rlark.io/deployment-plan"
"""JSON object: per role the planned task, cluster namespace, matched Node names, rank start and resources."""

CLUSTER_NAMESPACE_PREFIX = "rlark-"
WORKLOAD_NAMESPACE = "rlark-system"
MAIN_CONTAINER = "main"
PTRACE_CAPABILITY = "SYS_PTRACE"
"""The capability py-spy needs in a container to read a rank's stack (`rlark stacks` when profiling is off)."""
PROFILING_ENV = "RAY_DASHBOARD_ENABLE_PROFILING"
"""Set to 1 on the Header role, Ray's dashboard answers `/worker/traceback` (off by default, for security)."""
DEFAULT_NAMESPACE = "default"
"""The namespace a kubeconfig context without one means (rlark-server's Secret and Leases are looked up there)."""
