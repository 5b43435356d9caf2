"""The lean client path of `rlark get`, `rlark status --tmux` and shell completion: reads of the control plane with
no `kubernetes` import and no ApiClient.

A plain kubeconfig context (token, token file, basic auth, client certificate; cluster/kubeconfig.py resolves it
as the `kubernetes` loader does) is reached over one kept connection (cluster/http.py's KeptConnection, http.client)
with one TLS context; answers are read to a bound and decoded by transport.decode_json. `LeanClient.open` answers
None when the context needs the full client (exec plugin, auth provider, in-cluster, a proxy, no kubeconfig at
all): the caller then uses ClusterAccess. Requests, answers and errors are the ones ClusterAccess makes and raises
(the same paths, queries and one-line messages).
"""

from __future__ import annotations

import builtins
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from rlark_tui.cluster import kubeconfig as kc
from rlark_tui.cluster import tls
from rlark_tui.cluster.errors import ApiError, Request, Unreachable, status_error
from rlark_tui.cluster.http import KeptConnection
from rlark_tui.cluster.kinds import JOBS, Kind, ListResult, list_result, selector_query
from rlark_tui.cluster.transport import (
    CONNECT_TIMEOUT,
    READ_TIMEOUT,
    decode_answer,
    display_url,
    query_string,
    request_timeout,
    shape_decoder,
)
from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.local.config import load_config

if TYPE_CHECKING:
    import argparse

SOURCE = "control plane"


class LeanClient:
    """Reads of one control plane over one kept-alive connection; `list` and `get` as ClusterAccess has them."""

    def __init__(self, plain: kc.PlainContext, namespace: str | None, timeout: float | None = None) -> None:
        self.base = plain.host
        self.namespace = namespace
        self.request_timeout = timeout or READ_TIMEOUT
        https = urlsplit(plain.host).scheme == "https"
        self._kept = KeptConnection(plain.host, {"Accept": "application/json", "User-Agent": "rlark",
                                                 **auth_headers(plain)},
                                    tls_context(plain) if https else None, plain.tls_server_name)
        self._url = display_url(self.base)

    @classmethod
    def open(cls, kubeconfig: str | None = None, context: str | None = None,
             timeout: float | None = None, read: kc.Kubeconfig | None = None) -> LeanClient | None:
        """The client for the context the flags name (--kubeconfig / $KUBECONFIG / ~/.kube/config, --context or
        current), or None when that context needs the full client. Unusable flags and kubeconfigs raise the
        same UsageError ClusterAccess raises. `read`: the kubeconfig as already read (contexts.chosen's)."""
        try:
            loaded = read or kc.load(kubeconfig)
        except UsageError:
            return None  # ClusterAccess knows the rest: in-cluster, server-only mode, or the same one line
        name = kc.resolve_context(loaded, context)
        plain = kc.plain_context(loaded, name)
        if plain is None or not plainly_reachable(plain):
            return None
        try:
            return cls(plain, kc.namespace_of(loaded, name), timeout)
        except (OSError, ValueError, tls.TLSError):
            return None  # a CA or key that cannot be loaded: the full client says why, as ever

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LeanClient | None:
        """From the global CLI flags, checked as ClusterAccess.from_args checks them (--request-timeout, the
        config file, rlark-server's certificate and key given together)."""
        from rlark_tui.cluster.server import ServerOptions

        timeout = request_timeout(args)
        ServerOptions.from_sources(args, load_config())
        return cls.open(getattr(args, "kubeconfig", None), getattr(args, "context", None), timeout,
                        getattr(args, "kubeconfig_read", None))

    # -- reads ---------------------------------------------------------------------------------------------

    def list(self, kind: Kind, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None, timeout: float | None = None) -> ListResult:
        return self.send_list(kind, namespace, label_selector, field_selector, timeout)()

    def send_list(self, kind: Kind, namespace: str | None = None, label_selector: str | None = None,
                  field_selector: str | None = None, timeout: float | None = None) -> Callable[..., ListResult]:
        """Send the list request; the call returned, `answer(shape=None)`, waits for its answer and decodes it
        (whole, or only the fields of `shape`: see transport.decode_json). `rlark get` loads its table code meanwhile, while
        the server answers."""
        answer = self.send(kind.path(namespace), Request("list", kind.plural, namespace=namespace),
                           selector_query(label_selector, field_selector), timeout or self.request_timeout)
        return lambda shape=None: list_result(answer(shape), kind)

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        result = self.json(kind.path(namespace, name), Request("get", kind.plural, name, namespace))
        return result if isinstance(result, dict) else {}

    def json(self, path: str, req: Request, query: builtins.list[tuple[str, str]] | None = None,
             timeout: float | None = None) -> object:
        """One GET; the decoded body. Error answers and transport failures raise as cluster.errors classes."""
        return self.send(path, req, query, timeout)()

    def send(self, path: str, req: Request, query: builtins.list[tuple[str, str]] | None = None,
             timeout: float | None = None) -> Callable[..., object]:
        """Send one GET; the call returned, `answer(shape=None)`, reads and decodes its answer (see
        transport.decode_json). Transport failures raise from either, error answers from the call."""
        req = Request(req.verb, req.resource, req.name, req.namespace, req.source or SOURCE, self._url)
        read = self._kept.send(path + ("?" + query_string(query) if query else ""), req,
                               timeout or self.request_timeout)

        def answer(shape: type | None = None) -> object:
            if shape is not None:
                shape_decoder(shape)  # made (msgspec loaded) before the answer is read, while it may still come
            status, data = read()
            if not 200 <= status < 300:
                raise status_error(status, data, req)
            return decode_answer(data, req, shape)
        return answer

    def close(self) -> None:
        self._kept.close()


