"""TLS for every endpoint rlark talks to: one `ssl.SSLContext` per endpoint, built from CA, certificate and key
*bytes*, shared by every request to it (urllib3 pools, the `kubernetes` ApiClient's pool, the exec WebSocket,
tunnels).

Key material never rests on disk: Python's `ssl` reads a certificate chain only from a path, so the certificate
and key go into an anonymous in-memory file (memfd, read through /proc/self/fd) that is closed as soon as
`load_cert_chain` returns; where memfd is missing, into a 0600 file in a 0700 directory unlinked right after.
Nothing is left for SIGTERM, SIGHUP or SIGKILL to leave behind, and no request can lose a file another is using.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import ssl
import tempfile
import threading
import warnings
import weakref
from typing import TYPE_CHECKING

from rlark_tui.errors import UsageError
from rlark_tui.local.fsutil import read_input

if TYPE_CHECKING:  # imported where used: the lean path of `rlark get` (cluster/lean.py) loads neither
    import urllib3
    from kubernetes import client as k8s

MAX_PEM_BYTES = 1 << 20
"""A CA bundle, certificate or key file larger than this is refused (a real one is a few KiB)."""


class TLSError(UsageError):
    """Certificate material rlark cannot use; the message is one line naming what is wrong."""


_contexts: dict[tuple, ssl.SSLContext] = {}
_contexts_lock = threading.Lock()
_ca_of: dict[int, tuple[bytes | None, bool]] = {}
"""id(context) -> (its CA, verify): contexts are kept for the process's life, so the ids stay theirs."""
_by_configuration: weakref.WeakKeyDictionary[k8s.Configuration, ssl.SSLContext] = weakref.WeakKeyDictionary()


def client_context(ca: bytes | None, cert: bytes | None = None, key: bytes | None = None,
                   verify: bool = True, what: str = "the client certificate") -> ssl.SSLContext:
    """The one context for this material: `ca` (PEM, None = the system CAs) verifies the server unless
    `verify` is False; `cert` and `key` (PEM) are the client's. Raises TLSError with one line."""
    ident = (_digest(ca), _digest(cert), _digest(key), bool(verify))
    with _contexts_lock:
        found = _contexts.get(ident)
        if found is not None:
            return found
        if verify:
            cadata = _pem_text(ca, "CERTIFICATE", "the CA certificate") if ca is not None else None
            context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=cadata)
        else:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if cert is not None or key is not None:
            if cert is None or key is None:
                raise TLSError(f"{what} needs both a certificate and its key")
            _load_chain(context, _pem_text(cert, "CERTIFICATE", what).encode(),
                        _pem_text(key, "PRIVATE KEY", f"the key of {what}").encode(), what)
        _contexts[ident] = context
        _ca_of[id(context)] = (ca, bool(verify))
        return context


def server_only(context: ssl.SSLContext) -> ssl.SSLContext:
    """The context that verifies servers as `context` does, without its client certificate (for another origin,
    which must not be sent the key's proof)."""
    ca, verify = _ca_of.get(id(context), (None, context.verify_mode != ssl.CERT_NONE))
    return client_context(ca, verify=verify)


def read_pem(path: str, what: str) -> bytes:
    """A PEM file's bytes, read with a cap; one line (exit 2) when it is missing, empty, too large or not PEM.
    `what` names it, e.g. `client key (--client-key)`."""
    try:
        data = read_input(path, what, MAX_PEM_BYTES)
    except UsageError as exc:
        raise TLSError(str(exc)) from None
    if not data.strip():
        raise TLSError(f"{what} {path}: the file is empty (a PEM file starts with -----BEGIN)")
    try:
        data.decode("ascii")
    except UnicodeDecodeError:
        raise TLSError(f"{what} {path}: binary data, not a PEM file (convert DER with `openssl x509 -inform der` "
                       "or `openssl pkey -inform der`)") from None
    if b"-----BEGIN " not in data:
        raise TLSError(f"{what} {path}: not a PEM file (no -----BEGIN line)")
    return data


