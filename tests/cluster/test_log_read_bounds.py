"""Issue 33, one way to read an input: the last log reads that held lines whatever their size (a data plane may
answer lines of 16 MiB, http.MAX_LINE_BYTES) hold at most a byte bound, and say so in one line where their result
is shown."""

from __future__ import annotations

import json

from rlark_tui.cluster import checkpoints, logs
from tests.cluster.seeding import ROLES, at, seed_running_job, write_log

LONG = "x" * (400 << 10)
CONFIG = json.dumps({"cluster": {"num_nodes": 1}, "runner": {"task_type": "embodied", "logger": {
    "log_path": "/out", "experiment_name": "ppo"}}}, indent=2).splitlines()


def test_the_resolved_config_is_looked_for_within_a_byte_bound_and_the_checkpoints_say_so(rl, sb, monkeypatch):
    """The resolved config was looked for in the Header log's first 20,000 lines whatever their size: up to 320 GiB
    held by rlark checkpoints, rlark resume and the Checkpoints tab. The read stops before the line that would pass
    checkpoints.CONFIG_BYTES (here 1 MiB; a real RLinf prints its config at start-up, far within its 64 MiB), and
    the one line that says no config was found says where the read stopped, with the bound."""
    pods = seed_running_job(sb, "ckpt-bound", ROLES)
    header = pods["actor"]
    write_log(sb, *header, [LONG] * 3, when=at(1))
    write_log(sb, *header, CONFIG, when=at(2))
    assert checkpoints.CONFIG_BYTES >= 64 << 20
    monkeypatch.setattr(checkpoints, "CONFIG_BYTES", 2 << 20)
    within = rl("checkpoints", "ckpt-bound")  # found: the listing in the Pod is what fails in this sandbox
    assert within.code == 1 and "exec in pod" in within.err and "config" not in within.err
    monkeypatch.setattr(checkpoints, "CONFIG_BYTES", 1 << 20)
    result = rl("checkpoints", "ckpt-bound")
    assert result.code == 1 and result.out == ""
    assert result.err == (f"error: checkpoints: the Header log of ckpt-bound ({header[1]}) has no resolved RLinf "
                          "config in its first 2 lines, where its read stopped to hold at most 1 MiB (the read's "
                          "bound), so no checkpoint location\n")



def test_top_job_says_in_one_line_why_it_has_no_placement_for_its_imbalance_note(rl, sb, monkeypatch):
    """Issue 33, one way to read an input: `rlark top job` names RLinf's placement (the resolved config at the start
    of the Header log) in its imbalance note, and said nothing when that read failed: a log whose config lies past
    checkpoints.CONFIG_BYTES (here 1 MiB), or a data plane that answers the log read with an error. It prints its
    table and says why in one line on stderr, with the bound, as rlark checkpoints does."""
    pods = seed_running_job(sb, "top-bound", ROLES)
    header = pods["actor"]
    write_log(sb, *header, [LONG] * 3, when=at(1))
    write_log(sb, *header, CONFIG, when=at(2))
    monkeypatch.setattr(checkpoints, "CONFIG_BYTES", 1 << 20)
    result = rl("top", "job", "top-bound")
    assert result.code == 0 and [line.split()[0] for line in result.out.splitlines()] == ["ROLE", "actor", "env"]
    assert result.err == (f"top job: the Header log of top-bound ({header[1]}) has no resolved RLinf config in its "
                          "first 2 lines, where its read stopped to hold at most 1 MiB (the read's bound), so no "
                          "placement in the imbalance note\n")
    monkeypatch.setattr(checkpoints, "CONFIG_BYTES", 2 << 20)
    assert rl("top", "job", "top-bound").err == ""  # found within the bound
    with sb.faults.cleared() as faults:
        faults.fail(500, "get", "pods/log", message="the log\nimbalance: none")
        failed = rl("top", "job", "top-bound")
    assert failed.code == 0 and failed.out.startswith("ROLE")
    assert failed.err.count("\n") == 1 and failed.err.startswith("top job: the Header log of top-bound: "), failed.err
    assert failed.err.endswith(", so no placement in the imbalance note\n"), failed.err


CRASH = ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."]


