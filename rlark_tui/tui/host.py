"""AppHost: what RlarkApp's mixins (tui/work.AppWork, tui/console.ConsoleViews) use of the app, declared for the
type checker: Textual's App and the attributes and methods RlarkApp adds. At run time it is `object`: the mixins
stay plain classes and App is RlarkApp's own base."""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App

    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.flow.actions import Actions
    from rlark_tui.flow.services import Intents
    from rlark_tui.local.acks import AckFile
    from rlark_tui.view.index import SnapshotIndex

    class AppHost(App[int]):
        access: ClusterAccess | None
        actions: Actions
        intents: Intents
        ack_file: AckFile

        @property
        @abstractmethod
        def index(self) -> SnapshotIndex | None: ...

        @abstractmethod
        def _base_screen(self) -> None: ...

        @abstractmethod
        def _refuse_readonly(self, what: str) -> bool: ...
else:
    AppHost = object
