"""`rlark checkpoints` (issue 35 item 3): the location from the resolved config RLinf prints (both runner
families), each global_step_<N> complete or what it misses by rlinf-runtime.md §3.4 step 1, read in a sandbox
Pod with the fixed read-only list-files (so --readonly allows it)."""

from __future__ import annotations

import json
import time

import pytest

from rlark_tui.checks.probe import parse_listing
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.flow.actions import Actions
from rlark_tui.model.storage import human_size, parse_page
from rlark_tui.model.timefmt import parse_time
from rlark_tui.telemetry.checkpoints import checkpoints, location, table_rows, to_json
from tests.checks import fixtures as fx
from tests.clirun import cli_runner

NAME = "ckpt-list"


def embodied(log_path: str, **actor) -> dict:
    return {"cluster": {"num_nodes": 1}, "runner": {"task_type": "embodied",
            "logger": {"log_path": log_path, "experiment_name": "ppo"}}, "actor": actor}


def test_location_of_both_runner_families():
    assert location(embodied("/out/run-1")).path == "/out/run-1/ppo/checkpoints"
    reasoning = location({"runner": {"task_type": "reasoning_grpo", "output_dir": "/data/out/",
                                     "experiment_name": "math"}})
    assert (reasoning.path, reasoning.family) == ("/data/out/math/checkpoints", "reasoning")
    for bad in ({}, embodied("relative/path"), {"runner": {"logger": {"log_path": "/o", "experiment_name": ".."}}},
                {"runner": {"logger": {"log_path": "/o", "experiment_name": 5}}}, {"runner": "x"}):
        assert location(bad) is None
    # a location that would forge the lines after `location: …`, read as another path, or is past PATH_MAX
    for bad in (embodied("/o\n3 checkpoint(s), latest complete: global_step_999"), embodied("/o/\u202eptth"),
                embodied("/o/a\u200bb"), embodied("/o\tx"), embodied("/" + "a" * 5000)):
        assert location(bad) is None
    assert location(embodied("/o/ü x")).path == "/o/ü x/ppo/checkpoints"
    # an object key with a line break (a storage listing is JSON) forged a line under the tab's 'incomplete:'
    where = location(embodied("/o"))
    forged = "actor/x\n3 checkpoint(s), latest complete: global_step_999"
    [found] = checkpoints(where, [(f"/o/ppo/checkpoints/global_step_5/{forged}", 0, 1.0)])
    assert "\n" not in " ".join(found.missing) and "actor/x\\n3 checkpoint(s)" in found.missing[0]


def test_complete_incomplete_megatron_and_reasoning_trees():
    where = location(embodied("/o"))
    base = "/o/ppo/checkpoints"
    files = [(f"{base}/global_step_10/actor/dcp_checkpoint/__0_0.distcp", 10, 1.0),
             (f"{base}/global_step_10/actor/dcp_checkpoint/.metadata", 5, 2.0),
             (f"{base}/global_step_10/actor/model_state_dict/full_weights.pt", 10, 3.0),
             (f"{base}/global_step_20/actor/dcp_checkpoint/__0_0.distcp", 10, 4.0),
             (f"{base}/global_step_20/actor/model_state_dict/full_weights.pt", 0, 5.0),
             (f"{base}/global_step_x/actor/a", 1, 1.0), (f"{base}/stray.txt", 1, 1.0), ("/elsewhere/f", 1, 1.0)]
    found = checkpoints(where, files)
    assert [(c.name, c.step, c.bytes, c.at, c.complete) for c in found] == [
        ("global_step_10", 10, 25, 3.0, True), ("global_step_20", 20, 10, 5.0, False)]
    assert found[1].missing == ("actor/model_state_dict/full_weights.pt (empty)", "actor/dcp_checkpoint/.metadata",
                                "actor/model_state_dict/full_weights.pt")
    assert to_json("j", where, found)["latest_complete"] == "global_step_10"
    megatron = checkpoints(where, [(f"{base}/global_step_5/actor/iter_0000005/mp_rank_00/model_optim_rng.pt", 9, 1.0)])
    assert megatron[0].missing == ("actor/latest_checkpointed_iteration.txt",)
    reasoning = location({"runner": {"task_type": "reasoning", "output_dir": "/r", "experiment_name": "m"}})
    tree = checkpoints(reasoning, [("/r/m/checkpoints/global_step_3/actor/dcp_checkpoint/a.distcp", 1, 1.0),
                                   ("/r/m/checkpoints/global_step_3/actor/dcp_checkpoint/.metadata", 1, 1.0),
                                   ("/r/m/checkpoints/global_step_3/actor/model_state_dict/full_weights.pt", 1, 1.0)])
    assert tree[0].missing == ("data/data.pt",)
    no_full = location(embodied("/o", fsdp_config={"save_full_model_weights": False}))
    assert checkpoints(no_full, files[:2])[0].complete


def test_an_object_time_past_the_calendar_in_utc_leaves_that_object_out():
    # a gateway's listing dated 9999-12-31T23:59:59-14:00 (year 10000 in UTC) or 0001-01-01T00:00:00+14:00 (year 0)
    # parsed, then raised ValueError in the TIME cell: `rlark checkpoints` and the Checkpoints tab ended there
    where = location(embodied("/o"))
    key = "global_step_5/actor/dcp_checkpoint/"
    page = parse_page({"objects": [{"key": f"ppo/checkpoints/{key}a.distcp", "size": 9, "last_modified": late}
                                   for late in ("9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00")]
                       + [{"key": f"ppo/checkpoints/{key}.metadata", "size": 9,
                           "last_modified": "9999-12-31T09:59:59+14:00"}]}, "ppo/")
    files = [(f"/o/{e.key}", e.size or 0, at.timestamp()) for e in page.entries if (at := parse_time(e.modified))]
    assert [path.rsplit("/", 1)[-1] for path, _, _ in files] == [".metadata"]
    [found] = checkpoints(where, files)
    assert table_rows([found])[0][3] == "9999-12-30T19:59:59Z"
    assert parse_time("2026-12-06T08:00:00+08:00") == parse_time("2026-12-06T00:00:00Z")