def pool_manager(context: ssl.SSLContext, proxy: str | None = None, proxy_headers: dict | None = None,
                 **pool_args) -> urllib3.PoolManager:
    """A urllib3 pool that uses `context` (and no certificate files) for every HTTPS connection; through `proxy`
    (a kubeconfig's `proxy-url`: HTTP CONNECT, or SOCKS as the `kubernetes` client supports it) when given."""
    import urllib3

    verify = context.verify_mode != ssl.CERT_NONE
    pool_args.update(ssl_context=context, cert_reqs=ssl.CERT_REQUIRED if verify else ssl.CERT_NONE)
    if proxy and proxy.lower().startswith("socks"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # urllib3's DependencyWarning: the line below says it
                from urllib3.contrib.socks import SOCKSProxyManager
        except ImportError:
            raise UsageError(f"proxy-url {proxy}: a SOCKS proxy needs the PySocks package "
                             "(pip install pysocks)") from None
        return SOCKSProxyManager(proxy, headers=proxy_headers, **pool_args)
    if proxy:
        return urllib3.ProxyManager(proxy, proxy_headers=proxy_headers, **pool_args)
    return urllib3.PoolManager(**pool_args)


def api_client(configuration: k8s.Configuration, context: ssl.SSLContext) -> k8s.ApiClient:
    """A kubernetes ApiClient whose pool uses `context`; the configuration names no certificate files, and
    `context_of(configuration)` finds the context again (for the exec WebSocket, a tunnel, a copy)."""
    from kubernetes import client as k8s

    configuration.ssl_ca_cert = configuration.cert_file = configuration.key_file = None
    configuration.verify_ssl = context.verify_mode != ssl.CERT_NONE
    _by_configuration[configuration] = context
    proxy, configuration.proxy = configuration.proxy, None  # the client's own pool is replaced at once by ours
    try:
        client = k8s.ApiClient(configuration)
    finally:
        configuration.proxy = proxy
    return with_context(client)


def with_context(api_client: k8s.ApiClient) -> k8s.ApiClient:
    """`api_client` with its pool rebuilt around its configuration's context, when it has one (an ApiClient
    made from a configuration by other code, e.g. a copy for the exec WebSocket)."""
    context = context_of(api_client.configuration)
    if context is None:
        return api_client
    configuration = api_client.configuration
    pool_args: dict = {}
    if configuration.retries is not None:
        pool_args["retries"] = configuration.retries
    if configuration.tls_server_name:
        pool_args["server_hostname"] = configuration.tls_server_name
    if configuration.connection_pool_maxsize is not None:
        pool_args["maxsize"] = configuration.connection_pool_maxsize
    if configuration.socket_options is not None:
        pool_args["socket_options"] = configuration.socket_options
    proxy = None
    if configuration.proxy:
        from kubernetes.client.rest import should_bypass_proxies
        if not should_bypass_proxies(configuration.host, configuration.no_proxy or ""):
            proxy = configuration.proxy
    api_client.rest_client.pool_manager = pool_manager(context, proxy, configuration.proxy_headers, **pool_args)
    return api_client


def context_of(configuration: k8s.Configuration | None) -> ssl.SSLContext | None:
    """The context `api_client` built a client of this configuration with, if any."""
    if configuration is None:
        return None
    return _by_configuration.get(configuration)


def websocket_sslopt(configuration: k8s.Configuration) -> dict | None:
    """websocket-client's `sslopt` for this configuration's context (None: it has none)."""
    context = context_of(configuration)
    if context is None:
        return None
    options: dict = {"context": context}
    if configuration.tls_server_name:
        options["server_hostname"] = configuration.tls_server_name
    return options


def _digest(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _pem_text(data: bytes, kind: str, what: str) -> str:
    if len(data) > MAX_PEM_BYTES:
        raise TLSError(f"{what} is larger than {MAX_PEM_BYTES >> 20} MiB, not PEM")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise TLSError(f"{what} is not PEM text (binary data; DER must be converted to PEM)") from None
    if "-----BEGIN " not in text or kind not in text:
        raise TLSError(f"{what} is not a PEM {kind.lower()} (no -----BEGIN ...{kind}----- line)")
    return text


def _load_chain(context: ssl.SSLContext, cert: bytes, key: bytes, what: str) -> None:
    """Load certificate and key through an anonymous in-memory file (else a file unlinked at once)."""
    try:
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create("rlark-tls", os.MFD_CLOEXEC)
            try:
                view = memoryview(cert + b"\n" + key + b"\n")
                while view:
                    view = view[os.write(fd, view):]
                context.load_cert_chain(f"/proc/self/fd/{fd}")
            finally:
                os.close(fd)
            return
        directory = tempfile.mkdtemp(prefix="rlark-tls-")
        try:
            path = os.path.join(directory, "chain.pem")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(cert + b"\n" + key + b"\n")
            try:
                context.load_cert_chain(path)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    except ssl.SSLError as exc:
        reason = "its key does not match the certificate" if "KEY_VALUES_MISMATCH" in str(exc) else \
            f"not a usable certificate and key ({exc.reason or exc})"
        raise TLSError(f"{what}: {reason}") from None
