"""bench.harness helpers: percentiles, RSS, and a sandbox in its own process (no timing asserts)."""

from __future__ import annotations

import os

import pytest

from bench.harness import percentile, rss_mb, start_sandbox


def test_percentile_interpolates_between_ranks():
    assert percentile([4, 1, 3, 2], 0) == 1
    assert percentile([4, 1, 3, 2], 100) == 4
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10], 95) == 10
    with pytest.raises(ValueError):
        percentile([], 50)


def test_rss_of_this_process_is_positive():
    assert rss_mb(os.getpid()) > 1


def test_sandbox_process_serves_its_seed_without_agent(tmp_path):
    sb = start_sandbox(tmp_path, "scale:3:6")
    try:
        assert sb.kubeconfig.exists()
        assert sb.gateway.startswith("https://127.0.0.1:")
        assert sb.post("/_sandbox/faults", {"op": "clear"})["fail"] == []
        from kubernetes import client, config
        api = client.CustomObjectsApi(config.new_client_from_config(str(sb.kubeconfig), context=sb.context))
        jobs = api.list_cluster_custom_object("rlinf.io", "v1alpha1", "jobs")["items"]
        assert sorted(job["metadata"]["name"] for job in jobs) == ["scale-00000", "scale-00001", "scale-00002"]
    finally:
        sb.stop()
    assert sb.process.returncode == 0
