"""Secrets masked exactly where they are, nowhere else (issue 26 item 4): private keys however a read cuts them,
escaped JSON and YAML strings, the Job's own secret values; and what stays readable."""

import base64
import hashlib

import pytest
import yaml

from rlark_tui.text.redact import (
    PLACEHOLDER,
    KnownSecrets,
    LineRedactor,
    is_plain_value,
    placeholder_fields,
    redact_env,
    redact_lines,
    redact_text,
    secret_refs,
    secret_values,
    with_placeholders,
)

BODY = [base64.b64encode(hashlib.sha512(str(i).encode()).digest()[:48]).decode() for i in range(5)] + ["Zm9vYmFy=="]
KEY = ["-----BEGIN RSA PRIVATE KEY-----", *BODY, "-----END RSA PRIVATE KEY-----"]
LOG = [f"Global Step: {i}/255 loss=0.{i}" for i in range(250)]


def shows_key(text: str) -> bool:
    return any(line in text for line in BODY)


def test_an_unterminated_key_masks_its_base64_lines_not_the_rest_of_the_log():
    text = "\n".join(["start", KEY[0], *BODY[:3], *LOG])
    out = redact_text(text)
    assert not shows_key(out) and out.count("Global Step") == len(LOG) and out.startswith("start\n" + KEY[0])
    streamed = [LineRedactor()(line) for line in [KEY[0], *BODY[:3], *LOG]]
    assert streamed[1:4] == ["***"] * 3 and streamed[4:] == LOG


@pytest.mark.parametrize("start", range(0, len(BODY)))
def test_a_read_that_starts_inside_a_key_shows_none_of_it(start):
    lines = [*BODY[start:], KEY[-1], *LOG[:3]]
    assert not shows_key("\n".join(redact_lines(lines)))
    assert not shows_key(redact_text("\n".join(lines)))
    assert redact_lines(lines)[-3:] == LOG[:3]


def test_a_whole_key_and_a_key_in_one_json_line():
    assert redact_text("\n".join([*KEY, "after"])) == f"{KEY[0]}\n***\n{KEY[-1]}\nafter"
    assert not shows_key(redact_text('{"k": "' + "\\n".join(KEY) + '"}'))


@pytest.mark.parametrize("line", [
    "0" * 64, hashlib.sha256(b"x").hexdigest(), "Processing shard 3 of 10", "a" * 63,
])
def test_ordinary_lines_never_start_a_key(line):
    assert LineRedactor()(line) == line


@pytest.mark.parametrize("text, secret, kept", [
    ('cfg={\\"password\\": \\"zqEsc1\\"}', "zqEsc1", 'cfg={\\"password\\": \\"***\\"}'),
    ("echo \"password: \\\"zqEsc2\\\"\"", "zqEsc2", 'password: \\"***\\"'),
    ('{\\"name\\": \\"HF_TOKEN\\", \\"value\\": \\"zqEsc3\\"}', "zqEsc3", '\\"value\\": \\"***\\"'),
    ('"{\\\\\\"api_key\\\\\\": \\\\\\"zqEsc4\\\\\\"}"', "zqEsc4", "api_key"),
    ("token: 'zqEsc5'", "zqEsc5", "token: '***'"),
])
def test_escaped_json_and_yaml_strings_are_masked(text, secret, kept):
    out = redact_text(text)
    assert secret not in out and kept in out, out


@pytest.mark.parametrize("text", [
    "error: --label must be `key=value`", "RAY_AUTH_MODE=token", "python train.py --hf-token=$HF_TOKEN",
    "usage: --password <password>", "export HF_TOKEN=${HF_TOKEN}", "password: ***",
])
def test_flag_text_messages_and_plain_values_stay(text):
    assert redact_text(text) == text


def test_plain_values_of_secret_names_stay_in_objects():
    env = [{"name": "RAY_AUTH_MODE", "value": "token"}, {"name": "RAY_AUTH_TOKEN", "value": "zqTok1"}]
    assert redact_env(env) == [env[0], {"name": "RAY_AUTH_TOKEN", "value": "***"}]
    assert is_plain_value("token") and not is_plain_value("zqTok1")


