"""Session-wide fixtures: the shared sandboxes (demo seed, temporary state dir) for every cluster-side test.
Tests reach them over real HTTPS through `sandbox.kubeconfig`; `sandbox.store` / `sandbox.faults` for setup.

`sandbox` is the shared sandbox whose Pods run without Ray (their containers exit after the prepare script, as
an image without the Ray CLI would); tests marked `ray` get the shared sandbox that runs demo-ppo's real Ray
instead, on one xdist worker (see `pytest_collection_modifyitems`), so Ray starts only when such a test is selected.

`sandbox` attributes: `.kubeconfig` (Path), `.gateway` (URL), `.state_dir`, `.context` ("rlark-sandbox"),
`.store`, `.logs`, `.faults`, `.proxies`, `.streams` (open watches and log follows: wait on them with
tests/streams.py, never a sleep), `.call(fn, *args)`, `.api_client(context=None)`, `.token`.
Tests that set faults must clear them (`sandbox.faults.clear()`), e.g. with the `faults` fixture.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Tests marked `ray` form one xdist group, so they share one worker and its one Ray sandbox. With workers
    (the default, `-n 3` in pyproject.toml) they come first: that worker runs the long Ray chain while the others
    share every other test. In one process (`-n 0`) they come last, so Ray starts only when such a test is
    selected and its processes share the cores with nothing but Ray tests. The order is otherwise stable. It runs
first: xdist's worker reads the group markers in its own hook, which runs before this one when pytest is given paths
(this conftest is then loaded before xdist's worker plugin), and two workers would each start a Ray sandbox."""
    parallel = hasattr(config, "workerinput")
    items.sort(key=lambda item: (item.get_closest_marker("ray") is not None) != parallel)
    for item in items:
        if item.get_closest_marker("ray") is not None:
            item.add_marker(pytest.mark.xdist_group("ray"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last of a run of tests marked `ray` (they run together, see above), the Ray sandbox and every
    fixture built on it (tests/raydebug's live runs) are torn down at once, not at the session's end: their Ray
    processes would otherwise take the cores from every test that worker runs after them. A later `ray` test
    would start it again. The live runs end as soon as the last test that reads them is done, before the `ray`
    tests after them."""
    result = yield
    if item.get_closest_marker("ray") is not None and (nextitem is None or nextitem.get_closest_marker("ray") is None):
        _finish(item, "ray_sandbox")
    elif "live_runs" in item.fixturenames and (nextitem is None or "live_runs" not in nextitem.fixturenames):
        _finish(item, "live_runs")  # tests/raydebug's three Ray runs, done with: the Ray tests after them go faster
    return result


def _finish(item, name: str) -> None:
    for fixturedef in item.session._fixturemanager.getfixturedefs(name, item) or ():
        if fixturedef.cached_result is not None:
            fixturedef.finish(item._request)


def _shared_sandbox(tmp_path_factory, name: str, ray: bool):
    from rlark_sandbox import Sandbox
    from rlark_sandbox.agent import AgentSettings
    return Sandbox(tmp_path_factory.mktemp(name), seed="demo", agent_settings=AgentSettings(ray=ray))


@pytest.fixture(scope="session")
def plain_sandbox(tmp_path_factory):
    """The shared sandbox without Ray: the agent schedules and runs Pods, none starts Ray."""
    with _shared_sandbox(tmp_path_factory, "sandbox", ray=False) as sb:
        yield sb


@pytest.fixture(scope="session")
def ray_sandbox(tmp_path_factory):
    """The shared sandbox with real Ray (demo-ppo's three Ray nodes), for tests marked `ray`."""
    with _shared_sandbox(tmp_path_factory, "ray-sandbox", ray=True) as sb:
        yield sb


@pytest.fixture
def sandbox(request):
    """`ray_sandbox` for a test marked `ray`, else `plain_sandbox`."""
    name = "ray_sandbox" if request.node.get_closest_marker("ray") else "plain_sandbox"
    return request.getfixturevalue(name)


@pytest.fixture
def faults(sandbox):
    """The shared sandbox's fault switches, cleared after the test."""
    with sandbox.faults.cleared() as faults:
        yield faults


@pytest.fixture(scope="session")
def _own_dirs(tmp_path_factory) -> Path:
    """Where each test's config, state and tmp_path directories are made, by mkdtemp: pytest's numbered mktemp
    lists its whole base directory at each call, and a worker's held some 2,500 entries by the suite's end, so three
    of them a test cost a worker about 2.7 s of CPU over the suite, growing with the square of its tests."""
    return tmp_path_factory.mktemp("own")


@pytest.fixture
def tmp_path(_own_dirs) -> Path:
    """A directory of the test's own, by mkdtemp (pytest's is a numbered mktemp, as above)."""
    return Path(tempfile.mkdtemp(dir=_own_dirs))


@pytest.fixture(autouse=True)
def _own_config_and_state(_own_dirs, monkeypatch, request):
    """Every test has a config dir and a state dir of its own: nothing of the user's is read (no view settings
    another test kept: the TUI keeps each context's sort and filters in the config dir), and nothing is written
    where the user's rlark would find it (an autosaved wizard draft there greets the next real start with an offer
    to resume it). A crash report written to the test's state dir (rlark's one line for a bug, local/crash.py)
    fails the test, unless it is marked `writes_crash_report`: every crash an in-process command, a command the
    test runs or the TUI hits is found, whatever the test asserts."""
    own = Path(tempfile.mkdtemp(dir=_own_dirs))
    (own / "config").mkdir(mode=0o700)
    (own / "state").mkdir(mode=0o700)
    monkeypatch.setenv("RLARK_CONFIG", str(own / "config" / "config.yaml"))
    monkeypatch.setenv("RLARK_STATE_DIR", str(own / "state"))
    yield
    reports = Path(os.environ["RLARK_STATE_DIR"]) / "crashes"  # the `env` fixture's, when the test has it
    if reports.is_dir() and request.node.get_closest_marker("writes_crash_report") is None:
        written = sorted(reports.iterdir())
        assert not written, f"rlark crashed during the test:\n{written[0].read_text()[:4000] if written else ''}"


@pytest.fixture
def env(tmp_path, monkeypatch):
    """No user config file, the state dir at `state` in the test's tmp_path (tests read what rlark kept there),
    and no stray kubeconfig from the environment."""
    monkeypatch.setenv("RLARK_CONFIG", str(tmp_path / "config.yaml"))
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return tmp_path
