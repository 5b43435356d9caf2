"""Issue 33, one way to read an input: the last log reads that held lines whatever their size (a data plane may
answer lines of 16 MiB, http.MAX_LINE_BYTES) hold at most a byte bound, and say so in one line where their result
is shown."""

from __future__ import annotations

import json

from rlark_tui.cluster import checkpoints
from tests.cluster.seeding import ROLES, at, seed_running_job, write_log

LONG = "x" * (400 << 10)
CONFIG = json.dumps({"cluster": {"num_nodes": 1}, "runner": {"task_type": "embodied", "logger": {
    "log_path": "/out", "experiment_name": "ppo"}}}, indent=2).splitlines()


def test_the_resolved_config_is_looked_for_within_a_byte_bound_and_the_checkpoints_say_so(rl, sb, monkeypatch):
    """The resolved config was looked for in the Header log's first 20,000 lines whatever their size: up to 320 GiB
    held by rlark checkpoints, rlark resume and the Checkpoints tab. The read stops before the line that would pass
    checkpoints.CONFIG_BYTES (here 1 MiB; a real RLinf prints its config at start-up, far within its 64 MiB), and
    the one line that says no config was found says where the read stopped, with the bound."""
    pods = seed_running_job(sb, "ckpt-bound", ROLES)
    header = pods["actor"]
    write_log(sb, *header, [LONG] * 3, when=at(1))
    write_log(sb, *header, CONFIG, when=at(2))
    assert checkpoints.CONFIG_BYTES >= 64 << 20
    monkeypatch.setattr(checkpoints, "CONFIG_BYTES", 2 << 20)
    within = rl("checkpoints", "ckpt-bound")  # found: the listing in the Pod is what fails in this sandbox
    assert within.code == 1 and "exec in pod" in within.err and "config" not in within.err
    monkeypatch.setattr(checkpoints, "CONFIG_BYTES", 1 << 20)
    result = rl("checkpoints", "ckpt-bound")
    assert result.code == 1 and result.out == ""
    assert result.err == (f"error: checkpoints: the Header log of ckpt-bound ({header[1]}) has no resolved RLinf "
                          "config in its first 2 lines, where its read stopped to hold at most 1 MiB (the read's "
                          "bound), so no checkpoint location\n")
