"""rlark stacks' pure part: py-spy dumps as Ray 2.60's py-spy 0.4.3 prints them, grouped, the odd rank named."""

from __future__ import annotations

import json

import pytest

from rlark_tui.model.fixed_commands import FixedCommandError, argv
from rlark_tui.telemetry import stacks
from rlark_tui.text.redact import secret_values
from rlark_tui.text.sanitize import clean

PLUMBING = """\
    _inject_tracing_into_class.<locals>.span_wrapper.<locals>._resume_span (ray/util/tracing/tracing_helper.py:487)
    EmbodiedFSDPActor.run_training (fsdp_actor.py:{line})
    FunctionActorManager._make_actor_method_executor.<locals>.actor_method_executor (ray/_private/function_manager.py:740)
    Worker.main_loop (ray/_private/worker.py:1069)
    <module> (ray/_private/workers/default_worker.py:323)
Thread 28538 (idle): "PythonGCThread"
    Condition.wait (threading.py:331)
"""


def dump(pid: int, inner: str, line: int = 212) -> str:
    return (f"Process {pid}: ray::EmbodiedFSDPActor.run_training\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
            f"Thread {pid} (idle): \"MainThread\"\n{inner}" + PLUMBING.format(line=line))


WAIT = "    Condition.wait (threading.py:331)\n    Event.wait (threading.py:629)\n    allreduce (collective.py:40)\n"
ELSEWHERE = "    next_batch (data/loader.py:88)\n"


def workers(odd: int = 5, ranks: int = 8) -> list[stacks.Worker]:
    return [stacks.Worker(f"ActorGroup:{r}", "EmbodiedFSDPActor", 100 + r, f"job-actor-{r // 2}", f"node-{r // 2}",
                          stacks.parse_dump(dump(100 + r, ELSEWHERE if r == odd else WAIT, line=212 + r)))
            for r in range(ranks)]


def test_a_dump_keeps_the_main_thread_frames_without_rays_plumbing():
    parsed = stacks.parse_dump(dump(28499, WAIT))
    assert parsed.pid == 28499 and parsed.title == "ray::EmbodiedFSDPActor.run_training"
    assert [str(f) for f in parsed.main.frames] == [
        "Condition.wait (threading.py:331)", "Event.wait (threading.py:629)", "allreduce (collective.py:40)",
        "EmbodiedFSDPActor.run_training (fsdp_actor.py:212)"]
    assert [t.name for t in parsed.threads] == ["MainThread", "PythonGCThread"]


def test_ranks_group_by_function_and_file_and_the_odd_one_is_named_with_its_frame():
    found = stacks.group("job", "py-spy", workers())
    assert [g.count for g in found.groups] == [7, 1]
    assert [w.name for w in found.groups[1].workers] == ["ActorGroup:5"]
    assert stacks.outlier_line(found.outliers[0]) == \
        "ActorGroup:5 is elsewhere: next_batch (loader.py:88); 7 ranks wait in allreduce"
    shape = stacks.to_json(found)
    assert shape["outliers"] == [{"name": "ActorGroup:5", "frame": "next_batch (data/loader.py:88)"}]
    assert shape["groups"][0]["workers"][0] == {"name": "ActorGroup:0", "pid": 100, "pod": "job-actor-0",
                                                "node": "node-0"}
    assert shape["groups"][0]["frames"][2] == "allreduce (collective.py:40)"
    assert "ActorGroup:5 is elsewhere" in stacks.render(found).splitlines()[1]


def test_ranks_in_step_have_no_outlier_and_a_failed_pod_says_why():
    errors = [stacks.PodError("job-actor-3", stacks.dump_failure(127, "", "py-spy: not found"))]
    found = stacks.group("job", "py-spy", workers(odd=-1), errors)
    assert found.outliers == [] and stacks.summary(found) == \
        "all 8 ranks of EmbodiedFSDPActor are in Condition.wait (threading.py:331)"
    assert "SYS_PTRACE" not in found.errors[0].reason and "ray[default]" in found.errors[0].reason
    assert "SYS_PTRACE" in stacks.dump_failure(1, "", "Error: Operation not permitted (os error 1)")


def test_the_fixed_dump_takes_only_a_process_id():
    assert argv("py-spy-dump", "4242")[-1] == "4242"
    for bad in ("--native", "1 2", "", "١٢"):
        with pytest.raises(FixedCommandError):
            argv("py-spy-dump", bad)


