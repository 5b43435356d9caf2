"""One HTTP transport and one decoder (issue 32 item 6), held by reading the source: every HTTP request of
rlark_tui goes through cluster/http.py (urllib3) and cluster/tls.py's contexts, and every cluster, gateway or
Ray answer is decoded by cluster/transport.py's decode_json."""

from __future__ import annotations

import ast
from pathlib import Path

import rlark_tui
from tests.sources import parsed

PACKAGE = Path(rlark_tui.__file__).parent
HTTP_CLIENTS = ("http.client", "urllib.request", "urllib.error", "urllib3", "requests", "httpx", "aiohttp")
TRANSPORT = {"cluster/http.py", "cluster/pools.py", "cluster/tls.py", "cluster/objects.py", "cluster/kubeconfig.py",
             "cluster/server.py"}
"""cluster/pools.py makes urllib3's pools read an answer's head within its bound (http.HeadBoundResponse);
cluster/objects.py streams a download to disk with Range and resume over a tls.py pool of its own;
kubeconfig.py and server.py set the kubernetes ApiClient's urllib3 retries (none) and send nothing themselves."""
LOCAL_RECORDS = {"cluster/objects.py", "raydash/diagnose.py"}
"""They decode their own small files in the state dir (a download's part record, a kept diagnosis), no answer."""
DECODERS = {("json", "loads"), ("json", "load"), ("orjson", "loads"), ("msgspec", "json")}
ANSWER_READERS = ("cluster", "raydash", "checks/probe.py", "checks/gather.py", "local/hooks.py")


def _modules() -> dict[str, ast.Module]:
    return {str(path.relative_to(PACKAGE)): parsed(path) for path in sorted(PACKAGE.rglob("*.py"))}


def _imported(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_no_http_client_outside_the_transport():
    found = {name: sorted(module for module in _imported(tree)
                          if module.split(".")[0] in {c.split(".")[0] for c in HTTP_CLIENTS}
                          and any(module == c or module.startswith(c + ".") for c in HTTP_CLIENTS))
             for name, tree in _modules().items() if name not in TRANSPORT}
    assert {name: modules for name, modules in found.items() if modules} == {}


def test_answers_are_decoded_by_one_function():
    """No json.loads, orjson or msgspec where answers are read, but in cluster/transport.py."""
    found = {}
    for name, tree in _modules().items():
        if name == "cluster/transport.py" or name in LOCAL_RECORDS or not name.startswith(ANSWER_READERS):
            continue
        calls = sorted({f"{node.value.id}.{node.attr}" for node in ast.walk(tree)
                        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and (node.value.id, node.attr) in DECODERS})
        imports = sorted(module for module in _imported(tree) if module.split(".")[0] in ("orjson", "msgspec"))
        if calls or imports:
            found[name] = calls + imports
    assert found == {}
