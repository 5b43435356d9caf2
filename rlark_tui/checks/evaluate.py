"""`evaluate(evidence) -> CheckReport`: the five checks, the summary row (C6) and the record's header facts (C8).

Pure: the same evidence and hand-over always give the same report.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any

from rlark_tui.checks import logscan, rules
from rlark_tui.checks.evidence import RunEvidence
from rlark_tui.checks.refs import show
from rlark_tui.checks.report import (
    STAGES,
    TITLES,
    CheckReport,
    CheckRow,
    EvidenceItem,
    HandOver,
    Reason,
    RecordFacts,
    Result,
)
from rlark_tui.text.patterns import SlowPatterns
from rlark_tui.text.redact import KnownSecrets, redact_lines, redact_text, secret_values

DECISIONS = MappingProxyType({
    "continue": "continue running",
    "stop": "stop (by an authorised person, after outputs persist)",
    "keep": "keep the Job for debugging",
})
OPERATOR = "the operator recording the check"
STOP_GUIDANCE = ("Stop only after outputs and checkpoints are persisted, then confirm the Job's Pods reach 0. "
                 "Stop scales replicas to 0; a later Start re-creates the processes and does not resume from a "
                 "checkpoint.")


def without_job_secrets(evidence: RunEvidence, known: KnownSecrets | None = None) -> RunEvidence:
    """The evidence with the Job's own secret env values (`known`, by default the Job's secret_values) masked in
    its logs and events (a run script that echoes `$WANDB_API_KEY` prints a value no pattern recognises, but the
    Job says it is a secret) and private keys masked across lines, however the read cut them (C8). Each line is
    redacted again as it is shown."""
    known = KnownSecrets(secret_values(evidence.job)) if known is None else known
    logs = tuple(replace(log, lines=tuple(redact_lines(log.lines, known, keys_only=True))) for log in evidence.logs)
    events = {ref: tuple(replace(event, message=known.mask(event.message)) for event in found)
              for ref, found in evidence.events.items()} if known else evidence.events
    return replace(evidence, logs=logs, events=events)


def evaluate(evidence: RunEvidence, hand_over: HandOver | None = None,
             slow: SlowPatterns | None = None) -> CheckReport:
    """The report of `evidence`; the launch record's patterns run under their budget, refused at once when `slow`
    (kept by whoever evaluates again and again) knows they overran it before."""
    known = KnownSecrets(secret_values(evidence.job))
    evidence = without_job_secrets(evidence, known)
    hand_over = hand_over or HandOver()
    recorder = (evidence.launch_record or {}).get("recorder")
    if not hand_over.recorder and isinstance(recorder, str) and recorder:
        hand_over = replace(hand_over, recorder=recorder)
    facts = rules._facts(evidence)
    rows = [
        rules.check_job(evidence),
        rules.check_pods(evidence, facts),
        rules.check_ray(evidence, facts, slow),
        rules.check_app(evidence, facts),
        rules.check_outputs(evidence, facts, slow),
    ]
    header = record_facts(evidence, facts)
    if known:
        rows = [masked_row(row, known) for row in rows]
        fields: dict[str, Any] = {name: known.mask_lines(value) if isinstance(value, str) else
                                  tuple(map(known.mask_lines, value)) for name, value in vars(header).items()}
        header = replace(header, **fields)
    rows.append(summarize(rows, hand_over, header))
    meta = evidence.job.get("metadata") if isinstance(evidence.job, dict) else None
    uid = meta.get("uid") if isinstance(meta, dict) else None
    return CheckReport(evidence.job_name, evidence.now, tuple(rows), header, hand_over,
                       uid if isinstance(uid, str) else "")


def masked_row(row: CheckRow, known: KnownSecrets) -> CheckRow:
    """The row with the Job's own secret values masked in every text it shows, line by line: a run script or an
    annotation that holds an env entry's value (`wandb login <WANDB_API_KEY's value>`) is quoted by the evidence,
    the header and the findings, where show masks only what looks like a secret."""
    def mask(text: str | None) -> str | None:
        return None if text is None else known.mask_lines(text)

    return replace(row, evidence=tuple(replace(item, value=known.mask_lines(item.value), expected=mask(item.expected))
                                       for item in row.evidence),
                   findings=tuple(replace(reason, message=known.mask_lines(reason.message)) for reason in row.findings),
                   notes=tuple(map(known.mask_lines, row.notes)))


def with_hand_over(report: CheckReport, hand_over: HandOver) -> CheckReport:
    """The same report with other hand-over fields: only the summary row changes (cheap, for live typing)."""
    rows = list(report.rows[:5])
    rows.append(summarize(rows, hand_over, report.facts))
    return replace(report, rows=tuple(rows), hand_over=hand_over)


def carry_settled(previous: CheckReport | None, report: CheckReport) -> CheckReport:
    """The new report with each of rows 1–5 keeping the time it first showed its present result (in a wait loop
    or a live view), so row 6 — and the conclusion — carry the time the last row settled, not the check time."""
    if previous is None or previous.job != report.job:
        return report
    rows = [replace(row, checked_at=old.checked_at) if old.result == row.result else row
            for row, old in zip(report.rows[:5], previous.rows[:5])]
    rows.append(summarize(rows, report.hand_over, report.facts))
    return replace(report, rows=tuple(rows))


def summarize(rows: list[CheckRow], hand_over: HandOver, facts: RecordFacts | None = None) -> CheckRow:
    """Check 6: fail when any of 1–5 failed; pass only when 1–5 pass and a recorder and a decision are recorded;
    else pending. Its time is when the last of rows 1–5 settled."""
    settled = max(row.checked_at for row in rows)
    items = tuple(EvidenceItem("check", f"check/{row.id}", row.result) for row in rows)
    findings: list[Reason] = []
    failing = [row for row in rows if row.result == "fail"]
    if failing:
        stages = [row.stage for row in failing if row.stage]
        earliest = min(stages, key=STAGES.index) if stages else None
        findings.append(Reason("fail", "failed: " + ", ".join(f"check {row.id}" for row in failing)
                                + (f"; start at the earliest failing stage: {earliest}" if earliest else ""),
                                earliest))
    for row in rows:
        for finding in row.findings:
            if finding.result == "pending":
                findings.append(Reason("pending", f"check {row.id}: {finding.message}",
                                        owner=finding.owner or rules.JOB_OWNER))
    notes = []
    if hand_over.decision:
        notes.append(f"decision: {DECISIONS[hand_over.decision]}")
        if hand_over.decision == "stop" and rows[4].result != "pass":
            notes.append("outputs are not confirmed persisted (check 5): do not stop yet")
    else:
        findings.append(Reason("pending", "decision not recorded (continue / stop / keep for debugging)",
                                owner=OPERATOR))
    if hand_over.recorder:
        notes.append(f"recorder: {hand_over.recorder}")
    else:
        findings.append(Reason("pending", "no recorder named", owner=OPERATOR))
    if facts is not None and facts.stop_condition:
        notes.append(f"agreed stop condition: {facts.stop_condition}")
    notes.append(("[x]" if hand_over.cleaned_up else "[ ]") + " temporary access and secrets cleaned up")
    if hand_over.contacts:
        notes.append("contacts: " + ", ".join(hand_over.contacts))
    if hand_over.retention:
        notes.append(f"retention: {hand_over.retention}")
    if hand_over.links:
        notes.append("follow-up: " + ", ".join(hand_over.links))
    if hand_over.notes:
        notes.append(f"notes: {hand_over.notes}")
    notes.append(STOP_GUIDANCE)
    results = {row.result for row in rows} | {f.result for f in findings}
    result: Result = "fail" if "fail" in results else "pending" if "pending" in results else "pass"
    return CheckRow(6, TITLES[6], result, settled, items, tuple(f for f in findings if result != "pass"),
                    tuple(redact_text(n) for n in notes))


def record_facts(evidence: RunEvidence, facts: rules._Facts) -> RecordFacts:
    """The record template's header (C8) from what the evidence shows; unknown fields stay empty."""
    record = evidence.launch_record or {}
    job = facts.job
    num_nodes = f"{facts.expected_nodes} expected ({facts.expected_source})"
    mode = ""
    head = rules._head_log(evidence, facts)
    if head is not None:
        block = logscan.resolved_config(head.lines)
        if block is not None:
            cluster = block.config.get("cluster") or {}
            num_nodes = f"{cluster.get('num_nodes')} (RLinf resolved config); {num_nodes}"
            mode = logscan.placement_mode(cluster.get("component_placement")) or ""
    placement = []
    for spec in facts.specs:
        task = facts.tasks.get(job.task_name(spec))
        namespace = task.namespace if task else "?"
        nodes = sorted({p.node for p in facts.pods.get(job.task_name(spec), []) if p.node})
        resources = ", ".join(f"{k}: {v}" for k, v in sorted(spec.limits.items())) or "no GPU/devices"
        placement.append(f"{spec.name}: {namespace} on {', '.join(nodes) or 'no Node yet'} "
                         f"(replicas {spec.replicas}; {resources})")
    images = []
    for spec in facts.specs:
        if not spec.image:
            continue
        pulled = sorted({c.image_id for pod in facts.pods.get(job.task_name(spec), [])
                         for c in [evidence.container_of(pod.pod_name)] if c and c.image_id})
        images.append(f"{spec.name}: {spec.image}" + (f" (pulled {', '.join(pulled)})" if pulled else ""))
    head_spec = job.head_task
    return RecordFacts(
        run_id=str(record.get("runId") or ""),
        code_ref=str(record.get("codeRef") or ""),
        images=tuple(images),
        config_ref=str(record.get("configRef") or ""),
        run_script=show("runScript", head_spec.run_script) if head_spec else "",
        num_nodes=num_nodes,
        placement_mode=mode or str(record.get("placementMode") or ""),
        placement=tuple(placement),
        job_name=evidence.job_name,
        submitted_yaml=evidence.submitted_yaml_path or "",
        submitted_sha256=evidence.submitted_sha256 or "",
        stop_condition=str(record.get("stopCondition") or ""),
    )
