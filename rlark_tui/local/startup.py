"""rlark's start-up measures and every other touch of the garbage collector, all in this one place. Each stays only while `bench/` shows a gain a user sees (the
README's performance section has the A/B figures); tests/test_startup.py holds what each does.

- **The cycle collector paused** while a one-shot read is printed (`rlark get`) and while the TUI imports and
  paints its first list: those make only long-lived objects, and the collector's passes over them cost the first
  list (bench/startup.py) and `get` (bench/cli_get.py) a few tens of milliseconds. It is resumed whatever ends them.
- **The `kubernetes` package entered without its `__init__`**, which imports `kubernetes.config`, whose kubeconfig
  loader pulls in google-auth, requests-oauthlib and pydantic even for a plain token or client-certificate context.
  Every command that reads over the full client (`rlark logs`, `describe`, the TUI's reconciler) gains that time.
- **orjson imported with Ctrl-C held** (`import_native`): its module init imports Python modules and does not check
  that they came, so a Ctrl-C in those milliseconds (a KeyboardInterrupt in place of a module) was a segmentation
  fault, not exit 130. Not a speed measure: it stays while orjson's init does so.
- **Long-lived objects frozen** after the TUI (re)lists many Jobs (bench/tui.py): moved out of the collector's
  view, or its full passes over tens of thousands of Pods stall the UI.
- **Large blocks given back** (`give_back_large_blocks`, glibc): its malloc raises its mmap threshold to the size
  of each large block freed (up to 32 MiB), so once an answer (a list of 5,000 Jobs is 4 MB, of 50,000 Pods 32 MB)
  has been decoded and freed, every later block below that size (the next answers, orjson's buffers) comes from
  the heaps of the threads, and what they free stays in the process's RSS. The TUI holds the threshold at glibc's
  default once its first list is painted (ctypes, which the reads after it load anyway, is not imported before):
  bench/startup.py's list_rss_mb, 5,000 Jobs / 50,000 Pods, 282 → 271 MB.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import importlib.util
import signal
import sys
from collections.abc import Iterator


def enter_kubernetes_lazily() -> None:
    """Register the `kubernetes` package (its path, not its `__init__`) unless it is imported already. `rlark`'s
    entry point (cli.main) calls it before anything imports the client; submodules import as usual afterwards
    (`from kubernetes import config` still works); only attributes the `__init__` would have set without an import
    (`kubernetes.config` after a bare `import kubernetes`) are missing until imported."""
    if "kubernetes" in sys.modules:
        return
    spec = importlib.util.find_spec("kubernetes")
    if spec is None or spec.submodule_search_locations is None:
        return
    sys.modules["kubernetes"] = importlib.util.module_from_spec(spec)


NATIVE = ("orjson",)
"""Extension modules whose init a KeyboardInterrupt crashes (see the module's docstring)."""


def import_native() -> None:
    """Import NATIVE with SIGINT blocked: a Ctrl-C meanwhile waits, and comes as KeyboardInterrupt once they are in.
    `rlark`'s entry point (cli.main) calls it first, on its one thread; anything else imports them as usual."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        for name in NATIVE:
            importlib.import_module(name)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def pause_collector() -> None:
    """Pause the cycle collector for a start (resume_collector ends it; reference counting still frees)."""
    gc.disable()


def resume_collector() -> None:
    """End a pause_collector (idempotent: the TUI resumes on its first list and again at its end)."""
    gc.enable()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cycle collector paused for the block, and resumed after it only if it ran before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


LARGE_BLOCK_BYTES = 128 * 1024
"""Blocks of at least this size are mapped on their own and given back when freed (glibc's default, held fixed)."""
_M_MMAP_THRESHOLD = -3  # glibc's malloc.h


@functools.cache
def give_back_large_blocks() -> None:
    """Hold glibc's mmap threshold at LARGE_BLOCK_BYTES (see the module's docstring), once a process; a no-op on
    another C library (musl's mallopt does nothing; macOS has none)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES)


def freeze_long_lived() -> None:
    """Move every object alive now out of the collector's view (gc.freeze; reference counting still frees them)."""
    gc.freeze()
