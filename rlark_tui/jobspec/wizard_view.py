"""What the create-job wizard shows besides its fields: the messages and hints beside each field, the matched
Nodes of a role, the step title and the key bar.

Pure (no Textual, no I/O): the findings come from rlark_tui.jobspec.validate; the hints call its rules.
"""

from __future__ import annotations

from rlark_tui.jobspec import wizard_fields as wf
from rlark_tui.jobspec.draft import JobDraft
from rlark_tui.jobspec.findings import Finding
from rlark_tui.jobspec.render import role_matches, role_placement, role_replicas
from rlark_tui.jobspec.validate import role_clusters
from rlark_tui.model.keys import PROFILING_ENV, PTRACE_CAPABILITY
from rlark_tui.text.sinks import cut, cut_lines

MATCH_COLUMNS = ("NODE", "CLUSTER", "STATE", "GPU", "DEVICES")
Lines = dict[str, list[tuple[str, str]]]


def messages_by_key(findings: list[Finding], draft: JobDraft, role_index: int) -> Lines:
    """Field key → [(level, text)] for the current view (step 2 shows the role `role_index` only; the
    Header role's selector problems also show beside step 3's Header role)."""
    shown: Lines = {}
    header = draft.header_index()
    for finding in findings:
        place = wf.place_of(finding.field)
        line = (finding.level, wf.finding_line(finding, place))
        if place.step == 1 and place.role is not None:
            shown.setdefault(f"role-name-{place.role}", []).append(line)
            continue
        if (place.role is not None and place.role == header and place.key == "selector") or place.key == "header":
            shown.setdefault("header3", []).append(line)
        if place.role is not None and place.role != role_index:
            continue
        shown.setdefault(place.key, []).append(line)
    return shown


def hints(draft: JobDraft, role_index: int, facts: wf.WizardFacts) -> dict[str, str]:
    """Facts shown beside fields even without a finding: GPU maximum, devices, mount scope, the Header role's
    matches, why a domain is needed, and what the gateway could not tell."""
    shown: dict[str, str] = {}
    nodes = facts.nodes
    role = wf.role_at(draft, role_index)
    if role is not None:
        matched = role_matches(role, nodes)
        maximum = wf.gpu_maximum(matched)
        shown["gpu"] = (f"max {maximum} (smallest allocatable among the matched Nodes)" if maximum is not None
                        else "no maximum known: keep 0 unless an admin confirmed the GPUs")
        shown["hardware"] = _placement_hint(role, facts)
        devices = wf.device_summary(nodes, role.cluster) if role.cluster else ""
        shown["devices"] = f"reported: {devices}" if devices else "the cluster reports no rlinf.io/* devices"
        notes = []
        for number, mount in enumerate(role.mounts, start=1):
            if mount.type == "host" and mount.source:
                where = ", ".join(n.name for n in matched) or "no matched Node yet"
                notes.append(f"line {number}: {mount.source} must exist on {where}")
        if facts.storage_classes is not None:
            classes = ", ".join(sorted(facts.storage_classes.get(role.cluster, []))) or "none"
            notes.append(f"storage classes in {role.cluster or '?'}: {classes}")
        elif facts.gateway_note:
            notes.append(facts.gateway_note)
        shown["mounts"] = "\n".join(notes)
    header = draft.header_index()
    if header is not None:
        head = draft.roles[header]
        matched = role_matches(head, nodes)
        where = ", ".join(f"{n.name} ({n.cluster})" for n in matched) or "none"
        shown["header3"] = (f"{head.name}: selector {wf.format_selector(head.selector) or '(empty)'} matches "
                            f"{len(matched)} Node(s) globally: {where}")
    clusters = sorted(role_clusters(draft, [role_matches(r, nodes) for r in draft.roles]))
    if len(clusters) > 1:
        shown["domain"] = (f"roles span {len(clusters)} clusters ({', '.join(clusters)}): a domain is required, "
                           f"workers reach the head's Service only inside its own cluster")
    if facts.gateway_note and not facts.ssh_keys:
        shown["ssh-pick"] = facts.gateway_note
    shown["debuggable"] = (f"adds {PTRACE_CAPABILITY} to every container and {PROFILING_ENV}=1 to the "
                           "Header role, so stacks can be taken (? says more)" if draft.debuggable else
                           "on lets rlark take every rank's stack (SYS_PTRACE, Ray profiling; ? says more)")
    return shown


