"""Commented starter drafts per job type (W4 presets), printed by `rlark draft new`.

Pure text building; every field a user must fill is empty (never a placeholder value) and explained.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType

from rlark_tui.jobspec.draft import DRAFT_TYPES

PRESETS: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType({
    "rl": (("Actor", "Actor"), ("Rollout", "Rollout"), ("Environment", "Env")),
    "data-collection": (("Environment", "Env"),),
    "evaluation": (("Rollout", "Rollout"), ("Environment", "Env")),
    "custom": (("Worker", "Actor"),),
})
"""Role name and TaskSpec role per job type; custom has no preset, so it starts with one role to rename."""

_RUN_SCRIPTS = MappingProxyType({
    "rl": "cd /workspace/RLinf && bash examples/embodiment/run_embodiment.sh maniskill_ppo",
    "data-collection": "cd /workspace/RLinf && bash examples/embodiment/run_embodiment.sh maniskill_ppo",
    "evaluation": "cd /workspace/RLinf && python evaluations/eval_embodied_agent.py runner.task_type=embodied_eval",
    "custom": "cd /workspace && bash run.sh",
})
_DEFAULT_NAMES = MappingProxyType({"rl": "rl-training", "data-collection": "data-collection", "evaluation": "evaluation",
                  "custom": "custom-job"})


def _quoted(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def starter_draft(draft_type: str, *, name: str = "", image: str = "") -> str:
    """YAML text of a commented starter draft for `draft_type` (one of DRAFT_TYPES)."""
    if draft_type not in DRAFT_TYPES:
        raise ValueError(f"unknown job type {draft_type!r}; use one of: {', '.join(DRAFT_TYPES)}")
    roles = PRESETS[draft_type]
    header = roles[0][0]
    lines = [
        f"# rlark job draft ({draft_type}). Fill in every empty value marked REQUIRED, then check it:",
        "#   rlark draft render THIS.yaml --nodes NODES.yaml",
        "# Nodes: `kubectl get nodes.rlinf.io -A --show-labels` lists names, clusters (namespaces) and labels.",
        f"name: {_quoted(name or _DEFAULT_NAMES[draft_type])}"
        "   # Job name: lowercase letters, digits, '-'; starts with a letter",
        "# displayName: My run        # optional, shown by the console",
        f"type: {draft_type}",
        f"header: {header}   # the Header role (head: true); its selector must match exactly 1 Node",
        "roles:",
    ]
    if draft_type == "custom":
        lines.append("  # Custom has no preset roles: rename this one, add more (one role = one task).")
    for role_name, platform_role in roles:
        is_header = role_name == header
        lines += [
            f"  - name: {role_name}",
            f"    role: {platform_role}   # Actor | Rollout | Env",
            '    cluster: ""   # REQUIRED: the cluster namespace rlark-<id> of the Nodes below',
            '    selector: {kubernetes.io/hostname: ""}   # REQUIRED: one value per key; '
            + ("must match exactly 1 Node" if is_header else "replicas = number of matched Nodes"),
        ]
        if platform_role in ("Actor", "Rollout"):
            lines.append("    gpu: 0   # nvidia.com/gpu per worker (0 = none)")
        else:
            lines.append("    # devices: {rlinf.io/device: 1}   # rlinf.io/* devices per worker")
        lines += [
            f"    image: {_quoted(image)}   # REQUIRED: registry/name@sha256:<digest> (tags are mutable)",
            "    # cpu: \"16\"            # optional requests",
            "    # memory: 64Gi",
            "    # prepareScript: |     # runs on every worker before Ray starts",
            "    #   source /opt/venv/bin/activate",
            "    # env: {HF_HOME: /data/hf}",
            "    # mounts:",
            "    #   - {type: host, source: /data, target: /data}          # must exist on every matched Node",
            "    #   - {type: storage, storageClass: <class>, target: /ckpt}",
        ]
    lines += [
        "# domain: team-a      # network domain; REQUIRED when roles run in more than one cluster",
        "# sshPublicKey: ssh-ed25519 AAAA... user@host",
        "runScript: |   # REQUIRED: runs on the Header role after the Ray cluster check; put your command and config here",
        f"  {_RUN_SCRIPTS[draft_type]}",
        "# tensorboardDir: /ckpt/tb",
        "# debuggable: true   # SYS_PTRACE on every container, Ray profiling on the Header: `rlark stacks` works",
        "record:   # launch record, kept with the Job for `rlark check` (empty values are left out)",
        '  runId: ""            # e.g. ppo-7',
        '  codeRef: ""          # full commit SHA of the code the image runs',
        '  configRef: ""        # config path or checksum',
        "  progressPattern: 'Global Step:\\s*(\\d+)/(\\d+)'   # the agreed minimum progress signal (regex)",
        '  startupMarker: ""    # regex the run script prints once the workload has started (check 3)',
        '  stopCondition: ""    # when the run is to be stopped, e.g. "after global step 1000 or 12 h"',
        "  maxWaitSeconds: 1800",
        '  outputPath: ""       # checkpoint/output prefix on a storage mount, naming the run (runId)',
    ]
    return "\n".join(lines) + "\n"
