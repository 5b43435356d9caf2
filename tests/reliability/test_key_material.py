"""Key material never outlives its use, with real processes on the shared sandbox.

`rlark logs -f demo-ppo` (the admin certificate from Secret rlark-admin-cert reaches rlark-server) is ended by
SIGTERM, SIGHUP, SIGKILL and `timeout`; `rlark --readonly port-forward demo-ppo ray` (GET and HEAD only) by SIGKILL.
Afterwards no file under /tmp or the state dir holds the admin key. `rlark edit` with a slow $EDITOR gets SIGHUP:
its 0600 draft is removed and the editor ends. Concurrent in-Pod reads share no file that could go missing.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml
from kubernetes import client

RLARK = [sys.executable, "-m", "rlark_tui"]


@pytest.fixture(scope="module")
def admin_key(plain_sandbox) -> list[bytes]:
    """Needles for the admin key: its PEM body lines and its DER bytes."""
    secret = client.CoreV1Api(plain_sandbox.api_client()).read_namespaced_secret("rlark-admin-cert", "default")
    pem = base64.b64decode(secret.data["client.key"])
    body = [line for line in pem.splitlines() if line and not line.startswith(b"-----")]
    return [line for line in body if len(line) >= 32][:2] + [base64.b64decode(b"".join(body))[:48]]


def holders(needles: list[bytes], own: str, since: float, skip: str) -> list[str]:
    """Files changed since `since` holding a needle: anywhere under `own` (the test's dir, rlark's state dir in it),
    and under /tmp in every directory changed since then. A file made in /tmp (by tempfile or a path of its own)
    changes its directory's time, as a directory made does its parent's, so every file the processes made there or
    in a directory they made is read; directories of other runs unchanged since are not entered (this machine's
    /tmp holds 800,000 files of other runs: reading them all took 11.6 s of CPU). `skip`: the sandbox's own state."""
    found: list[str] = []

    def walk(directory: str, whole: bool) -> None:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if entry.is_dir(follow_symlinks=False):
                if not entry.path.startswith(skip) and (whole or (entry.path != own and info.st_mtime >= since)):
                    walk(entry.path, whole)
                continue
            if not entry.is_file(follow_symlinks=False) or info.st_mtime < since or info.st_size > 1 << 20:
                continue
            try:
                data = open(entry.path, "rb").read()
            except OSError:
                continue
            if any(needle in data for needle in needles):
                found.append(entry.path)

    walk(own, whole=True)
    walk("/tmp", whole=False)
    return found


