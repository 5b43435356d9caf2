"""Fixtures of the agent tests: the kubernetes client on the shared sandbox, and shortened agent timings
(`fast_agent`) restored after each test."""

from __future__ import annotations

import pytest

from .helpers import Api


@pytest.fixture
def api(sandbox):
    return Api(sandbox)


@pytest.fixture
def fast_agent(sandbox):
    """Short restart back-off and head wait on the shared sandbox's agent for one test."""
    settings = sandbox.agent.settings
    saved = dict(vars(settings))
    settings.backoff_base, settings.backoff_max, settings.head_wait_attempts = 0.5, 4.0, 3
    try:
        yield settings
    finally:
        for key, value in saved.items():
            setattr(settings, key, value)
