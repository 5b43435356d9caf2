"""W1–W14 in the wizard: each rule's error shows beside its field, blocks Next (focus jumps to the field), and
warnings do not block. One live app against the sandbox; each case loads a broken variant of a valid draft.
"""

from __future__ import annotations

from dataclasses import replace

from rlark_tui.model.draft import Mount, RoleDraft
from wizard.helpers import SIZE, base_draft, focused_id, message, new_app, open_wizard, settle


def role_change(index: int, **changes):
    def change(draft):
        roles = list(draft.roles)
        roles[index] = replace(roles[index], **changes)
        return replace(draft, roles=tuple(roles))
    return change


def top(**changes):
    return lambda draft: replace(draft, **changes)


# (rule, change, step where Next stops, role shown in step 2, field key beside which the message is, text)
CASES = [
    ("W1 at least one role", top(roles=(), header=""), 1, None, "roles", "add at least one role"),
    ("W2 a Header role", top(header=""), 1, None, "header", "required: name the Header role"),
    ("W3 name rule", top(name="Bad_Name"), 1, None, "name", "lowercase letters"),
    ("W3 name unique", top(name="demo-ppo"), 1, None, "name", "a Job named 'demo-ppo' already exists"),
    ("W4 role names unique ignoring case", role_change(1, name="ACTOR"), 1, None, "role-name-1",
     "unique ignoring case"),
    ("W4 role name non-empty", role_change(2, name=""), 1, None, "role-name-2", "required: a role name"),
    ("W5 cluster required", role_change(1, cluster=""), 2, 1, "cluster", "required: the cluster namespace"),
    ("W5 one value per key", role_change(1, selector={"kubernetes.io/hostname": "gpu-a2,gpu-a3"}), 2, 1,
     "selector", "one value per key"),
    ("W5 at least one match", role_change(2, selector={"kubernetes.io/hostname": "nowhere"}), 2, 2, "selector",
     "matches no Node"),
    ("W6 Header matches exactly 1", role_change(0, selector={"gpu-model": "h100"}), 2, 0, "selector",
     "must match exactly 1"),
    ("W7 GPU above allocatable", role_change(0, gpu=9), 2, 0, "gpu", "has only 8 allocatable"),
    ("W8 image required", role_change(1, image=""), 2, 1, "image", "required: the image"),
    ("W9 host mount source", role_change(2, mounts=(Mount(type="host", source="data", target="/mnt/data"),)),
     2, 2, "mounts", "must be an absolute host path"),
    ("W10 cpu request", role_change(1, cpu="lots"), 2, 1, "cpu", "not a positive quantity"),
    ("W11 selector spans clusters", role_change(2, selector={"kubernetes.io/os": "linux"}), 2, 2, "selector",
     "clusters"),
    ("W11b domain across clusters", top(domain=""), 3, None, "domain", "without a network domain"),
    ("W12 run script required", top(run_script=""), 3, None, "runScript", "required: the command"),
    ("W12 SSH key validated", top(ssh_public_key="ssh-ed25519 not-base64!"), 3, None, "sshPublicKey",
     "not valid base64"),
    ("W14 launch record pattern", top(record={"progressPattern": "step (\\d+"}), 3, None, "record-progressPattern",
     "not a valid regular expression"),
]


async def test_each_rule_blocks_next_with_the_reason_beside_its_field(access):
    app = new_app(access)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_wizard(pilot)
        for rule, change, step, role, key, text in CASES:
            await screen.load(change(base_draft("wiz-rules")))
            await settle(pilot)
            while True:
                before = screen.step
                await pilot.press("ctrl+n")
                await settle(pilot, 1)
                if screen.step == before:
                    break
            assert screen.step == step, f"{rule}: Next went on to step {screen.step}"
            assert str(screen.query_one("#wizard-title").render()).startswith(f"Step {step}/4"), rule
            if role is not None:
                assert screen.role_index == role, rule
            assert text in message(screen, key), f"{rule}: beside {key}: {message(screen, key)!r}"
            assert "Next is blocked" in str(screen.query_one("#wizard-status").render()), rule
            wanted = "add-role" if key == "roles" else f"w-{key}"
            assert focused_id(app) == wanted, f"{rule}: focus on {focused_id(app)}"


async def test_warnings_do_not_block_and_header_is_confirmed_on_step_3(access):
    app = new_app(access)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_wizard(pilot)
        tagged = "registry.rlark.local/wizard-invalid-pull/rlinf:v1"
        draft = base_draft("wiz-warn")
        roles = list(draft.roles)
        roles[1] = replace(roles[1], image=tagged, mounts=(Mount(type="host", source="/data", target="/usr"),))
        await screen.load(replace(draft, roles=tuple(roles)))
        await pilot.press("ctrl+n")
        await settle(pilot)
        screen.query_one("#w-role-pick").value = 1
        await settle(pilot)
        assert "tag 'v1' is mutable" in message(screen, "image")
        assert "differs from the image of roles[0]" in message(screen, "image")
        assert "hides the image's" in message(screen, "mounts")
        assert "/data must exist on gpu-a2" in message(screen, "mounts")
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert screen.step == 3
        assert "Actor: selector kubernetes.io/hostname=gpu-a3 matches 1 Node(s) globally: gpu-a3 (rlark-gpu-a)" \
            in message(screen, "header3")
        assert "roles span 2 clusters" in message(screen, "domain")
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert screen.step == 4
        shown = [str(screen.query_one("#w-findings").get_option_at_index(i).prompt)
                 for i in range(screen.query_one("#w-findings").option_count)]
        assert any(line.startswith("! warning  roles[1].image: tag 'v1'") for line in shown)
        assert not any(line.startswith("✗") for line in shown)


async def test_step_4_lists_findings_and_enter_jumps_to_the_field(access):
    app = new_app(access)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_wizard(pilot)
        await screen.load(base_draft("wiz-jump"), step=4)
        await settle(pilot)
        screen.draft = replace(screen.draft, roles=screen.draft.roles[:2] + (
            replace(screen.draft.roles[2], image=""),))
        screen._recheck()
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert "Submit blocked by 1 error(s); first: roles[2].image" in str(screen.query_one("#w-result").render())
        options = screen.query_one("#w-findings")
        options.focus()
        first = str(options.get_option_at_index(0).prompt)
        assert first.startswith("✗ error  roles[2].image: required")
        options.highlighted = 0
        await pilot.press("enter")
        await settle(pilot)
        assert screen.step == 2 and screen.role_index == 2
        assert focused_id(app) == "w-image"
        assert "required: the image" in message(screen, "image")
