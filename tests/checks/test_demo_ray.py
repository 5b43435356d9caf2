"""End to end with real Ray: the sandbox's seeded demo-ppo job passes the run check within its max wait."""

from __future__ import annotations

import json
import re
import time

import pytest

from rlark_tui import cli
from rlark_tui.checks import evaluate
from rlark_tui.checks.gather import gather
from rlark_tui.cluster import ClusterAccess

JOB = "demo-ppo"
WAIT = 300.0


@pytest.mark.ray
def test_demo_ppo_passes_all_six_within_its_wait(sandbox, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path / "state"))
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    try:
        deadline = time.monotonic() + WAIT
        while True:
            evidence = gather(access, JOB)
            if all(row.result != "pending" for row in evaluate(evidence).rows[:5]) or time.monotonic() > deadline:
                break
            time.sleep(3)
    finally:
        access.close()
    code = cli.main(["--kubeconfig", str(sandbox.kubeconfig), "--context", sandbox.context, "check", JOB,
                     "--format", "json", "--decision", "continue", "--recorder", "me"])
    out, err = capsys.readouterr()
    document = json.loads(out)
    by_id = {c["id"]: c for c in document["checks"]}
    results = [c["result"] for c in document["checks"]]
    if _ray_start_timed_out(evaluate(evidence)):
        pytest.xfail("the sandbox's Ray could not start in time on this loaded machine (Ray: 'The current node "
                     "timed out during startup'); the check rightly failed it: " + "; ".join(by_id[2]["notes"]))
    assert results[1:5] == ["pass"] * 4, [c["notes"] for c in document["checks"]]
    ranks = sorted(int(m.group(1)) for e in by_id[3]["evidence"] if e["kind"] == "log"
                   for m in [re.fullmatch(r"RLINF_NODE_RANK: (\d+)", e["value"])] if m)
    assert ranks == [0, 1, 2]
    assert any(e["kind"] == "ray" and e["value"] == "3" for e in by_id[3]["evidence"])
    assert any(e["kind"] == "log" and "demo-ppo-001" in e["value"] for e in by_id[4]["evidence"])
    files = [e for e in by_id[5]["evidence"] if e["kind"] == "file"]
    assert files and all(e["size"] > 0 and e["sha256"] for e in files)
    assert "record saved: " in err
    assert any(n.startswith("outputs read in Pod demo-ppo-actor-0 (exec") for n in by_id[5]["notes"])
    assert results == ["pass"] * 6
    assert code == 0
    assert document["earliestFailingStage"] is None
    assert document["conclusion"].startswith("This run was checked at")
    assert any(e["kind"] == "container" and e["path"] == "imageID" for e in by_id[4]["evidence"])

    undecided = cli.main(["--kubeconfig", str(sandbox.kubeconfig), "--context", sandbox.context, "check", JOB,
                          "--format", "json"])
    again = json.loads(capsys.readouterr().out)
    assert undecided == 3 and [c["result"] for c in again["checks"]] == ["pass"] * 5 + ["pending"]
    assert any("decision not recorded" in note for note in again["checks"][5]["notes"])



def _ray_start_timed_out(report) -> bool:
    """Whether the only failures are restarts and timeouts from Ray's own start-up timeout (a loaded machine)."""
    fails = [f.message for row in report.rows[1:5] for f in row.findings if f.result == "fail"]
    timed_out = any(item.kind == "log" and "timed out during startup" in item.value
                    for row in report.rows[1:3] for item in row.evidence)
    return timed_out and bool(fails) and all("restarted" in m or "timeout error in the log" in m for m in fails)