def _job(out: str) -> dict:
    job = fx.unschedulable_job(NAME)
    task = job["spec"]["tasks"][0]
    task["nodeSelector"] = {"kubernetes.io/hostname": "gpu-a3"}
    task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["resources"] = {}
    base = f"{out}/ppo/checkpoints"
    config = json.dumps(embodied(out), indent=2).replace("\n", "\\n")
    steps = " ".join(str(s) for s in (10, 20, 30))
    task["prepareScript"] = (
        f"for s in {steps}; do d={base}/global_step_$s/actor; mkdir -p $d/dcp_checkpoint $d/model_state_dict && "
        f"printf w > $d/dcp_checkpoint/__0_0.distcp && printf m > $d/dcp_checkpoint/.metadata && "
        f"printf f > $d/model_state_dict/full_weights.pt; done && rm {base}/global_step_30/actor/dcp_checkpoint/.metadata"
        f" && printf '{config}\\n' && sleep 120")
    return job


@pytest.fixture
def listed(sandbox, tmp_path):
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    Actions(access, state_dir=tmp_path / "state").submit(_job(str(tmp_path / "out")))
    try:
        yield tmp_path / "out"
    finally:
        access.delete(JOBS, NAME)
        access.close()


def test_checkpoints_listed_in_the_pod_with_the_incomplete_step_marked(listed, sandbox, capsys):
    rlark = cli_runner(sandbox.kubeconfig, capsys)
    deadline = time.monotonic() + 60
    while True:
        result = rlark("--readonly", "checkpoints", NAME, "-o", "json")
        if result.code == 0 and len(json.loads(result.out)["checkpoints"]) == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert result.code == 0, result.err
    shape = json.loads(result.out)
    assert shape["location"] == f"{listed}/ppo/checkpoints" and shape["latest_complete"] == "global_step_20"
    assert [(c["name"], c["complete"], c["missing"]) for c in shape["checkpoints"]] == [
        ("global_step_10", True, []), ("global_step_20", True, []),
        ("global_step_30", False, ["actor/dcp_checkpoint/.metadata"])]
    text = rlark("checkpoints", NAME)
    assert text.code == 0 and "complete (latest)" in text.out
    assert "incomplete: missing actor/dcp_checkpoint/.metadata" in text.out


def test_where_the_checkpoints_were_listed_is_one_line():
    """Issue 33, a fourteenth round: the location line of `rlark checkpoints` and the Checkpoints tab ends with where
    the listing was read, 'in Pod NAME' (a Pod CR's podName, the data plane's text) or 'in object storage
    CLASS/CLUSTER' (a mount the Job's author wrote), and a line break there forged a line such as '3
    checkpoint(s), latest complete: global_step_999' under it. It is one line."""
    from rlark_tui.telemetry.checkpoints import CheckpointRead, Location

    where = Location("/ckpt/run/checkpoints", "embodied", False)
    forged = "x\n3 checkpoint(s), latest complete: global_step_999"
    for read in (CheckpointRead("demo", where, forged, ()), CheckpointRead("demo", where, "p", (), storage=forged)):
        assert "\n" not in read.listed_in and read.listed_in.endswith("x\\n3 checkpoint(s), latest complete: "
                                                                      "global_step_999")


def test_a_listed_size_or_time_that_is_no_number_leaves_its_file_out():
    """Issue 33, round H33, a hostile Pod (the Job's image answers the fixed listing's `find`): a size of 4,000
    digits was read by int() and raised OverflowError in the SIZE cell, so `rlark checkpoints`, rlark resume and the
    Checkpoints tab ended there; a size of '-5' or '٣' and a time of 'nan' were read as numbers too. A listing's
    numbers are read as every number from the cluster is (text.parse: ASCII digits, bounded), and a file whose are
    not is left out."""
    base = "/o/ppo/checkpoints/global_step_10/actor"
    data = b"".join(f"{at} {size} {base}/{name}\0".encode() for at, size, name in [
        ("1700000000.5", "9" * 4000, "dcp_checkpoint/__0_0.distcp"), ("1700000000.5", "-5", "dcp_checkpoint/__1.distcp"),
        ("1700000000.5", "٣", "dcp_checkpoint/__2.distcp"), ("nan", "5", "x"), ("1e400", "5", "y"), ("٣", "5", "z"),
        ("1700000001.25", "7", "dcp_checkpoint/.metadata"), ("1700000002", "12", "model_state_dict/full_weights.pt"),
        ("1700000000.5", "3", "dcp_checkpoint/__3.distcp")])
    files = [(f.path, f.size, f.mtime.timestamp()) for f in parse_listing(data)]
    assert [path.rsplit("/", 1)[-1] for path, _, _ in files] == [".metadata", "full_weights.pt", "__3.distcp"]
    [found] = checkpoints(location(embodied("/o")), files)
    assert table_rows([found])[0][:3] == ["global_step_10", "10", human_size(22)] and found.complete