def started(argv: list[str], first: bytes, launched: list[subprocess.Popen]) -> tuple[subprocess.Popen, str]:
    """The process (also put in `launched`, for the test to kill whatever happens) and its first line, once it
    printed `first`."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    launched.append(proc)
    line = proc.stdout.readline()
    if first not in line:
        proc.kill()
        raise AssertionError((argv, line, proc.stderr.read(), proc.wait(10)))
    return proc, line.decode()


def stop_all(launched: list[subprocess.Popen]) -> None:
    """End what `started` launched and is still running (a test that failed half-way)."""
    for proc in launched:
        if proc.poll() is None:
            proc.terminate()  # timeout(1) hands it on to its rlark
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def ended(proc: subprocess.Popen) -> int:
    code = proc.wait(30)
    proc.stdout.close()
    proc.stderr.close()
    return code


def test_logs_follow_and_readonly_port_forward_ended_by_signals_leave_no_key(plain_sandbox, env, admin_key):
    since = time.time() - 1
    kubeconfig = ["--kubeconfig", str(plain_sandbox.kubeconfig)]
    follow = [*RLARK, *kubeconfig, "logs", "-f", "demo-ppo", "--role", "actor"]
    argvs = {"SIGTERM": follow, "SIGHUP": follow, "SIGKILL": follow, "timeout": ["timeout", "-s", "TERM", "600", *follow],
             "port-forward": [*RLARK, *kubeconfig, "--readonly", "port-forward", "demo-ppo", "ray"]}
    firsts = {name: b"Forwarding demo-ppo ray (read-only" if name == "port-forward" else b"[actor/demo-ppo-actor-0]"
              for name in argvs}
    launched: list[subprocess.Popen] = []
    try:
        with ThreadPoolExecutor(len(argvs)) as pool:
            procs = dict(zip(argvs, pool.map(lambda name: started(argvs[name], firsts[name], launched), argvs)))
        forward, line = procs.pop("port-forward")
        url = line.split(" at ")[1].strip()
        port, token = url.split(":")[2].split("/")[0], url.split("/")[3]
        answers = {}
        for method in ("GET", "HEAD", "POST"):
            conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
            conn.request(method, f"/{token}/api/jobs/", body=b"{}" if method == "POST" else None)
            answers[method] = conn.getresponse().status
            conn.close()
        forward.kill()
        codes = {"port-forward": ended(forward)}
        for name, (proc, _) in procs.items():
            # timeout(1) takes SIGALRM as its own time being up (its alarm is how it counts): it sends its child
            # TERM and exits 124, as it would at the end of the duration, here once the follow is surely running
            proc.send_signal(signal.SIGALRM if name == "timeout" else getattr(signal, name))
            codes[name] = ended(proc)
        assert codes == {"port-forward": -signal.SIGKILL, "SIGTERM": -signal.SIGTERM, "SIGHUP": -signal.SIGHUP,
                         "SIGKILL": -signal.SIGKILL, "timeout": 124}
        assert answers["POST"] == 405 and answers["GET"] != 405 and answers["HEAD"] != 405, answers
        assert holders(admin_key, str(env), since, str(plain_sandbox.state_dir)) == []
    finally:  # a process that did not start as expected, or an assertion above, leaves none running
        stop_all(launched)


def test_sighup_to_edit_removes_its_private_draft(plain_sandbox, env, tmp_path):
    seen = tmp_path / "seen"
    editor = tmp_path / "slow-editor"
    editor.write_text(f"#!/bin/sh\necho \"$$ $(stat -c %a \"$1\") $1\" > {seen}.tmp && mv {seen}.tmp {seen}\n"
                      "exec sleep 60\n")
    editor.chmod(0o755)
    proc = subprocess.Popen([*RLARK, "--kubeconfig", str(plain_sandbox.kubeconfig), "edit", "demo-ppo"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "EDITOR": str(editor), "VISUAL": ""})
    deadline = time.monotonic() + 30
    while not seen.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.1)
    pid, mode, draft = seen.read_text().split()
    assert mode == "600" and os.path.exists(draft)
    proc.send_signal(signal.SIGHUP)
    assert ended(proc) == 128 + signal.SIGHUP
    assert not os.path.exists(draft) and not os.path.exists(f"/proc/{pid}/cmdline")


def test_concurrent_in_pod_reads_share_no_runtime_file(plain_sandbox, env):
    """Processes reaching Pods through rlark-server at once (exec over its WebSocket, as the check's in-Pod
    reads do) each build their TLS from memory: none can lose a file another removed."""
    def read(_):
        return subprocess.run([*RLARK, "--kubeconfig", str(plain_sandbox.kubeconfig), "exec", "demo-ppo", "--",
                               "cat", "/dev/null"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    with ThreadPoolExecutor(3) as pool:
        runs = list(pool.map(read, range(3)))
    assert [(done.returncode, done.stderr) for done in runs] == [(0, "")] * 3


class ConnectProxy:
    """An HTTP CONNECT proxy on loopback, as a kubeconfig's `proxy-url` names one; counts the tunnels it opened."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.tunnels = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client_side, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client_side,), daemon=True).start()

    def _tunnel(self, client_side: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client_side.recv(4096)
            if not chunk:
                return client_side.close()
            head += chunk
        host, port = head.split(b" ")[1].decode().rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
        self.tunnels += 1
        client_side.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        for source, sink in ((client_side, upstream), (upstream, client_side)):
            threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()


def test_inline_kubeconfig_keys_with_a_proxy_or_an_exec_plugin_never_reach_the_disk(plain_sandbox, env, tmp_path):
    """Contexts the `kubernetes` loader used to copy inline keys to temporary files for: a `proxy-url`, an exec
    plugin beside an inline `client-key-data`, and an exec plugin that answers with a certificate. Each reaches
    the control plane through rlark-server with the admin key from the kubeconfig; `rlark logs -f` is killed
    with SIGKILL and no file under /tmp or the state dir holds the key."""
    secret = client.CoreV1Api(plain_sandbox.api_client()).read_namespaced_secret("rlark-admin-cert", "default")
    cert, key = (secret.data[name] for name in ("client.crt", "client.key"))  # base64 of the PEM, as kubeconfigs hold
    pem = base64.b64decode(key)
    needles = [line for line in pem.splitlines() if len(line) >= 32 and not line.startswith(b"-----")][:2]
    plugin = tmp_path / "plugin.py"
    plugin.write_text("import base64, json, os\nstatus = {'token': 'from-plugin'} if os.environ['ANSWER'] == 'token' "
                      "else {'clientCertificateData': base64.b64decode(os.environ['C']).decode(), "
                      "'clientKeyData': base64.b64decode(os.environ['K']).decode()}\n"
                      "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', "
                      "'kind': 'ExecCredential', 'status': status}))\n")

    def exec_plugin(answer: str) -> dict:
        return {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "args": [str(plugin)],
                "interactiveMode": "Never", "env": [{"name": "ANSWER", "value": answer}, {"name": "C", "value": cert},
                                                     {"name": "K", "value": key}]}
    inline = {"client-certificate-data": cert, "client-key-data": key}
    proxy = ConnectProxy()
    ca = base64.b64encode(plain_sandbox.ca_path.read_bytes()).decode()
    server = {"server": f"{plain_sandbox.server_url}/api/kubernetes", "certificate-authority-data": ca,
              "extensions": [{"name": "rlark.io/server",
                              "extension": {"server": plain_sandbox.server_url, "certificate-authority-data": ca}}]}
    contexts = {"proxy": ({**server, "proxy-url": proxy.url}, inline),
                "exec-beside-inline": (server, {**inline, "exec": exec_plugin("token")}),
                "exec-certificate": (server, {"exec": exec_plugin("certificate")})}
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "proxy",
              "clusters": [{"name": name, "cluster": cluster} for name, (cluster, _) in contexts.items()],
              "users": [{"name": name, "user": user} for name, (_, user) in contexts.items()],
              "contexts": [{"name": name, "context": {"cluster": name, "user": name}} for name in contexts]}
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    kubeconfig.chmod(0o600)
    since = time.time() - 1
    launched: list[subprocess.Popen] = []
    try:
        argvs = [[*RLARK, "--kubeconfig", str(kubeconfig), "--context", name, "logs", "-f", "demo-ppo", "--role",
                  "actor"] for name in contexts]
        with ThreadPoolExecutor(len(argvs)) as pool:
            procs = list(pool.map(lambda argv: started(argv, b"[actor/demo-ppo-actor-0]", launched)[0], argvs))
        for proc in procs:
            proc.kill()
        assert [ended(proc) for proc in procs] == [-signal.SIGKILL] * len(procs)
    finally:
        stop_all(launched)
        proxy.close()
    assert proxy.tunnels >= 1
    assert holders(needles, str(env), since, str(plain_sandbox.state_dir)) == []
