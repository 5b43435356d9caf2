"""A kubeconfig's exec plugin, run within bounds: the `kubernetes` loader runs the command a kubeconfig names (as
kubectl does) and reads all it writes, for as long as it runs, so a kubeconfig from someone else whose plugin
writes without end took rlark to 6.6 GB in 20 s, and one that never ends held every command for ever.

`bound()` makes the loader run each plugin through `run`: its output is read to EXEC_BYTES, its stderr to
EXEC_ERROR_BYTES, within EXEC_SECONDS; past either the plugin is killed and the context is one line naming the
bound. Its answer is decoded by text/parse.load_json (bounded, never RecursionError). Imported only with the
loader (cluster/kubeconfig._loader_configuration).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import IO, Any

from kubernetes.config import kube_config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.exec_provider import ExecProvider

from rlark_tui.cluster.kubeconfig import sendable
from rlark_tui.text.parse import load_json

EXEC_BYTES = 1 << 20
"""The most of a plugin's answer read (an ExecCredential is a token or a certificate: a few KB)."""
EXEC_ERROR_BYTES = 64 * 1024
"""The most of a plugin's stderr kept (its message is the first line of it)."""
EXEC_SECONDS = 300.0
"""How long a plugin may run: long enough for a login it asks the user for, not for ever."""


class _Read:
    """One stream of the plugin read to `limit` on a thread of its own; the rest is read and dropped."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self.kept: list[bytes] = []
        self.size = 0
        self.over = False
        self._thread = threading.Thread(target=self._read, args=(stream, limit), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[bytes], limit: int) -> None:
        read = getattr(stream, "read1", stream.read)
        while chunk := read(64 * 1024):
            if self.size < limit:
                self.kept.append(chunk[:limit - self.size])
            self.size += len(chunk)
            if self.size > limit:
                self.over = True
                return

    def wait(self, seconds: float | None) -> bool:
        """Whether the stream ended (or went past its bound) within `seconds`."""
        self._thread.join(seconds)
        return not self._thread.is_alive()

    @property
    def data(self) -> bytes:
        return b"".join(self.kept)


class BoundedExecProvider(ExecProvider):
    """The loader's ExecProvider, run within EXEC_BYTES and EXEC_SECONDS (the rest is the loader's own)."""

    def run(self, previous_response: Any = None) -> Any:
        interactive = hasattr(sys.stdout, "isatty") and sys.stdout.isatty()
        spec: dict[str, Any] = {"interactive": interactive}
        if previous_response:
            spec["response"] = previous_response
        if self.cluster:
            spec["cluster"] = self.cluster.value
            for extension in self.cluster.value.get("extensions") or []:
                if extension["name"] == "client.authentication.k8s.io/exec":
                    spec["cluster"]["config"] = extension["extension"]
                    break
        self.env["KUBERNETES_EXEC_INFO"] = json.dumps({"apiVersion": self.api_version, "kind": "ExecCredential",
                                                       "spec": spec})
        process = subprocess.Popen(self.args, stdout=subprocess.PIPE,
                                   stderr=sys.stderr if interactive else subprocess.PIPE,
                                   stdin=sys.stdin if interactive else subprocess.DEVNULL,
                                   cwd=self.cwd, env=self.env, start_new_session=not interactive)
        assert process.stdout is not None
        out = _Read(process.stdout, EXEC_BYTES)
        err = _Read(process.stderr, EXEC_ERROR_BYTES) if process.stderr is not None else None
        ended = out.wait(EXEC_SECONDS)
        if not ended or out.over:
            _kill(process)
            out.wait(None)
            raise ConfigException(f"exec: the plugin {self.args[0]} " + (
                f"wrote more than {EXEC_BYTES >> 20} MiB: not read past it" if out.over
                else f"gave no answer within {EXEC_SECONDS:g} s: stopped"))
        code = process.wait()
        if err is not None:
            err.wait(None)
        if code != 0:
            message = err.data.decode("utf-8", "replace").strip().splitlines()[:1] if err is not None else []
            raise ConfigException(f"exec: process returned {code}" + (f". {message[0]}" if message else ""))
        try:
            data = load_json(out.data, max_bytes=EXEC_BYTES)
        except ValueError as exc:
            raise ConfigException(f"exec: failed to decode process output: {exc}") from None
        if not isinstance(data, dict) or any(key not in data for key in ("apiVersion", "kind", "status")):
            raise ConfigException("exec: malformed response: not an ExecCredential")
        if data["apiVersion"] != self.api_version:
            raise ConfigException(f"exec: plugin api version {data['apiVersion']} does not match {self.api_version}")
        status = data["status"]
        if isinstance(status, dict) and "token" in status and not (isinstance(status["token"], str)
                                                                    and sendable(status["token"])):
            raise ConfigException(f"exec: the plugin {self.args[0]} answered a token that is not text of printable "
                                  "ASCII, which no request header carries: not used")
        return status


def _kill(process: subprocess.Popen[bytes]) -> None:
    """The plugin and what it started (a session of its own when not interactive)."""
    try:
        if process.pid == os.getpgid(process.pid):
            os.killpg(process.pid, 9)
        else:
            process.kill()
    except OSError:
        pass
    process.wait()


def bound() -> None:
    """The loader runs exec plugins through BoundedExecProvider."""
    kube_config.ExecProvider = BoundedExecProvider  # type: ignore[misc]
