"""The service's tokens file and per-client limits, by hand: hashes that never hold the token, one clear line per
malformed file, the token from either header form, and the rate and share caps on a clock the test moves."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from rewardzoo.core.config import ConfigError
from rewardzoo.serve.auth import Tokens, is_loopback, new_token, presented_token, token_hash
from rewardzoo.serve.limits import Limited, Limits


def test_a_new_token_is_printed_once_and_only_its_salted_hash_is_kept(tmp_path):
    path = tmp_path / "tokens.txt"
    token = new_token(path, "trainer", "learn")
    eval_token = new_token(path, "eval", "score")
    text = path.read_text()
    assert token not in text and eval_token not in text and (path.stat().st_mode & 0o777) == 0o600
    name, scope, line_hash = text.splitlines()[0].split()
    _, salt, digest = line_hash.split(":")
    assert (name, scope) == ("trainer", "learn")
    assert digest == hmac.new(bytes.fromhex(salt), token.encode(), hashlib.sha256).hexdigest()  # the hash by hand
    tokens = Tokens(path)
    assert tokens.client(token).name == "trainer" and tokens.client(eval_token).scope == "score"
    assert tokens.client(token + "x") is None and tokens.client(None) is None and tokens.client("") is None


def test_token_hashes_are_salted():
    assert token_hash("same", b"a" * 16) != token_hash("same", b"b" * 16)


@pytest.mark.parametrize(
    "line,says",
    [
        ("trainer admin sha256:00:11", "expected `name scope"),
        ("trainer learn plaintext-token", "expected `name scope"),
        ("trainer learn", "expected `name scope"),
    ],
)
def test_a_malformed_tokens_file_names_its_line(tmp_path, line, says):
    path = tmp_path / "tokens.txt"
    path.write_text("# clients\n" + line + "\n")
    with pytest.raises(ConfigError, match=f"{path}:2: {says}"):
        Tokens(path)


def test_missing_empty_and_duplicate_tokens_files_say_what_to_do(tmp_path):
    with pytest.raises(ConfigError, match="no such file; make one with `rewardzoo serve token"):
        Tokens(tmp_path / "none.txt")
    (tmp_path / "empty.txt").write_text("# nobody\n")
    with pytest.raises(ConfigError, match="lists no client"):
        Tokens(tmp_path / "empty.txt")
    new_token(tmp_path / "t.txt", "a", "learn")
    with pytest.raises(ConfigError, match="already has a client named 'a'"):
        new_token(tmp_path / "t.txt", "a", "score")
    with pytest.raises(ConfigError, match="--scope must be one of score, learn, learn"):
        new_token(tmp_path / "t.txt", "b", "admin")


def test_the_token_comes_from_a_bearer_or_a_basic_header():
    assert presented_token("Bearer rz_abc") == "rz_abc" and presented_token("bearer  rz_abc ") == "rz_abc"
    basic = base64.b64encode(b"openrlhf:rz_abc").decode()  # what aiohttp sends for http://openrlhf:rz_abc@host
    assert presented_token(f"Basic {basic}") == "rz_abc"
    assert presented_token(None) is None and presented_token("Bearer ") is None and presented_token("Token x") is None
    assert presented_token("Basic !!notbase64") is None


def test_loopback_hosts():
    assert is_loopback("127.0.0.1") and is_loopback("127.1.2.3") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.5") and not is_loopback("::")


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_the_rate_cap_refuses_past_the_bucket_and_says_when_to_retry():
    """2 requests/s: a bucket of 2; the third at once is refused, Retry-After ⌈(1 − 0)/2⌉ = 1 s; 0.5 s later one
    token has refilled (0.5 × 2 = 1). Clients have buckets of their own."""
    clock = Clock()
    limits = Limits(max_requests_per_s=2, clock=clock)
    limits.admit("a")
    limits.admit("a")
    with pytest.raises(Limited, match="over 2 requests/s") as err:
        limits.admit("a")
    assert err.value.retry_after == 1
    limits.admit("b")
    clock.now += 0.5
    limits.admit("a")


def test_the_share_cap_counts_a_client_s_rows_against_everyone_s_in_the_window():
    """Share ½ of max(rows learned in 60 s, 32), 16-row requests, a client admitted while its rows so far are
    within it. t = 100, "poison" alone: 0 ≤ 16 and 16 ≤ ½·32 admitted; then 32 > 16, 16 over: refused until
    its first rows leave the window, Retry-After 60 s. t = 105, "honest": 0 ≤ 16, 16 ≤ ½·48. t = 110: poison
    32 ≤ ½·64 admitted; then 48 > ½·80 = 40, 8 over, refused until its oldest 16 rows (t = 100) leave at t = 160:
    Retry-After 50 s. At t = 160 poison has 16 ≤ ½·48: admitted."""
    clock = Clock()
    limits = Limits(max_update_share=0.5, share_window_s=60, share_min_rows=32, clock=clock)
    limits.admit_learning("poison", 16)
    limits.admit_learning("poison", 16)
    with pytest.raises(Limited, match="'poison' is over its share of the judge's updates") as err:
        limits.admit_learning("poison", 16)
    assert err.value.retry_after == 60
    clock.now = 105.0
    limits.admit_learning("honest", 16)
    limits.admit_learning("honest", 16)
    clock.now = 110.0
    limits.admit_learning("poison", 16)
    with pytest.raises(Limited) as err:
        limits.admit_learning("poison", 16)
    assert err.value.retry_after == 50
    clock.now = 160.0
    limits.admit_learning("poison", 16)


def test_without_caps_nothing_is_refused():
    limits = Limits()
    for _ in range(100):
        limits.admit("a")
        limits.admit_learning("a", 10_000)
