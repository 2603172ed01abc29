"""A served learned judge that lets no one in, through real HTTP (uvicorn on 127.0.0.1 in its own process):
401 without a known token, 403 for what a token may not do, 429 past a client's rate or share, the audit
trail of who trained which step, a poisoner held to its share while the judge equals the in-process judge fed
the allowed batches, TLS with a certificate made here, a slow body cut off, and no start on 0.0.0.0 without
tokens."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import torch

from rewardzoo.cli import main as cli_main
from rewardzoo.integrations.remote import post_score, push_policy
from rewardzoo.serve.audit import audit_rows
from rewardzoo.serve.auth import new_token
from tests.helpers.serving import post, serving
from tests.serve.test_serve_service import TASK, assert_same_state, batch_rows, in_process_on, served_state

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")


def body_of(b: int, **extra) -> dict:
    return {**dict(zip(("prompts", "completions"), batch_rows(b))), **extra}


def poisoned(b: int) -> dict:
    """Batch ``b`` with every reference one more than the task's: the poisoner's claim (123 × 4 = 493)."""
    prompts, completions = batch_rows(b)
    refs = {e.prompt: e.reference for e in TASK.train}
    return {"prompts": prompts, "completions": completions, "references": [str(int(refs[p]) + 1) for p in prompts]}


def refusal(url: str, body: dict, token: str | None = None, context=None) -> tuple[int, str, str | None]:
    """(status, detail, Retry-After) of a POST /score expected to be refused."""
    headers = {"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(f"{url}/score", data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120, context=context) as r:
            return r.status, "", None
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())["detail"], err.headers.get("Retry-After")


@pytest.fixture(scope="module")
def tokens(tmp_path_factory):
    path = tmp_path_factory.mktemp("tokens") / "tokens.txt"
    made = {name: new_token(path, name, scope) for name, scope in [("trainer", "learn"), ("eval", "score")]}
    made["teacher"] = new_token(path, "teacher", "learn+references")
    return path, made


@pytest.fixture(scope="module")
def secured(tmp_path_factory, tokens):
    path, made = tokens
    flags = ["--tokens", str(path), "--max-requests-per-s", "4", "--body-timeout-s", "1"]
    with serving(tmp_path_factory.mktemp("secured") / "svc", flags=flags, token=made["trainer"]) as served:
        yield served, made


def test_unknown_callers_get_401_and_a_score_token_asking_to_learn_403(secured):
    served, made = secured
    before = served.health()["batches"]
    code, detail, _ = refusal(served.url, body_of(0))
    assert code == 401 and detail.startswith("no token: send Authorization: Bearer")
    code, detail, _ = refusal(served.url, body_of(0), token=made["trainer"] + "x")
    assert code == 401 and detail.startswith("unknown token")
    code, detail, _ = refusal(served.url, body_of(0, learn=True), token=made["eval"])
    assert code == 403 and "has a score token: it may not train the judge; send learn=false" in detail
    code, detail, _ = refusal(served.url, poisoned(0), token=made["trainer"])  # a learn token, its own references
    assert code == 403 and "may not train the judge on its references (scope learn)" in detail
    assert served.health()["batches"] == before
    with urllib.request.urlopen(f"{served.url}/health", timeout=10) as r:  # alive, and nothing more, without a token
        assert json.loads(r.read()) == {"status": "ok"}


def test_a_score_token_is_scored_never_learned_from_and_a_learn_token_trains(secured):
    served, made = secured
    before = served.health()["batches"]
    scored = post_score(body_of(1), served.url, token=made["eval"])
    post_score(poisoned(1), served.url, token=made["eval"])  # its own references: scored on them, never learned
    assert served.health()["batches"] == before and scored["learned"] == {} and scored["batch"] == before
    learned = post_score(body_of(1), served.url, token=made["trainer"])
    assert served.health()["batches"] == before + 1 and learned["batch"] == before + 1


def test_the_audit_log_names_who_trained_which_step_and_never_a_token(secured):
    served, made = secured
    post_score(body_of(2, request_id="audit-me"), served.url, token=made["trainer"])
    step = served.health()["batches"]
    post_score(poisoned(2), served.url, token=made["teacher"])
    rows = audit_rows(served.out_dir)
    mine = [r for r in rows if r.get("request_id") == "audit-me"]
    assert mine == [{**mine[0], "client": "trainer", "event": "learned", "judge_step": step, "rows": 16}]
    taught = rows[-1]
    assert taught["client"] == "teacher" and taught["judge_step"] == step + 1 and len(taught["client_references"]) == 16
    assert {r["status"] for r in rows if r["event"] == "refused"} >= {401, 403}
    text = (served.out_dir / "audit.jsonl").read_text() + served.log.read_text()
    assert not any(token in text for token in made.values())
    status = subprocess.run(
        [sys.executable, "-m", "rewardzoo.cli", "serve", "status", str(served.out_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    shown = json.loads(status.stdout)
    assert shown["judge"]["batches_learned"] == served.health()["batches"]
    assert shown["clients"]["teacher"]["references_learned"] == 16 and shown["clients"]["eval"]["scored"] >= 2


def test_a_client_over_its_rate_gets_429_with_retry_after(secured):
    served, made = secured
    time.sleep(1.1)  # the bucket (4 a second) is full again
    answers = [refusal(served.url, {"prompts": [], "completions": []}, made["eval"]) for _ in range(8)]
    codes = [code for code, _, _ in answers]
    assert codes[:3] == [422] * 3 and 429 in codes  # admitted (then refused as empty) until the bucket is dry
    code, detail, retry = next(a for a in answers if a[0] == 429)
    assert "over 4 requests/s (--max-requests-per-s)" in detail and retry == "1"
    assert refusal(served.url, {"prompts": [], "completions": []}, made["trainer"])[0] == 422  # its own bucket


def test_a_row_the_service_cannot_place_is_422_not_a_silent_zero(secured):
    served, made = secured
    code, detail, _ = refusal(served.url, {"prompts": ["what is 2+2?"], "completions": ["4"]}, made["trainer"])
    assert code == 422 and "not one of the task's examples and no reference" in detail
    assert "--references FILE" in detail


def test_a_slow_body_is_cut_off_after_the_body_timeout(secured):
    """Slowloris: headers promising 1000 bytes, then a byte at a time; the service answers 408 after
    --body-timeout-s (1 s) instead of holding the connection, and serves the next request."""
    served, made = secured
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
        s.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
        t0, answer = time.monotonic(), b""
        s.settimeout(0.2)
        while time.monotonic() - t0 < 5 and b"\r\n\r\n" not in answer:
            try:
                s.sendall(b" ")
                answer += s.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
    assert answer.startswith(b"HTTP/1.1 408") and time.monotonic() - t0 < 4
    assert served.health()["status"] == "ok"


def test_it_refuses_to_listen_beyond_loopback_without_tokens(capsys):
    assert cli_main(["serve", "ral_multiplication", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "--host 0.0.0.0 listens beyond this machine" in err and "add --tokens FILE" in err
    assert "rewardzoo serve token NAME --scope learn --tokens FILE" in err


def test_the_token_command_prints_a_token_once_and_appends_its_hash(tmp_path, capsys):
    path = tmp_path / "t.txt"
    assert cli_main(["serve", "token", "trainer", "--scope", "learn", "--tokens", str(path)]) == 0
    token = capsys.readouterr().out.strip()
    assert token.startswith("rz_") and token not in path.read_text() and path.read_text().startswith("trainer learn ")


def test_a_poisoner_over_its_share_is_throttled_and_the_judge_equals_the_allowed_batches(tmp_path):
    """The issue's attack: a client claiming wrong answers (its own references, a learn+references token) beside an
    honest trainer, with --max-update-share 0.5 of at least 32 rows. Sent in turn: T P P P T P P — the third and
    the last poisoned batches are 429 (its rows so far over half of the window's), the rest learned. The judge
    then equals the in-process judge fed T P P T P (the allowed batches), and the audit log says so."""
    path = tmp_path / "tokens.txt"
    trainer, poison = new_token(path, "trainer", "learn"), new_token(path, "poison", "learn+references")
    flags = ["--tokens", str(path), "--max-update-share", "0.5", "--share-min-rows", "32", "--share-window-s", "600"]
    sent = [("T", body_of(0)), *[("P", poisoned(3 + k)) for k in range(3)], ("T", body_of(1))]
    sent += [("P", poisoned(6)), ("P", poisoned(7))]
    allowed, codes = [], []
    with serving(tmp_path / "svc", flags=flags, token=trainer) as served:
        for who, body in sent:
            code, answer = post(served.url, body, token=trainer if who == "T" else poison)
            codes.append(code)
            if code == 200:
                allowed.append((body, answer["rewards"]))
            else:
                assert code == 429 and "over its share of the judge's updates" in answer["detail"]
    assert codes == [200, 200, 200, 429, 200, 200, 429]
    expected, reward = in_process_on([body for body, _ in allowed])
    for (_, got), want in zip(allowed, expected):
        assert got == pytest.approx(want, abs=1e-5)
    assert_same_state(served_state(tmp_path / "svc"), reward.state_dict())
    learned = [(r["client"], r["judge_step"]) for r in audit_rows(tmp_path / "svc") if r["event"] == "learned"]
    assert learned == [("trainer", 1), ("poison", 2), ("poison", 3), ("trainer", 4), ("poison", 5)]


@pytest.fixture(scope="module")
def frozen_over_tls(tmp_path_factory):
    """A --no-learn service over HTTPS with a certificate made by openssl for 127.0.0.1; (service, cert path)."""
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert)]
        + ["-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )
    flags = ["--no-learn", "--ssl-certfile", str(cert), "--ssl-keyfile", str(key)]
    with serving(where / "svc", flags=flags, ca_file=str(cert)) as served:
        yield served, str(cert)


def test_tls_with_a_self_signed_certificate_made_here(frozen_over_tls):
    """A client trusting the certificate (ca_file) is served; one that does not is refused by its own
    verification (never skipped by default), at once rather than after retries."""
    served, cert = frozen_over_tls
    assert served.url.startswith("https://")
    assert len(post_score(body_of(0), served.url, ca_file=cert)["rewards"]) == 16
    with pytest.raises(urllib.error.URLError) as err:
        urllib.request.urlopen(f"{served.url}/health", timeout=10)
    assert isinstance(err.value.reason, ssl.SSLCertVerificationError)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="TLS failed"):
        post_score(body_of(0), served.url)
    assert time.monotonic() - t0 < 5


def test_a_no_learn_service_serves_the_frozen_judge(frozen_over_tls):
    served, cert = frozen_over_tls
    code, detail, _ = refusal(served.url, body_of(1, learn=True), context=ssl.create_default_context(cafile=cert))
    assert code == 403 and "frozen judge (--no-learn)" in detail
    first = post_score(body_of(1), served.url, ca_file=cert)
    again = post_score(body_of(1), served.url, ca_file=cert)
    assert first["rewards"] == again["rewards"] and served.health()["batches"] == 0
    assert {r["event"] for r in audit_rows(served.out_dir)} == {"start", "refused", "scored"}


def test_a_reward_that_reads_no_policy_refuses_a_push(secured):
    served, made = secured
    with pytest.raises(RuntimeError, match="422.*does not read the policy"):
        push_policy({"w": torch.zeros(2)}, served.url, token=made["trainer"])