def test_diagnose_holds_a_real_logs_tail_cut_to_what_it_judges_and_says_when_the_log_is_longer(rl, sb, monkeypatch):
    """Issue 33, one way to read an input: rlark diagnose held the Header log's last 20,000 lines per container
    instance within 32 MiB whatever it judged of them, below what a kubelet's tail of 16 KiB entries can be, so a
    genuine log of long lines was judged on its newest part; and a log longer than the lines it asks for was judged
    on them without a word. Each line is held cut to what the diagnosis scans (diagnose.LINE_CHARS), the bound
    (here 1 MiB) holds that tail (40 lines of 64 KiB before the previous container's crash: 2.5 MiB as sent), and the
    kubelet is asked one line more than is judged: a log that has it is said longer in one note, the previous
    container's too (its 43 lines, of 64 KiB, were 7 in the kubelet's tail of 21 entries, before http.TailRead)."""
    from rlark_tui.raydash import diagnose as reads

    cluster, pod = seed_running_job(sb, "diag-long", ROLES)["actor"]
    write_log(sb, cluster, pod, [f"{n} {'x' * (64 << 10)}" for n in range(40)], when=at(1))
    write_log(sb, cluster, pod, CRASH, when=at(2))
    sb.logs.end_instance(cluster, "rlark-system", pod, "main", 1)
    sb.logs.start_instance(cluster, "rlark-system", pod, "main")
    write_log(sb, cluster, pod, [f"step {n}" for n in range(30)], when=at(3))
    monkeypatch.setattr(reads, "HEADER_BYTES", 1 << 20)
    whole = rl("diagnose", "diag-long")
    assert whole.code == 0 and whole.out.startswith("first failure: driver failed first (cuda-oom)"), whole.out
    assert "Header log" not in whole.err, whole.err
    monkeypatch.setattr(reads, "HEADER_TAIL", 20)
    part = rl("diagnose", "diag-long")
    said = [line for line in part.err.splitlines() if "Header log" in line]
    assert said == [f"note: the Header log{which}: longer than its last 20 lines, which are what was read and judged "
                    "(diagnose's tail): a failure before them is not" for which in (" (previous container)", "")], part.err


SHORTER = "x" * (10 << 10)
"""A line the runtime writes as one entry (a longer one is entries of 16 KiB, and tailLines counts entries)."""


def _long_previous_instance(sb, name: str) -> str:
    """A one-Pod Job whose previous instance wrote five lines of 10 KiB and a short one after them; its Pod."""
    cluster, pod = seed_running_job(sb, name, [ROLES[0]])["actor"]
    write_log(sb, cluster, pod, [f"{n}{SHORTER}" for n in range(5)] + ["last"], when=at(1))
    sb.logs.end_instance(cluster, "rlark-system", pod, "main", 1)
    sb.logs.start_instance(cluster, "rlark-system", pod, "main")
    return pod


def test_rlark_logs_tail_holds_its_byte_bound_and_says_what_it_left_out(rl, sb, monkeypatch):
    """`rlark logs --tail N` (and -f's first read) kept the last N lines whatever their size, and a data plane may
    answer lines of 16 MiB (http.MAX_LINE_BYTES): N × 16 MiB. It holds the newest within http.tail_bytes(N), what a
    kubelet's N lines may take (so the sandbox's never reach it: here 32 KiB), and says on stderr, in one line, how
    many it left out, with the bound."""
    pod = _long_previous_instance(sb, "logs-bound")
    whole = rl("logs", "logs-bound", "--previous", "--tail", "6")
    assert whole.code == 0 and len(whole.out.splitlines()) == 6 and whole.err == ""
    monkeypatch.setattr(logs, "tail_bytes", lambda lines: 32 << 10)
    result = rl("logs", "logs-bound", "--previous", "--tail", "6")
    assert result.code == 0
    assert result.out.splitlines() == [f"[actor/{pod}] {n}{SHORTER}" for n in (2, 3, 4)] + [f"[actor/{pod}] last"]
    assert result.err == (f"-- [actor/{pod}] its last 4 lines read and 2 before them left out, to hold at most "
                          "32 KiB (the read's bound)\n")


def test_rlark_logs_without_tail_holds_a_byte_bound_per_pod_and_says_what_it_left_out(rl, sb, monkeypatch):
    """`rlark logs JOB` without --tail (or with only --since) read each Pod's whole log, or the whole window, into
    memory before merging the Pods' lines by time: a data plane answering lines of 16 MiB, or without end, made
    rlark hold it all. It holds the newest of each Pod's lines within logs.WHOLE_LOG_BYTES (what a kubelet's current
    log file of 10 MiB may take, so a real log is never cut: here 32 KiB) and says on stderr, in one line per Pod
    that reached it, how many it left out, with the bound; a Pod within it is read whole."""
    pods = seed_running_job(sb, "logs-whole", ROLES)
    actor, env = pods["actor"][1], pods["env"][1]
    write_log(sb, *pods["actor"], [f"{n}{SHORTER}" for n in range(5)] + ["last"])
    write_log(sb, *pods["env"], ["short"])
    assert logs.WHOLE_LOG_BYTES >= 47 << 20  # a kubelet's current file of 10 MiB, as strings at most
    whole = rl("logs", "logs-whole")
    assert whole.code == 0 and len(whole.out.splitlines()) == 7 and whole.err == ""
    monkeypatch.setattr(logs, "WHOLE_LOG_BYTES", 32 << 10)
    kept = [f"[actor/{actor}] {n}{SHORTER}" for n in (2, 3, 4)] + [f"[actor/{actor}] last", f"[env/{env}] short"]
    for window in ((), ("--since", "1h")):
        result = rl("logs", "logs-whole", *window)
        assert result.code == 0 and result.out.splitlines() == kept
        assert result.err == (f"-- [actor/{actor}] its last 4 lines read and 2 before them left out, to hold at "
                              "most 32 KiB (the read's bound)\n")


