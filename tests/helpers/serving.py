"""A real ``rewardzoo serve`` process on 127.0.0.1 for the service's tests and its load benchmark, and the
small RAL recipe they serve (the CPU recipe ral_multiplication at test sizes: a tiny judge from scratch)."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECIPE = "ral_multiplication"
OVERRIDES = [
    "sft.enabled=false",
    "sft.disjoint_rl_prompts=false",
    "task.multiplication.n_train=64",
    "task.multiplication.n_eval=16",
    "task.multiplication.n_validation=16",
    "reward.ral.warmup_steps=2",
    "reward.ral.judge.init_from=",
]


def free_port() -> int:
    """A port nothing listens on now (the OS's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """A started service: its URL, process and log file; :meth:`kill` (SIGKILL) and :meth:`start` again.
    ``token`` is sent with :meth:`health`; ``ca_file`` (a service started with ``--ssl-certfile``) makes the
    URL https and is trusted by :meth:`health`."""

    def __init__(
        self,
        out_dir: Path,
        recipe: str = RECIPE,
        overrides: list[str] | None = None,
        flags: list[str] = (),
        token: str | None = None,
        ca_file: str | None = None,
    ):
        self.out_dir, self.recipe = Path(out_dir), recipe
        self.overrides = OVERRIDES if overrides is None else overrides
        self.flags, self.port = list(flags), free_port()
        self.token, self.ca_file = token, ca_file
        self.url = f"{'https' if ca_file else 'http'}://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log = self.out_dir.parent / f"{self.out_dir.name}.serve.log"

    def start(self, timeout: float = 180.0) -> Served:
        """Start the service and wait until ``/health`` answers."""
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "rewardzoo.cli",
                    "serve",
                    self.recipe,
                    *self.overrides,
                    "--port",
                    str(self.port),
                    "--dir",
                    str(self.out_dir),
                    *self.flags,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=ROOT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"rewardzoo serve exited with {self.proc.returncode}:\n{self.log.read_text()}")
            try:
                self.health()
                return self
            except OSError:
                time.sleep(0.3)
        raise TimeoutError(f"rewardzoo serve did not answer in {timeout} s:\n{self.log.read_text()}")

    def health(self) -> dict:
        """``GET /health`` (with the token, if any)."""
        headers = {"authorization": f"Bearer {self.token}"} if self.token else {}
        context = ssl.create_default_context(cafile=self.ca_file) if self.ca_file else None
        request = urllib.request.Request(f"{self.url}/health", headers=headers)
        with urllib.request.urlopen(request, timeout=10, context=context) as r:
            return json.loads(r.read())

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        """SIGTERM (uvicorn's graceful shutdown), SIGKILL after 30 s."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


@contextmanager
def serving(out_dir: Path, *args, **kwargs):
    """A started :class:`Served` (its arguments), stopped on exit."""
    served = Served(out_dir, *args, **kwargs).start()
    try:
        yield served
    finally:
        served.stop()


def post(
    url: str, body: dict | bytes, path: str = "/score", headers: dict | None = None, token: str | None = None
) -> tuple[int, dict]:
    """(status, JSON body) of one POST, errors included (no retry); ``token`` goes in ``Authorization: Bearer``."""
    headers = {**({"authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{url}{path}", data=data, headers={"content-type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")
