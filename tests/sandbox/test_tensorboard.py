"""The gateway's Task TensorBoard route against a real `tensorboard` process on real tensorboardX event files
(no Ray): tags and scalars through the proxy, the platform's rewriting, 503 without a Pod, 502 when stopped."""

from __future__ import annotations

import pytest

from rlark_sandbox.tensorboard import rewrite_css, rewrite_html
from tests.sandbox.helpers import forget_pod, raw, tensorboard_pod

pytest.importorskip("tensorboardX")
pytest.importorskip("tensorboard")

PREFIX = "/api/v1/rlinf.io/v1alpha1/tasks/tb-task/tensorboard"


@pytest.fixture(scope="module")
def board(bare_sandbox, tmp_path_factory):
    from tensorboardX import SummaryWriter
    logdir = tmp_path_factory.mktemp("tb")
    with SummaryWriter(str(logdir)) as writer:
        for step in range(1, 6):
            writer.add_scalar("rollout/rewards", step / 10, step)
    uid = tensorboard_pod(bare_sandbox, "tb-task", "tb-task-0", logdir)
    yield bare_sandbox.tensorboards
    forget_pod(bare_sandbox, uid, "tb-task-0")


def test_tags_and_scalars_through_the_gateway(bare_sandbox, board):
    tags = raw(bare_sandbox, "GET", PREFIX + "/data/plugin/scalars/tags", timeout=90)
    assert tags.status == 200, tags.body[:200]
    runs = tags.json()
    assert any("rollout/rewards" in run_tags for run_tags in runs.values())
    run = next(iter(runs))
    scalars = raw(bare_sandbox, "GET", PREFIX + f"/data/plugin/scalars/scalars?run={run}&tag=rollout/rewards")
    assert [point[1] for point in scalars.json()] == [1, 2, 3, 4, 5]
    page = raw(bare_sandbox, "GET", PREFIX + "/")
    assert page.status == 200 and b"<" in page.body


def test_stopped_tensorboard_answers_502_then_comes_back(bare_sandbox, board):
    with bare_sandbox.faults.cleared() as faults:
        faults.stop_tensorboard("tb-task-0")
        assert raw(bare_sandbox, "GET", PREFIX + "/data/runs").status == 502
        assert board.running() == []
    assert raw(bare_sandbox, "GET", PREFIX + "/data/runs", timeout=90).status == 200


def test_no_pod_for_the_task_is_503(bare_sandbox):
    reply = raw(bare_sandbox, "GET", "/api/v1/rlinf.io/v1alpha1/tasks/nobody/tensorboard/data/runs")
    assert reply.status == 503 and reply.json() == {"error": "no pod found for task nobody"}


def test_absolute_paths_are_rewritten_like_the_platform():
    prefix = "/api/v1/rlinf.io/v1alpha1/tasks/t/tensorboard"
    html = '<link href="/index.css"><img src=\'/a.png\'><a href="//cdn/x"><a href="rel"><div style="x:url(/f.woff)">'
    assert rewrite_html(html, prefix) == (f'<link href="{prefix}/index.css"><img src=\'{prefix}/a.png\'>'
                                          f'<a href="//cdn/x"><a href="rel"><div style="x:url({prefix}/f.woff)">')
    assert rewrite_css('@import "/b.css"; a{background:url("/i.png")}', prefix) == \
        f'@import "{prefix}/b.css"; a{{background:url({prefix}/i.png)}}'