def test_secret_values_of_a_job_and_its_secrets():
    job = {"spec": {"tasks": [{"kubernetes": {"workload": {"template": {"spec": {"containers": [{"env": [
        {"name": "AWS_SECRET_ACCESS_KEY", "value": "zqAws1"}, {"name": "RAY_AUTH_MODE", "value": "token"},
        {"name": "DB_PASSWORD", "value": "x"}, {"name": "PRIVATE_KEY_PATH", "value": "/etc/key"},
        {"name": "SEED", "value": "12345"},
        {"name": "T", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
        "envFrom": [{"secretRef": {"name": "all"}}]}]}}}}}]},
        "metadata": {"annotations": {"rlark.io/launch": '{"env": {"WANDB_API_KEY": "zqWandb2"}}'}}}
    found = secret_values(job, {"s": {"k": "zqRef3", "other": "zqNot4"}, "all": {"a": "zqAll5"}})
    assert found == {"zqAws1", "zqWandb2", "zqRef3", "zqAll5"}
    assert secret_refs(job) == {"s", "all"}
    assert secret_refs({"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"key": "k"}}}], "envFrom": [{}]}) == set()


def test_known_secrets_are_masked_wherever_they_appear():
    known = KnownSecrets(["zqAws1", 'q"uote'])
    assert known.mask("key zqAws1, again:zqAws1") == "key ***, again:***"
    assert known.mask('{"v": "q\\"uote"}') == '{"v": "***"}'
    assert LineRedactor(["zqAws1"])("echo zqAws1") == "echo ***"
    redactor = LineRedactor(["zqAws1"])
    redactor.add_known(["zqLater2", "zqAws1"])
    assert redactor("zqAws1 zqLater2 x") == "*** *** x"


def test_clone_placeholders_are_valid_yaml_and_found_again():
    draft = {"name": "x", "roles": [{"name": "a", "env": {"HF_TOKEN": "zqHf1", "RAY_AUTH_MODE": "token"},
                                     "prepareScript": "export HF_TOKEN=zqHf1\necho '*** done ***'"}],
             "runScript": "python t.py --api-key zqKey2", "record": {"token": "zqRec3"}}
    masked = with_placeholders(draft)
    text = yaml.safe_dump(masked)
    assert yaml.safe_load(text) == masked and "zq" not in text
    assert masked["roles"][0]["env"] == {"HF_TOKEN": PLACEHOLDER, "RAY_AUTH_MODE": "token"}
    assert placeholder_fields(masked) == ["roles[0].env.HF_TOKEN", "roles[0].prepareScript", "runScript",
                                          "record.token"]
    assert masked["roles"][0]["prepareScript"] == f"export HF_TOKEN={PLACEHOLDER}\necho '*** done ***'"
    assert with_placeholders({"s": "PASSWORD=*** ./run"}) == {"s": f"PASSWORD={PLACEHOLDER} ./run"}


def test_new_shapes_stay_linear_on_a_megabyte():
    for text in ('\\"password\\": \\"' + "a" * 1_000_000, KEY[0] + "\n" + "A" * 1_000_000,
                 ("x" * 64 + "\n") * 15_000 + KEY[-1], "key=value` " * 90_000):
        assert isinstance(redact_text(text), str)


def test_a_jobs_secret_env_value_is_masked_wherever_else_the_job_holds_it():
    """Issue 33, an eighteenth round (secrets in another shape): an env entry of a secret-looking name was masked,
    but a run script, another env entry or an annotation that held the same value showed it, in `rlark describe`,
    `-o yaml`/`-o json`, the TUI's YAML tab and its `Y` copy. redact_object masks the object's own secret env values
    (secret_values) in every string, line by line, so the script keeps its lines."""
    from rlark_tui.commands.describe import describe_text
    from rlark_tui.text.redact import redact_object

    secret = "s3cr3tvalue123456"
    task = {"name": "main", "head": True, "role": "Actor", "runScript": f"curl -d {secret} http://x\npython train.py",
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {"containers": [
                {"name": "main", "image": "img", "env": [{"name": "API_KEY", "value": secret + "\n"},
                                                         {"name": "COPY", "value": f"x {secret}"}]}]}}}}}
    job = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
           "metadata": {"name": "leaky", "annotations": {"note": f"key {secret}"}}, "spec": {"tasks": [task]}}
    redacted = redact_object(job)
    assert secret not in yaml.safe_dump(redacted) and secret not in describe_text(job, [], [], {}, None)
    assert redacted["spec"]["tasks"][0]["runScript"] == "curl -d *** http://x\npython train.py"
    assert redacted["metadata"]["annotations"]["note"] == "key ***"


