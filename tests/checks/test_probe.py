"""The output probe on real files: sizes, mtimes and checksums read back, and how check 5 judges the listing."""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from rlark_tui.checks import evaluate
from rlark_tui.checks.probe import probe_output

from . import fixtures as fx


def _write(path, data: bytes, when: datetime):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (when.timestamp(), when.timestamp()))


def test_probe_lists_files_newest_first_with_checksums(tmp_path):
    now = datetime.now(timezone.utc)
    weights = tmp_path / "ppo" / "checkpoints" / "global_step_2" / "actor" / "model_state_dict" / "full_weights.pt"
    _write(weights, b"w" * 100, now)
    _write(tmp_path / "metrics.log", b"step 1\n", now - timedelta(minutes=1))
    _write(tmp_path / "empty.txt", b"", now - timedelta(minutes=2))
    probe = probe_output(str(tmp_path))
    assert probe.error is None
    assert [f.path for f in probe.files] == [str(weights), str(tmp_path / "metrics.log"), str(tmp_path / "empty.txt")]
    assert probe.files[0].size == 100
    assert probe.files[0].sha256 == hashlib.sha256(b"w" * 100).hexdigest()
    assert abs((probe.files[0].mtime - now).total_seconds()) < 1


def test_probe_of_missing_remote_and_relative_paths(tmp_path):
    assert probe_output(str(tmp_path / "nothing")).files == ()
    assert "object-storage" in probe_output("s3://bucket/run").error
    assert probe_output("relative/dir").error


def test_fresh_local_outputs_pass_check_5_and_stale_ones_do_not(tmp_path):
    start = datetime.now(timezone.utc) - timedelta(minutes=5)
    job = fx.job()
    job["status"]["startTime"] = start.strftime("%Y-%m-%dT%H:%M:%SZ")
    pods = tuple(dict(p, metadata=dict(p["metadata"], creationTimestamp=job["status"]["startTime"]))
                 for p in fx.pods())
    _write(tmp_path / "fresh" / "ckpt.pt", b"x" * 10, start + timedelta(minutes=1))
    _write(tmp_path / "stale" / "ckpt.pt", b"x" * 10, start - timedelta(hours=1))
    base = fx.healthy(job=job, pods=pods, now=start + timedelta(minutes=5))

    def judged(where: str):
        record = {k: v for k, v in fx.record().items() if k != "runId"} | {"outputPath": str(tmp_path / where)}
        return evaluate(replace(base, launch_record=record, outputs=probe_output(str(tmp_path / where)))).row(5)
    fresh = judged("fresh")
    assert fresh.result == "pass"
    item = [i for i in fresh.evidence if i.kind == "file"][0]
    assert item.sha256 == hashlib.sha256(b"x" * 10).hexdigest() and item.size == 10
    stale = judged("stale")
    assert stale.result == "pending"
    assert any("older than the Job's latest start" in n for n in stale.all_notes())
