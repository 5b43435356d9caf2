"""GPU use by role (issue 35 item 2), pure: min/mean/max over each role's GPUs and the imbalance note with RLinf's
component placement, as RLinf #319 and #712 describe (some GPUs above 90 %, the rest under 20 %)."""

from __future__ import annotations

from rlark_tui.telemetry.balance import by_role, imbalance, placement_text
from rlark_tui.telemetry.sample import PodUsage, usage_sample


def pod(name: str, *utils: float) -> PodUsage:
    return usage_sample(name, 0.0, tuple((i, f"GPU-{i}", u, 1024.0 * (i + 1), 81559.0)
                                     for i, u in enumerate(utils)))


def test_rows_and_the_imbalance_note_with_the_placement():
    rows = by_role({"actor": [pod("a0", 91, 95), pod("a1", 93, 93)], "rollout": [pod("r0", 3, 5)],
                    "env": [usage_sample("e0", 0.0, ()), None]})
    actor, rollout, env = rows
    assert (actor.pods, actor.gpus, actor.util.low, actor.util.mean, actor.util.high) == (2, 4, 91, 93, 95)
    assert (actor.memory.low, actor.memory.high) == (1024.0, 2048.0)
    assert (rollout.util.mean, env.pods, env.gpus, env.util) == (4, 2, 0, None)
    placement = {"actor": "0-3", "rollout": {"node_group": "node", "placement": "4-7"}, "env": True}
    assert imbalance(rows, placement) == "rollout GPUs at 4 % while actor at 93 % (placement: actor 0-3, rollout 4-7)"
    assert placement_text("0-7") == "" and imbalance(rows) == "rollout GPUs at 4 % while actor at 93 %"


def test_no_note_under_70_points_or_with_one_measured_role():
    assert imbalance(by_role({"actor": [pod("a", 80)], "rollout": [pod("r", 11)]})) is None
    assert imbalance(by_role({"actor": [pod("a", 99)], "rollout": [None]})) is None


def test_the_imbalance_note_is_one_short_line_whatever_the_roles_and_placement_say():
    """Issue 33, a fourteenth round: the note quotes the roles' names (the Job author's RLARK_TASK_ROLE) and
    RLinf's placement (the resolved config in the Header log, the Job's output), and `rlark top job` printed it
    through `clean`, which keeps a line break: a role 'rollout<LF>imbalance: none' forged a line of its own, and a
    placement of 100,000 components was a line as long. The note is one line of at most NOTE_CHARS."""
    from rlark_tui.telemetry.balance import NOTE_CHARS

    rows = by_role({"actor": [pod("a0", 93)], "rollout\nimbalance: none\u202e": [pod("r0", 4)]})
    placement = {f"c{i}\n": "0-3" for i in range(100_000)}
    note = imbalance(rows, placement)
    assert note.startswith("rollout\\nimbalance: none\\u202e GPUs at 4 % while actor at 93 % (placement: c0\\n 0-3")
    assert note.isprintable() and len(note) <= NOTE_CHARS


def test_the_imbalance_note_reads_only_the_components_of_the_placement_it_shows():
    """The note shows NOTE_CHARS of the placement, and it joined and scanned every component first: RLinf's
    placement is the Job's text, and one of 100,000 components was a line of 1.1 MB built for 300 characters
    (0.2 s of the UI thread at each draw of the Workers tab). It reads the components that fill the note, and one
    more, and is the same note (here of 1,000 components, 11 KB)."""
    from rlark_tui.telemetry.balance import NOTE_CHARS
    from rlark_tui.text.sinks import one_line

    read: list[str] = []

    class Placement(dict):
        def items(self):
            for item in super().items():
                read.append(item[0])
                yield item

    rows = by_role({"actor": [pod("a0", 93)], "rollout": [pod("r0", 4)]})
    placement = Placement({f"c{i}\n": {"placement": "0-3"} for i in range(1000)})
    note = imbalance(rows, placement)
    whole = one_line(f"rollout GPUs at 4 % while actor at 93 % (placement: {placement_text(dict(placement))})")
    assert note == whole[:NOTE_CHARS - 1] + "…"
    assert len(read) < 50, len(read)