TOKEN = "hf_Zq7RkV2pW9xT4mN8bL3cY6dF1gH5jK0s"
JOB = {"metadata": {"name": "job"}, "spec": {"tasks": [{"name": "actor", "kubernetes": {"workload": {"template": {
    "spec": {"containers": [{"name": "main", "env": [{"name": "WANDB_RUN_SECRET", "value": "plainly-s3cret-42"},
                                                     {"name": "HF_TOKEN", "value": TOKEN}]}]}}}}}]}}


def test_what_rlark_stacks_prints_is_cleaned_and_the_jobs_secrets_masked():
    hostile = ("    read_with_plainly-s3cret-42 (data/fetch.py:12)\n"
               "    next_batch (data/\x1b]52;c;aGk=\x07loader.py:88)\n")
    found = stacks.group("job", "py-spy", workers(odd=5)[:5] + [stacks.Worker(
        "ActorGroup:5", "EmbodiedFSDPActor", 105, "job-actor-2", "node-\x1b[2J2",
        stacks.parse_dump(dump(105, hostile).replace('"PythonGCThread"', f'"gc {TOKEN}"')))],
        [stacks.PodError("job-actor-3", stacks.dump_failure(1, "", f"Error: bad token {TOKEN}\x1b[31m"))],
        all_threads=True)
    shown = stacks.masked(found, secret_values(JOB))
    text, shape = stacks.render(shown), json.dumps(stacks.to_json(shown))
    for line in text.splitlines():
        assert clean(line) == line, line
    assert "\x1b" not in shape and "\\u001b" not in shape
    for secret in (TOKEN, "plainly-s3cret-42"):
        assert secret not in text and secret not in shape
    assert "ActorGroup:5 is elsewhere: next_batch (loader.py:88); 5 ranks wait in allreduce" in text
    assert "    read_with_*** (data/fetch.py:12)" in text
    assert "  thread gc *** (idle)" in text
    assert "job-actor-3: py-spy failed (1): Error: bad token ***" in text
    assert json.loads(shape)["groups"][1]["workers"] == [{"name": "ActorGroup:5", "pid": 105, "pod": "job-actor-2",
                                                          "node": "node-2"}]


def test_a_named_actor_with_line_breaks_stays_on_its_lines():
    # Ray names an actor whatever the Job's code passes (Actor.options(name=...)): a name with a line break forged
    # a frame under the group's line, and the class of another group, in `rlark stacks` and the Stacks screen
    forged = "ActorGroup:5\n    forged_frame (ok.py:1)\n2 × Fine\u2028"
    found = stacks.group("job", "py-spy", workers(odd=5)[:5] + [stacks.Worker(
        forged, "EmbodiedFSDPActor\nx", 105, "job-actor-2", "node-2", stacks.parse_dump(dump(105, ELSEWHERE)))])
    text = stacks.render(stacks.masked(found))
    assert "forged_frame" not in "".join(line for line in text.splitlines() if line.startswith("    "))
    assert "1 × EmbodiedFSDPActor\\nx: ActorGroup:5\\n    forged_frame (ok.py:1)\\n2 × Fine\\u2028" in text, text


def test_a_dump_is_parsed_to_its_first_lines():
    """A seventh round, a hostile Ray head: a worker's 4 MiB traceback of frames was parsed whole, 60,000 Frames
    per rank for thousands of ranks. Its first MAX_DUMP_LINES lines are parsed."""
    text = dump(7, "inner") + "".join(f"    f{i} (x.py:{i})\n" for i in range(3 * stacks.MAX_DUMP_LINES))
    parsed = stacks.parse_dump(text)
    assert parsed is not None and sum(len(t.frames) for t in parsed.threads) < stacks.MAX_DUMP_LINES


