"""Records run-check evidence of fault jobs once, from a live sandbox with real Ray, into tests/checks/data/.

Run by hand when the sandbox's behaviour changes: `python tests/checks/record_faults.py` (about 3 minutes).
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
import time
from pathlib import Path

from rlark_sandbox import Sandbox, seed
from rlark_sandbox.agent import AgentSettings
from rlark_tui.checks import evaluate
from rlark_tui.checks.evidence import evidence_to_dict
from rlark_tui.checks.gather import gather
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.kinds import JOBS, NODES
from rlark_tui.flow.actions import Actions
from rlark_tui.jobspec.draft import load_draft
from rlark_tui.jobspec.render import render_job

DATA = Path(__file__).resolve().parent / "data"
SETTINGS = AgentSettings(cluster_check_timeout=20.0, backoff_base=2.0, head_wait_attempts=40)
NO_PROGRESS = "echo 'run_id: {run}'; echo 'code_ref: {code}'; echo 'loading model...'; sleep 3600"


def _draft(name: str, output: Path, image: str | None = None, worker_image: str | None = None,
           worker_prepare: str | None = None, run_script: str | None = None) -> dict:
    draft = seed.demo_draft(str(output / name))
    draft["name"] = name
    draft["roles"] = [copy.deepcopy(r) for r in draft["roles"] if r["name"] != "env"]
    run_id = f"{name}-001"
    draft["runScript"] = (run_script or draft["runScript"]).replace(seed.DEMO_RUN_ID, run_id).format(
        run=run_id, code=seed.DEMO_CODE_REF).replace("--steps 40", "--steps 6")
    draft["record"] = dict(draft["record"], runId=run_id, expectedNumNodes=2)
    for role in draft["roles"]:
        if image:
            role["image"] = image
        if role["name"] == "rollout":
            if worker_image:
                role["image"] = worker_image
            if worker_prepare:
                role["prepareScript"] = worker_prepare
    return draft


def _wait(access: ClusterAccess, name: str, until, limit: float):
    """Gather until `until(report)` holds or `limit` seconds pass; the last evidence."""
    end = time.monotonic() + limit
    while True:
        evidence = gather(access, name)
        report = evaluate(evidence)
        print(name, [row.result for row in report.rows], flush=True)
        if until(report) or time.monotonic() > end:
            return evidence
        time.sleep(3)


def main() -> int:
    DATA.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rlark-record-"))
    tag = seed.DEMO_IMAGE.split("@")[0] + ":v0.9"
    digest = seed.DEMO_IMAGE.split("@")[1]
    cases = {
        "tag-image": (_draft("tag-image", work / "out", image=tag),
                      lambda r: r.row(5).result != "pending", 150),
        "worker-prepare-exit": (_draft("worker-prepare-exit", work / "out",
                                       worker_prepare="echo 'installing deps'; exit 1"),
                                lambda r: r.row(2).result == "fail", 90),
        "no-progress": (_draft("no-progress", work / "out", run_script=NO_PROGRESS),
                        lambda r: r.row(4).result == "pass", 90),
        "no-ray": (_draft("no-ray", work / "out", image=f"registry.rlark.local/rlinf/rlinf-no-ray@{digest}"),
                   lambda r: r.row(3).result == "fail", 90),
        "unreachable-head": (_draft("unreachable-head", work / "out", worker_image=(
            f"registry.rlark.local/rlinf/rlinf-unreachable-head@{digest}")),
            lambda r: r.row(3).result == "fail", 120),
    }
    only = set(sys.argv[1:]) or set(cases)
    sandbox = Sandbox(work / "sandbox", seed="scale:0:0", agent_settings=SETTINGS).start()
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    try:
        for name, (draft, until, limit) in cases.items():
            if name not in only:
                continue
            loaded, findings = load_draft(draft)
            assert not [f for f in findings if f.level == "error"], findings
            Actions(access, state_dir=work / "state").submit(render_job(loaded, access.list(NODES).items))
            evidence = _wait(access, name, until, limit)
            (DATA / f"{name}.json").write_text(json.dumps(evidence_to_dict(evidence), indent=1,
                                                          ensure_ascii=False) + "\n")
            access.delete(JOBS, name)
            time.sleep(5)
    finally:
        access.close()
        sandbox.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
