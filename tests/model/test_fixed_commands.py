"""The allow-list of fixed read-only in-Pod commands: what each builds, what it refuses, and that run_fixed runs
nothing else (refused before any connection)."""

from __future__ import annotations

import subprocess

import pytest

from rlark_tui.cluster.podexec import run_fixed
from rlark_tui.model import fixed_commands
from rlark_tui.model.fixed_commands import FixedCommandError, argv


def test_the_list_is_exactly_the_read_only_commands_rlark_needs():
    assert set(fixed_commands.FIXED) >= {"list-files", "hash-files", "ray-token"}
    for spec in fixed_commands.FIXED.values():
        assert spec.timeout > 0 and spec.max_output > 0 and spec.what


def test_builders_give_one_argv_word_per_parameter():
    assert argv("list-files", "/out/run 1") == ["find", "/out/run 1", "-type", "f", "-printf", "%T@ %s %p\\0"]
    assert argv("hash-files", "/a", "/b c") == ["sha256sum", "--", "/a", "/b c"]
    assert argv("ray-token")[:2] == ["sh", "-c"]


@pytest.mark.parametrize("params", [("-delete",), ("relative/dir",), ("/a\0b",), ("",), (), ("/a", "/b")])
def test_a_location_that_is_not_one_absolute_path_is_refused(params):
    with pytest.raises(FixedCommandError):
        argv("list-files", *params)


def test_hash_files_refuses_options_and_nothing():
    with pytest.raises(FixedCommandError):
        argv("hash-files")
    with pytest.raises(FixedCommandError):
        argv("hash-files", "/ok", "--check")


def test_ray_token_takes_no_parameters():
    with pytest.raises(FixedCommandError):
        argv("ray-token", "/etc/shadow")


def test_the_ray_token_script_follows_rays_order(tmp_path):
    """Run the real script with sh: RAY_AUTH_TOKEN, else RAY_AUTH_TOKEN_PATH's file, else ~/.ray/auth_token."""
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("default-file")
    (tmp_path / "named").write_text("named-file")
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    def token(**env):
        return subprocess.run(argv("ray-token"), env={**base, **env}, capture_output=True, text=True,
                              timeout=10).stdout

    assert token(RAY_AUTH_TOKEN="from-env", RAY_AUTH_TOKEN_PATH=str(tmp_path / "named")) == "from-env"
    assert token(RAY_AUTH_TOKEN_PATH=str(tmp_path / "named")) == "named-file"
    assert token() == "default-file"


@pytest.mark.parametrize("name", ["sh", "bash", "cat", "rm", "list-files; rm"])
def test_run_fixed_runs_nothing_off_the_list(name):
    class NoAccess:
        def data_plane_api_client(self, cluster):  # pragma: no cover - must never be reached
            raise AssertionError("run_fixed connected for a command that is not on the list")

    with pytest.raises(FixedCommandError, match="not one of rlark's fixed read-only commands"):
        run_fixed(NoAccess(), "rlark-gpu-a", "pod-0", name)