def plainly_reachable(plain: kc.PlainContext | None) -> bool:
    """Whether a context can be reached without the kubernetes client: plain credentials, an http(s) server
    named, no proxy."""
    return plain is not None and plain.proxy is None and plain.host.startswith(("https://", "http://"))


def auth_headers(plain: kc.PlainContext) -> dict[str, str]:
    """The Authorization header every request of the context carries (none without credentials)."""
    return {"Authorization": plain.authorization} if plain.authorization else {}


def tls_context(plain: kc.PlainContext) -> ssl.SSLContext:
    """The context's TLS (cluster/tls.py: built from bytes, key material never on disk): its CA, else certifi's
    bundle as the `kubernetes` client uses; the client certificate; no verification with insecure-skip-tls-verify."""
    ca = _material(plain.ca)
    if ca is None and plain.verify:
        import certifi
        ca = Path(certifi.where()).read_bytes()
    return tls.client_context(ca, _material(plain.cert), _material(plain.key), verify=plain.verify)


def _material(credential: kc.Credential) -> bytes | None:
    if credential.data is not None:
        return credential.data
    return tls.read_pem(credential.path, "a kubeconfig certificate file") if credential.path else None


class FirstList:
    """The TUI's first Jobs list, read over the lean path on a thread of its own while the TUI imports Textual:
    the request and the server's answer overlap the imports instead of following them (startup_first_list_s,
    bench/startup.py). `ClusterAccess.list_watch` takes it for its first list of all Jobs and watches from its
    resourceVersion, as after any list. An error answer or an unreachable server is raised to it as its own list
    would raise it; when the context needs the full client there is no first list, and the reconciler lists as
    ever."""

    def __init__(self, args: argparse.Namespace) -> None:
        self._args = args
        self._result: ListResult | None = None
        self._error: ApiError | Unreachable | None = None
        self._done = threading.Event()
        self._taken = False

    @classmethod
    def start(cls, args: argparse.Namespace) -> FirstList:
        first = cls(args)
        threading.Thread(target=first._read, name="first-list", daemon=True).start()
        return first

    def _read(self) -> None:
        try:
            client = LeanClient.from_args(self._args)
            if client is not None:
                try:
                    self._result = client.list(JOBS)
                finally:
                    client.close()
        except (ApiError, Unreachable) as exc:
            self._error = exc
        except (RlarkError, OSError, ValueError):
            pass  # flags or a kubeconfig the full client refuses in its own words, before the TUI opens
        finally:
            self._done.set()

    def answered(self, timeout: float) -> bool:
        """Whether the read is over (listed, failed, or not possible), waiting up to `timeout` seconds."""
        return self._done.wait(timeout)

    def take(self, kind: Kind, namespace: str | None, label_selector: str | None, field_selector: str | None,
             timeout: float) -> ListResult | None:
        """The first list, once, for a list of all Jobs without selectors (waiting up to `timeout` for it to
        answer, then the caller lists itself); None for any other list, a second time, or when it has no
        answer. Its error answer or transport failure raises here."""
        if self._taken or kind is not JOBS or namespace or label_selector or field_selector:
            return None
        self._taken = True
        self.answered(timeout + CONNECT_TIMEOUT)
        result, error, self._result, self._error = self._result, self._error, None, None
        if error is not None:
            raise error
        return result