async def test_the_log_panes_read_of_a_previous_instance_holds_its_byte_bound_and_says_so(sb, env, monkeypatch):
    """The log pane's first read of a previous instance (`p`) kept its last TAIL_LINES lines whatever their size
    (1,000 × 16 MiB) before the pane's own MAX_CHARS: it holds the newest within http.tail_bytes(TAIL_LINES) (here
    32 KiB) and the pane says in one notice line how many it left out."""
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.model.logtarget import Scope
    from rlark_tui.screens.logs import LogScreen
    from rlark_tui.tui.app import RlarkApp
    from rlark_tui.widgets.log_pane import NOTICE, TEXT
    from tests.pilot import wait_for

    pod = _long_previous_instance(sb, "pane-bound")
    monkeypatch.setattr(logs, "tail_bytes", lambda lines: 32 << 10)
    access = ClusterAccess.open(str(sb.kubeconfig), sb.context)

    def shown(app) -> list[tuple[bool, str]]:
        if not (isinstance(app.screen, LogScreen) and app.screen.ready):
            return []
        return [(line[NOTICE], line[TEXT]) for line in app.screen.view.shown_lines]
    try:
        app = RlarkApp(access)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: app.index is not None and app.index.job("pane-bound"), "the Job")
            app.open_logs("pane-bound", Scope.ALL, previous=True)
            end = (True, f"-- [actor/{pod}] end of the previous instance of {pod}")
            await wait_for(pilot, lambda: end in shown(app), "the previous instance's end", show=shown)
            assert [text for notice, text in shown(app) if not notice] == [f"{n}{SHORTER}" for n in (2, 3, 4)] + [
                "last"]
            assert [text for notice, text in shown(app) if notice][-2:] == [
                f"-- [actor/{pod}] its last 4 lines read and 2 before them left out, to hold at most 32 KiB (the "
                "read's bound)", end[1]]
    finally:
        access.close()
        sb.store.delete("jobs", "pane-bound", "")


def test_the_resolved_config_is_looked_for_judging_each_block_of_the_log_once(rl, sb, monkeypatch):
    """The read judged every `{` block read so far again at each `}` line, a quadratic time in the lines read within
    its bounds: a Header log of 20,000 lines of `{` and `}` before the config (40 KB) held rlark checkpoints, resume
    and the Checkpoints tab's worker for minutes (4,000 lines: 20 s). Each block is judged once, when it closes, and
    the config after them is still found."""
    from rlark_tui.checks import logscan

    pods = seed_running_job(sb, "ckpt-blocks", ROLES)
    write_log(sb, *pods["actor"], ["{", "}"] * 200, when=at(1))
    write_log(sb, *pods["actor"], CONFIG, when=at(2))
    judged = []
    read = logscan.load_json
    monkeypatch.setattr(logscan, "load_json", lambda text, *args, **kw: judged.append(text) or read(text, *args, **kw))
    result = rl("checkpoints", "ckpt-blocks")
    assert result.code == 1 and "exec in pod" in result.err and "config" not in result.err  # found, then listed
    assert len(judged) == 201


LONGER = "y" * 40_000
"""A line the runtime writes as three entries (16 KiB, 16 KiB and the rest), which tailLines counts as three."""