def _placement_hint(role, facts: wf.WizardFacts) -> str:
    """What the chosen hardware gives: the slots per worker and the eligible (automatic) Nodes."""
    hardware = wf.role_hardware(facts, role)
    if hardware is None:
        return "" if role.hardware else "free/total slots and Nodes available/total per model"
    placed = role_placement(role, facts.nodes)
    amount = placed.per_worker
    per = f"{amount:g} {wf.slot_word(hardware, amount)} per worker" if hardware.kind != "compute" else "CPU only"
    if role.nodes:
        return f"{per}; one worker per picked Node"
    names = ", ".join(n.name for n in placed.nodes) or "none"
    return f"{per}; eligible Nodes (automatic): {names}"


def field_messages(findings: list[Finding], draft: JobDraft, role_index: int,
                   facts: wf.WizardFacts) -> dict[str, tuple[str, str]]:
    """Field key → (text, level) beside it: `✗ ` errors, `! ` warnings, then the hint; level `error`,
    `warning` or ``. Keys without anything to show are left out."""
    messages = messages_by_key(findings, draft, role_index)
    notes = hints(draft, role_index, facts)
    shown = {}
    for key in messages.keys() | notes.keys():
        lines = messages.get(key, [])
        text = "\n".join(("✗ " if level == "error" else "! ") + message for level, message in lines)
        levels = {level for level, _ in lines}
        shown[key] = (cut_lines("\n".join(part for part in (text, notes.get(key, "")) if part)),
                      "error" if "error" in levels else "warning" if levels else "")
    return shown


def match_view(draft: JobDraft, role_index: int, facts: wf.WizardFacts) -> tuple[str, list[tuple[str, ...]]]:
    """The summary line and the rows (MATCH_COLUMNS) of the Nodes the shown role's selector matches."""
    role = wf.role_at(draft, role_index)
    if role is None:
        return "No roles yet: add them in step 1.", []
    matched = role_matches(role, facts.nodes)
    rows: list[tuple[str, ...]] = [(node.name, node.cluster, "Online" if node.online else node.phase or "Offline",
             "-" if node.allocatable("nvidia.com/gpu") is None else f"{node.allocatable('nvidia.com/gpu'):g}",
             wf.node_devices(node) or "-") for node in matched]
    clusters = sorted({n.cluster for n in matched})
    if role.placed:
        how = "one per picked Node" if role.nodes else f"placed automatically on {role.hardware}"
        return (f"Workers: {role_replicas(role, matched)} ({how}); the Job selects kubernetes.io/hostname of "
                f"the {len(matched)} Node(s) below"), rows
    return (f"Replicas (read-only) = matched Nodes: {len(matched)} — the full selector matched across all "
            f"clusters ({', '.join(clusters) or 'none'})"), rows


def title(step: int, draft: JobDraft, role_index: int, loaded: bool) -> str:
    text = f"Step {step}/4 · {wf.STEP_NAMES[step - 1]}"
    role = wf.role_at(draft, role_index)
    if step == 2 and role is not None:
        text += f" — role {role_index + 1}/{len(draft.roles)}: {cut(role.name)}"
    if not loaded:
        text += "   (waiting for the control plane: Nodes and Jobs not loaded yet)"
    return text


def key_bar(step: int, readonly: bool) -> str:
    """The keys of `step`, most needed first: at 80 columns only Import and Export may be cut (`?` lists all)."""
    keys = [("ctrl+b", "Back")] if step > 1 else []
    if step < 4:
        keys.append(("ctrl+n", "Next"))
    else:
        keys += [("ctrl+t", "Dry run"), ("ctrl+g", "Submit (refused: read-only)" if readonly else "Submit")]
    if step in (2, 3):
        keys.append(("f4", "$EDITOR"))
    keys += [("esc", "Close"), ("?", "Help"), ("ctrl+o", "Import"), ("ctrl+s", "Export")]
    return "  ".join(f"{key} {label}" for key, label in keys)


def finding_option(finding: Finding) -> str:
    return cut(f"{'✗ error' if finding.level == 'error' else '! warning'}  {finding.field}: {finding.message}")
