"""The tmux status sink (issue 33 item 4) in a real tmux: status-right `#(rlark status --tmux)`, with a Failed Job
whose display name and status message hold `#(touch …)` and `#[…]`, and a hand-edited cache file holding them
too. tmux runs and styles what a `#(…)` prints, so the segment holds only rlark's own symbols and integer counts
(a count that is not one is `?`): the command never runs, and the status line shows the counts."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from rlark_tui.commands import status
from rlark_tui.model.keys import DISPLAY_NAME_ANNOTATION
from tests.alerts.test_watch import fail_job
from tests.pod.test_tui_pod import _tmux, _wait_pane
from tests.sandbox.helpers import job

NAME = "tmux-status-hostile"


@pytest.fixture
def hostile(plain_sandbox, tmp_path):
    marker = tmp_path / "ran"
    spec = job(NAME, stopped=False)
    spec["metadata"]["annotations"] = {DISPLAY_NAME_ANNOTATION: f"#(touch {marker})#[fg=red]"}
    plain_sandbox.store.create("jobs", spec)
    fail_job(plain_sandbox, NAME)
    plain_sandbox.call(lambda: plain_sandbox.store.mutate(
        "jobs", NAME, lambda j: {**j, "status": {**j["status"], "message": f"#(touch {marker}) failed"}}))
    yield plain_sandbox, marker
    plain_sandbox.store.delete("jobs", NAME)


def _status_line(sandbox, tmp_path, state) -> tuple[str, str]:
    """An inner tmux whose status-right runs `rlark status --tmux`, attached from an outer one (a status line is
    drawn for an attached client only); returns the two sockets."""
    inner, outer = str(tmp_path / "inner.sock"), str(tmp_path / "outer.sock")
    rlark = f"{sys.executable} -m rlark_tui status --tmux"  # the kubeconfig's current context
    conf = tmp_path / "tmux.conf"
    conf.write_text(f"set -g status-interval 1\nset -g status-right-length 80\nset -g status-right '#({rlark})'\n")
    env = {**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")},
           "RLARK_CONFIG": str(tmp_path / "config.yaml"), "RLARK_STATE_DIR": str(state), "TERM": "tmux-256color",
           "KUBECONFIG": str(sandbox.kubeconfig)}
    subprocess.run(["tmux", "-S", inner, "-f", str(conf), "new-session", "-d", "-s", "t", "-x", "100", "-y", "8",
                    f"{sys.executable} -c 'import sys; sys.stdin.read()'"], env=env, check=True, timeout=20)
    subprocess.run(["tmux", "-S", outer, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "100", "-y", "10",
                    f"tmux -S {inner} attach -t t"], env=env, check=True, timeout=20)
    return inner, outer


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_hostile_job_text_never_runs_from_the_tmux_status_line(hostile, tmp_path):
    sandbox, marker = hostile
    state = tmp_path / "state"
    inner, outer = _status_line(sandbox, tmp_path, state)
    try:
        failed = sum(1 for raw in sandbox.store.list("jobs")[0] if (raw.get("status") or {}).get("phase") == "Failed")
        shown = _wait_pane(outer, f"✗{failed}", timeout=120)  # the refreshed counts are on the status line
        line = shown.splitlines()[-1].rstrip()
        assert re.search(rf"\] 0:\S+\* +rlark ▶\d+ ✗{failed}( ⚠\d+)?$", line), line  # nothing else

        # a cache file edited by hand: what is not a count is `?`, nothing of it reaches tmux
        (state / status.cache_files(str(sandbox.kubeconfig))[0]).write_text(json.dumps({"time": 4e9, "running": f"#(touch {marker})",
                                                      "failed": "#[fg=red]1"}))
        line = _wait_pane(outer, "rlark ?", timeout=30).splitlines()[-1].rstrip()
        assert line.endswith(" rlark ?") and "touch" not in line and "fg=red" not in line, line
    finally:
        _tmux(outer, "kill-server")
        _tmux(inner, "kill-server")
    assert not marker.exists()
