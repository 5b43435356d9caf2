"""The log path's fast paths give what the plain ones give (issue 26, bench): the first pass's rare-letter regex
finds a match exactly where the flat word list does; a batch of lines (LineRedactor.lines, redact_lines) is masked
as line by line; clean_lines cleans as clean_log; redact_text skips only passes that could not match."""

import base64
import hashlib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rlark_tui.text import redact
from rlark_tui.text.redact import LineRedactor
from rlark_tui.text.sanitize import clean_lines, clean_log, has_control

WORDS = ["pass", "pwd", "private", "pat", "path", "pypi-", "secret", "signature", "sk-", "token", "key", "cred",
         "cookie", "auth", "akia", "aiza", "dsn", "bearer", "basic", "-----begin", "-----", "begin", "ghp_", "ghx_",
         "hf_", "xox", "eyj", "npm_", "://u:p@h", "://u@h", "-u", "-user", "--proxy-user", "=", "\t", *"abcdefghijklmnopqrstuvwxyz_-:/@ \n1"]
BODY = [base64.b64encode(hashlib.sha512(str(i).encode()).digest()[:48]).decode() for i in range(4)]
LINES = ["step 3 loss=0.1", "mean length 300 tokens", "HF_TOKEN=hf_abcdefghijklmnopqrstuvwx", "zqKnown1 here",
         "-----BEGIN RSA PRIVATE KEY-----", *BODY, "-----END RSA PRIVATE KEY-----", " " + BODY[0] + "\r",
         "a" * 64, hashlib.sha256(b"x").hexdigest(), "", '{\\"password\\": \\"zq2\\"}', "two\nlines HF_TOKEN=x1y2",
         "İSTANBUL token 12ab", "RAY_AUTH_MODE=token", "x" * 100]
FLAT = re.compile(redact._SECRET_WORDS_TEXT)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=6).map("".join))
def test_the_first_pass_matches_where_the_word_list_does(text):
    assert (redact._MAYBE_SECRET.search(text) is None) == (FLAT.search(text) is None)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ab"), st.lists(st.sampled_from(LINES), max_size=12)), max_size=8),
       st.booleans())
def test_batches_are_masked_as_line_by_line(batches, keys_only):
    one, many = LineRedactor(["zqKnown1"], keys_only), LineRedactor(["zqKnown1"], keys_only)
    for source, texts in batches:
        assert many.lines(texts, source) == [one(text, source) for text in texts]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(LINES + [BODY[1], BODY[2]]), max_size=20), st.booleans())
def test_a_whole_read_is_masked_as_before(texts, keys_only):
    slow = LineRedactor(["zqKnown1"], keys_only)
    orphan = set()  # the plain rule: key lines before a first END with no BEGIN before it
    for position, text in enumerate(texts):
        if redact._KEY_BEGIN.search(text):
            break
        if redact._KEY_END.search(text):
            for before in range(position - 1, -1, -1):
                if not redact._is_key_line(texts[before]):
                    break
                orphan.add(before)
            break
    expected = [redact.MASK if index in orphan else slow(text) for index, text in enumerate(texts)]
    assert redact.redact_lines(texts, ["zqKnown1"], keys_only) == expected


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(st.sampled_from("ab \t\x1b[31m]\x07\x9b\x85é\r;0\x7f"), max_size=12), max_size=10),
       st.booleans())
def test_clean_lines_cleans_as_clean_log(lines, keep_sgr):
    assert clean_lines(lines, keep_sgr) == [clean_log(line, keep_sgr) for line in lines]


def every_pass(text: str) -> str:
    """redact_text without its per-pass tests: every pass on every text the first pass lets through."""
    if not redact._MAYBE_SECRET.search(text.lower()):
        return text
    text = redact._mask_pem(text)
    text = redact._URL_CREDENTIALS.sub(lambda m: m.group(1) + redact.MASK + m.group(3), text)
    text = redact._BEARER.sub(lambda m: m.group(1) + redact.MASK, text)
    text = redact._YAML_BLOCK.sub(redact._mask_block, text)
    text = redact._YAML_ENV_BLOCK.sub(redact._mask_block, text)
    for pattern, value_pattern in redact._NAMED:
        text = redact._sub_named(pattern, value_pattern, text)
    return redact._TOKEN_SHAPES.sub(redact.MASK, text)


PIECES = ["-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", BODY[0], "password: |", "\n", "  ",
          "    s3cr3t", "- name: DB_PASSWORD", "value: hunter2", "https://bob:pw@h/x", "Bearer abcdefghijk",
          "Token 12ab34cd56", "basic", "HF_TOKEN=zq1", '{\\"password\\": \\"zq2\\"}', '"name": "API_KEY", "value": "v"',
          "--api-key sekret", "ghp_0123456789abcdefghijABCDEFGHIJ", "tokens", "key=value", " ", "x"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=8).map("".join))
def test_redact_text_skips_only_passes_that_could_not_match(text):
    assert redact.redact_text(text) == every_pass(text)


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from("ab \t\n\x00\x08\x0b\x1b\x1f\x7f\x80\x9b\x9fé│"), max_size=12))
def test_has_control_finds_what_clean_removes(text):
    assert has_control(text) == (re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text) is not None)


def test_a_whole_read_without_a_key_is_joined_and_searched_once(monkeypatch):
    """Issue 34 (bench checkeval): the run check masks each Pod's log as one read (redact_lines, keys only), which
    joined the read's lines and searched them for a key's `-----`, then, finding none, joined them again and
    searched them for `-----` again to flag the lines to look at: for 10 Pods of 1,000 lines, 1-2 ms of the check's
    17. Each scan of the joined read (_lines_with) is made once; a read without `-----` needs only the one for a
    key's body lines."""
    scans = []
    lines_with = redact._lines_with
    monkeypatch.setattr(redact, "_lines_with", lambda text, find: scans.append(len(text)) or lines_with(text, find))
    texts = [f"step {i} loss=0.{i} HF_TOKEN=hf_{i:030d}" for i in range(1000)]
    assert redact.redact_lines(texts, ["zqKnown1"], keys_only=True) == texts
    assert scans == [len("\n".join(texts))]