def test_ranks_whose_dumps_all_differ_show_in_a_bounded_number_of_lines():
    """Issue 33, a ninth round, a hostile Pod or Ray head: 20 ranks whose dumps each differ in 5,000 frames were
    100,000 lines of `rlark stacks` and of the Stacks screen, 12 s of the TUI's UI thread at 80x24 (1,024 ranks: 5
    million lines). A thread keeps its MAX_FRAMES most recent frames, and the screen and the CLI show the first
    MAX_GROUPS_SHOWN groups and MAX_OUTLIERS_SHOWN odd ranks; the rest is counted in one line each."""
    deep = [stacks.Worker(f"ActorGroup:{r}", "EmbodiedFSDPActor", 100 + r, "p", "n", stacks.parse_dump(dump(
        100 + r, "".join(f"    f{r}_{i} (file{r}.py:{i})\n" for i in range(300))))) for r in range(40)]
    found = stacks.masked(stacks.group("job", "py-spy", deep))
    assert found.groups[0].frames[0].function == "f0_0" and found.groups[0].more == 301 - stacks.MAX_FRAMES
    lines = stacks.render(found).splitlines()
    assert len(lines) < (stacks.MAX_FRAMES + 3) * stacks.MAX_GROUPS_SHOWN + stacks.MAX_OUTLIERS_SHOWN + 10
    assert "    … 101 more frames" in lines and "… 7 more ranks elsewhere (-o json lists them)" in lines
    assert lines[-1] == "… 8 more groups of 8 ranks (-o json lists them)"
    assert len(json.loads(json.dumps(stacks.to_json(found)))["groups"]) == 40


def test_frames_of_huge_names_are_shown_cut_and_a_dump_is_read_to_a_bound():
    """Issue 33, round H33, a hostile Ray head or Pod (a py-spy on its PATH, or a function named by the Job's
    code): Ray's /worker/traceback answers up to 4 MiB a worker, and every frame, thread and actor name was kept and
    shown whole: 32 ranks of four 1 MB frame names were 190 MB of text for the Stacks screen, 13 s of CPU to mask,
    and 6 MB in a stalled Job's alert evidence. A dump is parsed to its first MAX_DUMP_CHARS characters (the Pod
    route's own bound) and each name shown to NAME_CHARS, the rest counted."""
    long = "".join(f"    {'f' * 50_000}{i} (data/{'d' * 9_000}.py:{i})\n" for i in range(4))
    ranks = [stacks.Worker(f"ActorGroup:{r}{'r' * 50_000}", "EmbodiedFSDPActor", 100 + r, "p" * 50_000, "n",
                           stacks.parse_dump(dump(100 + r, long.replace("f", "gf"[r % 2])))) for r in range(8)]
    found = stacks.masked(stacks.group("job", "ray-dashboard", ranks))
    text = stacks.render(found)
    assert max(map(len, text.splitlines())) < 10 * stacks.NAME_CHARS, max(map(len, text.splitlines()))
    assert len(text) < 100_000 and len(stacks.summary(found)) < 12 * stacks.NAME_CHARS
    assert f"    {'f' * stacks.NAME_CHARS}… (49,701 more characters) (data/" in text
    whole = stacks.parse_dump(dump(7, f"    {'f' * 4 * 2**20} (x.py:1)\n    next_batch (loader.py:88)\n"))
    assert whole is not None and all(len(str(frame)) < stacks.MAX_DUMP_CHARS for frame in whole.main.frames)


def test_why_a_pod_gave_no_stack_is_masked_whole_then_cut_and_keeps_its_advice():
    """Follows the name bound above: a Pod's reason was cut at 200 characters before masking (py-spy's last line, Ray's
    answer, the exec's error), so a secret across the cut showed its first characters, and then at NAME_CHARS after
    masking, so an exec refused for a long reason lost how to enable stacks (`rlark config`). A reason is masked
    whole and cut to REASON_CHARS."""
    from rlark_tui.raydash.stacks import EXEC_REFUSED

    cut_token = stacks.dump_failure(1, "", "Error: " + "x" * 185 + TOKEN)
    refused = EXEC_REFUSED.format(why="cannot reach the data plane " + "y" * 200)
    found = stacks.group("job", "py-spy", [], [stacks.PodError("job-actor-3", cut_token),
                                               stacks.PodError("job-actor-4", refused)])
    text = stacks.render(stacks.masked(found, secret_values(JOB)))
    assert TOKEN[:4] not in text and "***" in text, text
    assert text.rstrip().endswith("or give rlark a route to the Pods (`rlark config`)"), text
    huge = stacks.masked(stacks.group("job", "py-spy", [], [stacks.PodError("p", "z" * 100_000)]))
    assert len(huge.errors[0].reason) < stacks.REASON_CHARS + 40
