"""Issue 33, a seventeenth round (floods over time: one hostile Job never stops another Job's alert): an alert round
judges at most JUDGED_PER_ROUND Jobs again and took them in name order, so more Jobs than that whose objects changed
at every round (a hostile control plane's, or a platform that updates each Running Job's status every few seconds)
were judged again at every round while a Job named after them in the sort waited for ever: 'z-prod' Failed, and
no job-failed alert, round after round. The Jobs that have waited longest are judged first."""

from __future__ import annotations

from types import MappingProxyType

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.flow import alertpoll
from rlark_tui.flow.snapshot import Snapshot
from rlark_tui.view.index import SnapshotIndex
from tests import loopback
from tests.tui.tui_factories import job_dict


def test_jobs_that_change_at_every_round_keep_no_other_jobs_alert_waiting(tmp_path, env, monkeypatch):
    monkeypatch.setattr(alertpoll, "JUDGED_PER_ROUND", 4)
    monkeypatch.setattr(alertpoll, "COST_FACTOR", 0.0)  # a round at each call, however soon after the last
    # Pending Jobs without Pods: the rounds read nothing from the cluster
    path = loopback.kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1")
    access = ClusterAccess.open(str(path))
    rounds = alertpoll.AlertRounds()
    victim = job_dict("z-prod", phase="Failed", roles=())
    index, results, fired_at = None, {}, None
    try:
        for turn in range(4):
            jobs = {}
            for number in range(6):  # more than a round judges, each changed at every round
                job = job_dict(f"a-{number}", phase="Pending", roles=())
                job["metadata"]["resourceVersion"] = str(turn)
                jobs[f"a-{number}"] = job
            jobs["z-prod"] = victim
            changed = frozenset(name for name in jobs if name != "z-prod" or turn == 0)
            index = SnapshotIndex(Snapshot(jobs=MappingProxyType(jobs), version=2 * turn + 1,
                                           changes=MappingProxyType({"jobs": changed}),
                                           alerts=MappingProxyType(results)), index)
            state = rounds(access, index, alertpoll.ALL_KEY)
            results = {alertpoll.ALL_KEY: state}
            index = SnapshotIndex(Snapshot(jobs=MappingProxyType(jobs), version=2 * turn + 2,
                                           alerts=MappingProxyType(results)), index)
            if fired_at is None and ("z-prod", "job-failed") in {(a.job, a.rule) for a in state.book.firing()}:
                fired_at = turn
    finally:
        access.close()
    assert fired_at is not None and fired_at <= 1, fired_at  # 7 Jobs waiting, 4 a round: its turn is the second
