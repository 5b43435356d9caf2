"""The run check (C0–C10): evidence about one Job in, six rows of pass / fail / pending out, rendered as a record.

Pure except `gather`, `probe` and `records`: the I/O edge that collects evidence and saves records.
"""

from rlark_tui.checks.evaluate import evaluate, with_hand_over
from rlark_tui.checks.evidence import (
    MainContainer,
    OutputFile,
    OutputProbe,
    PodEvent,
    PodLog,
    RayStatus,
    RunEvidence,
)
from rlark_tui.checks.refs import resolve
from rlark_tui.checks.render import conclusion, to_json, to_json_text, to_markdown, to_text
from rlark_tui.checks.report import STAGES, CheckReport, CheckRow, EvidenceItem, HandOver, Reason

__all__ = [
    "STAGES", "CheckReport", "CheckRow", "EvidenceItem", "HandOver", "MainContainer", "OutputFile",
    "OutputProbe", "PodEvent", "PodLog", "RayStatus", "Reason", "RunEvidence", "conclusion", "evaluate",
    "resolve", "to_json", "to_json_text", "to_markdown", "to_text", "with_hand_over",
]