def test_rlark_logs_tail_of_long_lines_is_the_lines_asked_for_or_says_why_fewer(rl, sb, monkeypatch):
    """Issue 33, a twenty-fourth round (one way to read an input, a tail of long lines): the kubelet's tailLines
    counts the runtime's entries, and containerd writes a line of 40 KB as three, so `rlark logs --tail 100` (and
    every reader that asks a tail) showed 34 lines, the first of them the end of a cut one, and said nothing (here
    --tail 20 of 30 such lines). The log is read again with a larger tailLines until the lines asked for came
    (http.TailRead); where the reads it allows do not get them, it says so in one line."""
    from rlark_tui.cluster import http

    cluster, pod = seed_running_job(sb, "logs-long-lines", [ROLES[0]])["actor"]
    write_log(sb, cluster, pod, [f"{n:03} {LONGER}" for n in range(30)], when=at(1))
    assert sb.logs.read(cluster, "rlark-system", pod, "main", tail=20)[0].startswith("y")  # a cut line's end
    result = rl("logs", "logs-long-lines", "--tail", "20")
    assert result.code == 0 and result.err == ""
    assert result.out.splitlines() == [f"[actor/{pod}] {n:03} {LONGER}" for n in range(10, 30)]
    monkeypatch.setattr(http, "TAIL_READS", 1)
    short = rl("logs", "logs-long-lines", "--tail", "20")
    assert short.code == 0 and short.out.splitlines() == [f"[actor/{pod}] {n:03} {LONGER}" for n in range(24, 30)]
    assert short.err == (f"-- [actor/{pod}] its last 6 lines, fewer than the 20 asked: the kubelet counts a line "
                         "longer than 16 KiB as several of its tailLines, and 1 read (the last of tailLines=21) "
                         "held no more\n")


async def test_the_log_panes_first_lines_of_long_lines_are_the_lines_it_asks_for(sb, env, monkeypatch):
    """The log pane's first fill followed the log with tailLines=TAIL_LINES, which the kubelet counts in the
    runtime's 16 KiB entries: 100 asked of 40 KB lines showed 34, the first the end of a cut line (here 20 asked of
    30 such lines showed 7). The follow's first lines are read as a tail (http.TailRead, LogFollower._tail_first)
    and the follow goes on from them: the 20 lines asked, then a line written after.

    Then the pane is scrolled sideways. Each line is shown cut at SHOWN_CHARS, its row ending in the cut's note
    (`… [N more characters; ...]`), whose `…` rich has outside its single-cell set: so rich measured each such row's
    16 KiB a character at a time in Python, at each draw of a new row and each sideways step (0.4 s of the UI thread
    a step over a 50-row screenful; 1.3-1.5 s of CPU here for ten steps). The note is a segment of its own."""
    import re
    import time

    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.model.logtarget import Scope
    from rlark_tui.screens import logs as log_screen
    from rlark_tui.screens.logs import LogScreen
    from rlark_tui.tui.app import RlarkApp
    from rlark_tui.widgets.log_pane import NOTICE, TEXT
    from tests.pilot import wait_for

    cluster, pod = seed_running_job(sb, "pane-long-lines", [ROLES[0]])["actor"]
    write_log(sb, cluster, pod, [f"{n:03} {LONGER}" for n in range(30)], when=at(1))
    monkeypatch.setattr(log_screen, "TAIL_LINES", 20)
    access = ClusterAccess.open(str(sb.kubeconfig), sb.context)

    def texts(app) -> list[str]:
        if not (isinstance(app.screen, LogScreen) and app.screen.ready):
            return []
        return [line[TEXT][:3] for line in app.screen.view.shown_lines if not line[NOTICE]]
    try:
        app = RlarkApp(access)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: app.index is not None and app.index.job("pane-long-lines"), "the Job")
            app.open_logs("pane-long-lines", Scope.ALL)
            await wait_for(pilot, lambda: "029" in texts(app), "the newest line", show=texts)
            write_log(sb, cluster, pod, ["030 after"], when=at(2))
            await wait_for(pilot, lambda: "030" in texts(app), "the line written after", show=texts)
            assert texts(app) == [f"{n:03}" for n in range(10, 31)]
            view = app.screen.view
            width = view.size.width
            spent = time.process_time()
            for step in range(10):
                view.scroll_to(x=100 * step, animate=False, immediate=True)
                rows = [view.render_line(y).text for y in range(view.size.height)]
            spent = time.process_time() - spent
            view.scroll_to(x=view.max_scroll_x, animate=False, immediate=True)
            ends = [view.render_line(y).text.rstrip() for y in range(view.size.height)]
    finally:
        access.close()
        sb.store.delete("jobs", "pane-long-lines", "")
    cut = re.compile(r"y … \[23,6\d\d more characters; ctrl\+s saves the whole line\]$")  # 40 KB cut at 16 KiB
    assert rows.count("y" * width) == 20 and sum(bool(cut.search(end)) for end in ends) == 20, (rows, ends)
    assert spent < 0.5, f"{spent:.2f} s of CPU for ten sideways steps of a screenful of cut lines"
