"""W1–W14 in the wizard: each rule's error shows beside its field, blocks Next (focus jumps to the field), and
warnings do not block. One live app against the sandbox; each case loads a broken variant of a valid draft.
"""

from __future__ import annotations

from dataclasses import replace

from rlark_tui.jobspec.draft import Mount
from tests.pilot import press
from wizard.helpers import SIZE, base_draft, focused_id, message, new_app, open_wizard, settle


def role_change(index: int, **changes):
    def change(draft):
        roles = list(draft.roles)
        roles[index] = replace(roles[index], **changes)
        return replace(draft, roles=tuple(roles))
    return change


def top(**changes):
    return lambda draft: replace(draft, **changes)


# Each group breaks several rules at once: (change, step where Next stops, field focused there,
# [(rule, role shown in step 2 or None, field key beside which the message is, text)]).
GROUPS = [
    (top(name="Bad_Name", roles=(), header=""), 1, "w-name", [
        ("W1 at least one role", None, "roles", "add at least one role"),
        ("W3 name rule", None, "name", "lowercase letters"),
    ]),
    (lambda d: role_change(2, name="")(role_change(1, name="ACTOR")(top(name="demo-ppo", header="")(d))),
     1, "w-name", [
        ("W3 name unique", None, "name", "a Job named 'demo-ppo' already exists"),
        ("W2 a Header role", None, "header", "required: name the Header role"),
        ("W4 role names unique ignoring case", None, "role-name-1", "unique ignoring case"),
        ("W4 role name non-empty", None, "role-name-2", "required: a role name"),
    ]),
    (lambda d: role_change(0, selector={"gpu-model": "h100"}, gpu=9)(
        role_change(1, cluster="", selector={"kubernetes.io/hostname": "gpu-a2,gpu-a3"}, image="", cpu="lots")(
            role_change(2, selector={"kubernetes.io/os": "linux"},
                        mounts=(Mount(type="host", source="data", target="/mnt/data"),))(d))),
     2, "w-selector", [
        ("W6 Header matches exactly 1", 0, "selector", "must match exactly 1"),
        ("W7 GPU above allocatable", 0, "gpu", "has only 8 allocatable"),
        ("W5 cluster required", 1, "cluster", "required: the cluster namespace"),
        ("W5 one value per key", 1, "selector", "one value per key"),
        ("W8 image required", 1, "image", "required: the image"),
        ("W10 cpu request", 1, "cpu", "not a positive quantity"),
        ("W11 selector spans clusters", 2, "selector", "matches Nodes in 2 clusters"),
        ("W9 host mount source", 2, "mounts", "must be an absolute host path"),
    ]),
    (role_change(2, selector={"kubernetes.io/hostname": "nowhere"}), 2, "w-selector", [
        ("W5 at least one match", 2, "selector", "matches no Node"),
    ]),
    (top(domain="", run_script="", ssh_public_key="ssh-ed25519 not-base64!",
         record={"progressPattern": "step (\\d+"}), 3, "w-domain", [
        ("W11b domain across clusters", None, "domain", "without a network domain"),
        ("W12 run script required", None, "runScript", "required: the command"),
        ("W12 SSH key validated", None, "sshPublicKey", "not valid base64"),
        ("W14 launch record pattern", None, "record-progressPattern", "not a valid regular expression"),
    ]),
]


async def test_each_rule_blocks_next_with_the_reason_beside_its_field(access):
    app = new_app(access)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_wizard(pilot)
        for change, step, focused, rules in GROUPS:
            await screen.load(change(base_draft("wiz-rules")))
            while True:
                before = screen.step
                await press(pilot, "ctrl+n")
                await settle(pilot, 1)
                if screen.step == before:
                    break
            names = ", ".join(rule for rule, *_ in rules)
            assert screen.step == step, f"{names}: Next went on to step {screen.step}"
            assert str(screen.query_one("#wizard-title").render()).startswith(f"Step {step}/4"), names
            assert "Next is blocked" in str(screen.query_one("#wizard-status").render()), names
            assert focused_id(app) == focused, f"{names}: focus on {focused_id(app)}"
            for rule, role, key, text in rules:
                if role is not None and role != screen.role_index:
                    screen.query_one("#w-role-pick").value = role
                    await settle(pilot, 1)
                assert text in message(screen, key), f"{rule}: beside {key}: {message(screen, key)!r}"


def finding_lines(screen) -> list[str]:
    options = screen.query_one("#w-findings")
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_warnings_do_not_block_and_step_4_findings_jump_to_their_field(access):
    app = new_app(access)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_wizard(pilot)
        tagged = "registry.rlark.local/wizard-invalid-pull/rlinf:v1"
        draft = base_draft("wiz-warn")
        roles = list(draft.roles)
        roles[1] = replace(roles[1], image=tagged, mounts=(Mount(type="host", source="/data", target="/usr"),))
        await screen.load(replace(draft, roles=tuple(roles)))
        await press(pilot, "ctrl+n")
        await settle(pilot)
        screen.query_one("#w-role-pick").value = 1
        await settle(pilot)
        assert "tag 'v1' is mutable" in message(screen, "image")
        assert "differs from the image of roles[0]" in message(screen, "image")
        assert "hides the image's" in message(screen, "mounts")
        assert "/data must exist on gpu-a2" in message(screen, "mounts")
        await press(pilot, "ctrl+n")
        await settle(pilot)
        assert screen.step == 3
        assert "Actor: selector kubernetes.io/hostname=gpu-a3 matches 1 Node(s) globally: gpu-a3 (rlark-gpu-a)" \
            in message(screen, "header3")
        assert "roles span 2 clusters" in message(screen, "domain")
        await press(pilot, "ctrl+n")
        await settle(pilot)
        assert screen.step == 4
        shown = finding_lines(screen)
        assert any(line.startswith("! warning  roles[1].image: tag 'v1'") for line in shown)
        assert not any(line.startswith("✗") for line in shown)
        valid = base_draft("wiz-jump")
        await screen.load(replace(valid, roles=valid.roles[:2] + (replace(valid.roles[2], image=""),)), step=4)
        await settle(pilot)
        await press(pilot, "ctrl+g")
        await settle(pilot)
        assert "Submit blocked by 1 error(s); first: roles[2].image" in str(screen.query_one("#w-result").render())
        options = screen.query_one("#w-findings")
        options.focus()
        first = str(options.get_option_at_index(0).prompt)
        assert first.startswith("✗ error  roles[2].image: required")
        options.highlighted = 0
        await press(pilot, "enter")
        await settle(pilot)
        assert screen.step == 2 and screen.role_index == 2
        assert focused_id(app) == "w-image"
        assert "required: the image" in message(screen, "image")
        # a finding quotes the draft's values (an imported draft, or a cloned Job's spec): a role
        # '[@click=app.quit]Rollout[/]' in the list was Textual markup, an action on a click
        roles = list(valid.roles)
        roles[1] = replace(roles[1], role="[@click=app.quit]Rollout[/]")
        await screen.load(replace(valid, roles=tuple(roles)), step=4)
        await settle(pilot)
        options = screen.query_one("#w-findings")
        assert any("'[@click=app.quit]Rollout[/]' is not a platform role" in line for line in finding_lines(screen))
        rendered = [options.render_line(y) for y in range(options.size.height)]
        assert any("[@click=app.quit]" in line.text for line in rendered), [line.text for line in rendered]
        assert not [s.style.meta for line in rendered for s in line if s.style and "@click" in s.style.meta]

