"""urllib3's pools with every answer's head read within its time bound: their connections make
http.HeadBoundResponse, as the lean path's KeptConnection does. Imported with urllib3, by the first request
of an Http, tls.pool_manager and a plain-HTTP ApiClient (kubeconfig.api_client)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import urllib3
from urllib3 import poolmanager
from urllib3.connection import HTTPConnection, HTTPSConnection

from rlark_tui.cluster.http import HeadBoundResponse

if TYPE_CHECKING:
    from kubernetes import client as k8s


class _Connection(HTTPConnection):
    response_class = HeadBoundResponse


class _TLSConnection(HTTPSConnection):
    response_class = HeadBoundResponse


class _Pool(urllib3.HTTPConnectionPool):
    ConnectionCls = _Connection


class _TLSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _TLSConnection


def head_bound(manager: urllib3.PoolManager) -> urllib3.PoolManager:
    """`manager` (a PoolManager or ProxyManager) making pools of head-bound connections. A SOCKS manager keeps its
    own pools (PySocks' connections)."""
    if manager.pool_classes_by_scheme is poolmanager.pool_classes_by_scheme:
        manager.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}
    return manager


def plain_client(configuration: k8s.Configuration) -> k8s.ApiClient:
    """A kubernetes ApiClient of a plain-HTTP server (no TLS context to share), its pool's heads bounded."""
    from kubernetes import client as k8s

    client = k8s.ApiClient(configuration)
    client.rest_client.pool_manager = head_bound(client.rest_client.pool_manager)
    return client