def test_a_clone_masks_a_drafts_secret_env_value_wherever_else_the_draft_holds_it():
    """Issue 33, a twentieth round (generated answers through a mutating proxy), secrets in another shape: `rlark
    clone` on stdout masked an env entry of a secret-looking name (API_KEY) in each role, but each role was masked
    knowing only its own entries, so a role that held the same value under another name (`LOGIN`, or a name the
    control plane answered as '0001-01-01T00:00:00+23:59') printed it, as did a run script that echoed it. The whole
    draft's secret env values are masked wherever it holds them, as redact_object masks a Job's."""
    secret = "s3cr3tvalue123456"
    draft = {"name": "leaky-copy", "runScript": f"login {secret}\npython train.py",
             "roles": [{"name": "actor", "env": {"API_KEY": secret}}, {"name": "env", "env": {"LOGIN": secret}}]}
    shown = with_placeholders(draft)
    assert secret not in yaml.safe_dump(shown), shown
    assert shown["roles"][1]["env"]["LOGIN"] == PLACEHOLDER and shown["runScript"] == f"login {PLACEHOLDER}\npython train.py"
    assert placeholder_fields(shown) == ["runScript", "roles[0].env.API_KEY", "roles[1].env.LOGIN"]


def test_a_number_bool_or_none_is_not_walked_for_secret_values(monkeypatch):
    """Issue 34 (bench checkeval, the run check 0.6 ms slower than acc6d58): since 65c545b redact_object reads a value's
    own secret env values before it redacts the value, and the run check shows about 90 values a run through it (a
    replica count, `head`, a field the spec leaves out), so each was walked and given a KnownSecrets of its own
    though a number, a bool or None holds no env entry and nothing to mask. A value that holds one is read once."""
    from rlark_tui.text import redact
    from rlark_tui.text.redact import redact_object

    walked = []
    values = redact.secret_values
    monkeypatch.setattr(redact, "secret_values", lambda obj, *rest: walked.append(obj) or values(obj, *rest))
    assert [redact_object(value) for value in (3, True, None, 2.5)] == [3, True, None, 2.5]
    assert walked == []
    task = {"runScript": "curl -d s3cr3tvalue123456", "env": [{"name": "API_KEY", "value": "s3cr3tvalue123456"}]}
    assert redact_object(task) == {"runScript": "curl -d ***", "env": [{"name": "API_KEY", "value": "***"}]}
    assert walked == [task]


def test_a_value_an_error_cut_across_shows_none_of_its_start():
    """An error quotes an answer cut at MESSAGE_CHARS before the Job's values are known (cluster/errors.quoted, a
    data plane's refused exec upgrade): a value across the cut left its first characters before the cut's mark,
    which no whole value matches. KnownSecrets masks that start, at every offset of the value across the cut."""
    from rlark_tui.cluster.errors import MESSAGE_CHARS, quoted

    secret = "zqSecretValue12345xyz"
    known = KnownSecrets([secret])
    for inside in range(4, len(secret) + 4):
        shown = known.mask(quoted("x" * (MESSAGE_CHARS - inside) + secret + " tail"))
        assert not any(secret[:size] in shown for size in range(4, len(secret) + 1)), (inside, shown)
        assert shown.startswith("x" * (MESSAGE_CHARS - inside)) and "*** " * (inside > len(secret)) in shown
    assert known.mask(quoted("y" * 600)) == quoted("y" * 600)
