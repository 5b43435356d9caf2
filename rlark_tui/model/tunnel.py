"""OpenTunnel: a local tunnel the TUI opened (`F`) and the URL it serves, as the tunnels screen shows it.

Pure: podshell.open_tunnels makes them; screens/tunnels.py renders them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class OpenTunnel:
    label: str
    url: str
