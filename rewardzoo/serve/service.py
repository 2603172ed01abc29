"""The reward behind ``rewardzoo serve``: built exactly as a recipe builds it, scoring batches of rows
and learning from them in the core's order (score, then ``update``), its warm-up first, its state
checkpointed atomically after every update.

    rows   = service.rows(prompts, completions, references, group_ids, meta)  # checked, → Rollouts
    result = service.process(service.merge([rows, ...], step))                 # score → update → save

What the trainer does and the service does the same way:

* the task's format parser turns each completion into its answer (``task.parse``), so callers send raw
  completions; a row's reference and meta data are the caller's, else those of the task example whose
  prompt it is, or the reference store's (``--references``), so a caller that only knows the prompt text
  still gives the reward what the trainer would; a row with neither is refused (422), never scored 0;
  references that differ from the service's own are the client's (:meth:`RewardService.client_references`),
  which the app lets train the judge only for a ``learn+references`` token;
* the reward is ``build_reward(cfg.reward, task, RewardContext(seed, starting weights, device))``, the
  starting weights being the recipe's (``init_from``, or its cached SFT warm start); a reward that reads
  the policy (RcRL's self-judge, the bonuses: ``bind_policy``) is bound to the starting policy, once, which
  the trainer moves by pushing its trainable parameters (:meth:`RewardService.push_policy`);
* ``score`` is checked (one finite float per row) before ``update`` runs, and a batch whose ``score`` or
  ``update`` fails leaves the reward as its last checkpoint holds it (it is reloaded), so a judge never
  learns from a batch it could not score.

The warm-up.  A learned reward's ``warmup_steps`` (RAL's judge, VARL's discriminator) are run on the
first batch the service receives, before that batch is scored — the warm-up rounds of the TRL adapter
(:mod:`rewardzoo.integrations.trl`): each round reuses that batch, because the trainer, not the service,
samples.  It is recorded in the checkpoint, so a restart does not warm up again.

Checkpoints and the log.  ``out_dir/checkpoints/step_<k>/`` holds the reward's ``state_dict`` after
``k`` batches, written by the core's atomic protocol (:func:`~rewardzoo.core.checkpoint.write_atomically`),
every ``checkpoint_every`` batches (1: every batch, before its rewards are returned).  ``out_dir/serve_log.jsonl``
gets one line per batch (appended and flushed before the checkpoint).  On start, the newest complete
checkpoint is loaded; every logged batch after it is a batch whose update was lost, and the service
says which (:attr:`RewardService.lost`; none with ``checkpoint_every=1``: a batch is answered only once
its update is on disk).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import torch

from rewardzoo.core.checkpoint import checkpoints, new_run_id, restore_rng, write_atomically
from rewardzoo.core.config import ConfigError, to_yaml
from rewardzoo.core.models import load_policy
from rewardzoo.core.trainer import make_accelerator, namespaced
from rewardzoo.core.types import NonFiniteError, Reward, RewardOutput, Rollouts, TaskProtocol, check_reward
from rewardzoo.recipes import starting_weights, task_for
from rewardzoo.serve.audit import Audit, read_jsonl
from rewardzoo.zoo import REWARDS, RewardContext, TrainConfig, build_reward, load_config


@dataclass
class ServeConfig:
    """How the service batches, limits and checkpoints (``rewardzoo serve --help``)."""

    max_batch_rows: int = 512
    """Rows the judge scores and learns from at once: waiting requests are merged up to this (a larger
    request is one batch of its own)."""
    max_wait_ms: float = 10.0
    """How long the oldest waiting request waits for others to merge with before its batch starts."""
    max_queue_rows: int = 8192
    """Back-pressure: a request that would make more rows than this wait is refused (HTTP 503, Retry-After)."""
    max_request_rows: int = 4096
    """Rows one request may carry (HTTP 413 beyond)."""
    max_request_bytes: int = 16 * 2**20
    """Bytes one request body may have (HTTP 413 beyond)."""
    group_size: int = 0
    """Rows every group of a request must have (0: any). A group split across requests is refused (HTTP 422):
    groups are whole within a request. Default for rewards that compare rows within a group (RcRL): the
    recipe's ``grpo.group_size``."""
    checkpoint_every: int = 1
    """Write the reward's state every this many batches (1: before each batch's rewards are returned, so a
    killed service loses no answered batch's update)."""
    keep: int = 2
    """Checkpoints kept."""
    learn: bool = True
    """Run the reward's ``update`` (and warm-up) on what it scores; false (``--no-learn``): a frozen reward,
    and a request asking to learn is refused (403)."""
    max_requests_per_s: float = 0.0
    """Requests a second one client may send (429 with Retry-After beyond; 0: no cap)."""
    max_update_share: float = 1.0
    """The largest share of the judge's updates one client may have over ``share_window_s`` (429 beyond; 1: no
    cap): :mod:`rewardzoo.serve.limits`."""
    share_window_s: float = 60.0
    """The window, in seconds, over which a client's share of the updates is counted."""
    share_min_rows: int = 256
    """The share is of at least this many rows: a client alone learns at most ``max_update_share`` of them per
    window."""
    body_timeout_s: float = 30.0
    """Seconds a request body may take to arrive (a slow body is answered 408, so slow senders cannot hold the
    service's connections)."""

    def validate(self) -> None:
        """Reject limits that cannot work, naming the flag."""
        for name in (
            "max_batch_rows",
            "max_queue_rows",
            "max_request_rows",
            "max_request_bytes",
            "checkpoint_every",
            "keep",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1; got {getattr(self, name)}")
        if self.max_wait_ms < 0 or self.group_size < 0 or self.max_requests_per_s < 0:
            raise ConfigError("--max-wait-ms, --group-size and --max-requests-per-s must be >= 0")
        if not 0 < self.max_update_share <= 1:
            raise ConfigError(f"--max-update-share must be in (0, 1]; got {self.max_update_share}")
        if self.share_window_s <= 0 or self.body_timeout_s <= 0 or self.share_min_rows < 1:
            raise ConfigError("--share-window-s and --body-timeout-s must be > 0, --share-min-rows at least 1")
        if self.max_queue_rows < self.max_request_rows:
            raise ConfigError(
                f"--max-queue-rows ({self.max_queue_rows}) must be at least --max-request-rows "
                f"({self.max_request_rows}), or a largest request could never be queued"
            )


def answer_key(client: str, request_id: str) -> str:
    """The key of a remembered answer: request ids are the client's own, so one client never reads another's."""
    return f"{client}/{request_id}"


REMEMBERED = 256
"""Request ids whose answers the service keeps (with its checkpoint) to answer a retry without learning twice."""

GROUP_COMPARING = ("rcrl",)
"""Rewards whose score compares the rows of a group with each other: their groups must be whole."""


def serve_config_for(recipe_or_reward: str, overrides: list[str] | None = None) -> TrainConfig:
    """The :class:`TrainConfig` of a recipe (a shipped name or a YAML path) or of a reward's name (``ral``:
    the defaults with ``reward.name=ral``), with ``key=value`` overrides."""
    if recipe_or_reward in REWARDS:
        return load_config(None, [f"reward.name={recipe_or_reward}", *(overrides or [])])
    return load_config(recipe_or_reward, overrides)


def build_served_reward(cfg: TrainConfig, task: TaskProtocol) -> tuple[Reward, torch.nn.Module | None]:
    """The reward exactly as :func:`rewardzoo.recipes.make_trainer` builds it (the recipe's seed, starting
    weights and device), bound to the starting policy when it reads the policy; and that policy (None when the
    reward does not read it), which :meth:`RewardService.push_policy` moves to the trainer's."""
    accelerator = make_accelerator()
    init = starting_weights(cfg, task, accelerator)
    reward = build_reward(cfg.reward, task, RewardContext(seed=cfg.seed, init_dir=init, device=str(accelerator.device)))
    bind_policy = getattr(reward, "bind_policy", None)
    if bind_policy is None:
        return reward, None
    policy, tokenizer = load_policy(cfg.model, init, seed=cfg.seed)
    policy = policy.to(accelerator.device).eval()
    bind_policy(policy, tokenizer)
    return reward, policy


@dataclass
class Part:
    """One request's place in a batch: its id, rows, client, and the rows whose references the client supplied
    (``(row, prompt, reference)``, audited when learned from)."""

    request_id: str | None
    rows: int
    client: str = "anonymous"
    client_references: list[tuple[int, str, str]] = field(default_factory=list)


def read_reference_store(path: str | Path) -> dict[str, str]:
    """A reference store: a JSONL file of ``{"prompt": ..., "reference": ...}`` lines (``--references``)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ConfigError(f"--references {path}: no such file; give a JSONL file of prompt and reference lines")
    store = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            store[str(row["prompt"])] = str(row["reference"])
        except (ValueError, KeyError, TypeError):
            raise ConfigError(
                f"{path}:{number}: expected a JSON object with 'prompt' and 'reference'; got {line[:80]!r}"
            ) from None
    return store


@dataclass
class Processed:
    """What one batch gave: its rewards and components, the reward's metrics, the update's statistics."""

    batch: int
    """The batch's number (1 = the first batch the service scored)."""
    out: RewardOutput
    answers: list[str | None]
    learned: dict[str, float] = field(default_factory=dict)

    def share(self, start: int, stop: int) -> dict:
        """Rows ``start:stop`` of the batch as one request's answer: rewards, components, answers, and the batch's
        metrics, update statistics, number and size."""
        return {
            "rewards": self.out.rewards[start:stop].tolist(),
            "components": {k: v[start:stop].float().tolist() for k, v in self.out.components.items()},
            "answers": self.answers[start:stop],
            "metrics": self.out.metrics,
            "learned": self.learned,
            "batch": self.batch,
            "batch_rows": len(self.answers),
        }


class RewardService:
    """One zoo reward serving batches (see the module docstring). Not thread-safe: one worker calls
    :meth:`process` (the :class:`~rewardzoo.serve.batcher.Batcher`'s)."""

    def __init__(
        self,
        cfg: TrainConfig,
        out_dir: str | Path,
        serve: ServeConfig | None = None,
        *,
        task: TaskProtocol | None = None,
        reward: Reward | None = None,
        references: str | Path | None = None,
    ):
        self.cfg = cfg
        self.serve = serve = serve or ServeConfig()
        if not serve.group_size and cfg.reward.name in GROUP_COMPARING:
            serve.group_size = cfg.grpo.group_size
        serve.validate()
        self.out_dir = Path(out_dir).expanduser()
        self._check_out_dir()
        self.task = task_for(cfg, task)
        try:
            self.reward, self.policy = build_served_reward(cfg, self.task) if reward is None else (reward, None)
        except ValueError as err:  # a reward setting its build cannot satisfy: said before the service listens
            raise ConfigError(f"reward.{cfg.reward.name}: {err}") from err
        check_reward(self.reward)
        self.examples = {
            e.prompt: e for split in ("train", "eval", "validation") for e in getattr(self.task, split, None) or []
        }
        self.references = {p: e.reference for p, e in self.examples.items() if e.reference is not None}
        """The service's own references, by prompt: the task's data, then the reference store (``--references``)."""
        for prompt, reference in (read_reference_store(references) if references else {}).items():
            if self.references.setdefault(prompt, reference) != reference:
                raise ConfigError(
                    f"--references gives {prompt[:60]!r} the reference {reference!r}, but the task's is "
                    f"{self.references[prompt]!r}; remove the line or fix it"
                )
        self.audit = Audit(self.out_dir)
        self.accelerator = make_accelerator()
        self.batches = 0
        """Batches scored and learned from so far (the newest checkpoint's step after a restart)."""
        self.warmed = not serve.learn or self.reward.warmup_steps == 0
        self.service_id = new_run_id()
        self.lost: list[int] = []
        """Batches scored before a kill whose updates the newest checkpoint lacks (said at start)."""
        self.answered: OrderedDict[str, dict] = OrderedDict()
        """What the newest requests that carried a ``request_id`` were answered (the last :data:`REMEMBERED`),
        saved with the reward: a retried request is answered from here, not learned from twice."""
        self.policy_version = 0
        """Policy states pushed so far (:meth:`push_policy`); the newest is in ``out_dir/policy.pt``."""
        self._resume()
        self._resume_policy()
        self.audit.write({"event": "start", "judge_step": self.batches, "policy_version": self.policy_version})

    # ------------------------------------------------------------------ rows in
    def rows(
        self,
        prompts: list[str],
        completions: list[str],
        references: list[str | None] | None = None,
        group_ids: list[int] | None = None,
        meta: list[dict] | None = None,
    ) -> Rollouts:
        """One request's rows as a checked :class:`Rollouts` (a ValueError, saying what to change, before any
        work): answers parsed by the task's parser; references and meta the caller's, else the task example's
        of that prompt; group ids the caller's, else runs of equal consecutive prompts. Its step is set when
        it is merged into a batch (:meth:`merge`)."""
        n = len(prompts)
        if n == 0:
            raise ValueError("the request has no rows: send at least one prompt with its completion")
        if n > self.serve.max_request_rows:
            raise ValueError(
                f"the request has {n} rows, more than the service takes ({self.serve.max_request_rows}, "
                f"--max-request-rows); split it into requests of whole groups"
            )
        for name, values in (
            ("completions", completions),
            ("references", references),
            ("group_ids", group_ids),
            ("meta", meta),
        ):
            if values is not None and len(values) != n:
                raise ValueError(f"{name} has {len(values)} rows but prompts has {n}; send one entry per row")
        known = [self.examples.get(p) for p in prompts]
        if references is None:
            references = [None] * n
        references = [r if r is not None else self.references.get(p) for r, p in zip(references, prompts)]
        unplaced = [i for i, r in enumerate(references) if r is None and known[i] is None]
        if unplaced:
            raise ValueError(
                f"rows {unplaced[:8]} have a prompt that is not one of the task's examples and no reference "
                f"(first: {prompts[unplaced[0]][:60]!r}), so the reward cannot place them; send their "
                f"references, or start the service with --references FILE"
            )
        meta = [
            m if m is not None else (e.meta if e is not None else {})
            for m, e in zip(meta if meta is not None else [None] * n, known)
        ]
        if group_ids is None:
            starts = [i == 0 or prompts[i] != prompts[i - 1] for i in range(n)]
            ids = torch.tensor(starts, dtype=torch.long).cumsum(0) - 1  # [N]
        else:
            ids = torch.tensor(group_ids, dtype=torch.long)  # [N]
        self._check_groups(ids, prompts)
        return Rollouts(
            prompts=list(prompts),
            completions=list(completions),
            answers=[self.task.parse(c) for c in completions],
            references=references,
            group_ids=ids,
            meta=meta,
            step=0,
        )

    def client_references(self, prompts: list[str], references: list[str | None] | None) -> list[tuple[int, str, str]]:
        """The rows whose reference is the client's own, not the service's: (row, prompt, reference) for each
        reference that differs from the service's for that prompt, or that it has none for."""
        if references is None:
            return []
        pairs = enumerate(zip(prompts, references))
        return [(i, p, r) for i, (p, r) in pairs if r is not None and self.references.get(p) != r]

    def _check_groups(self, ids: torch.Tensor, prompts: list[str]) -> None:
        """Every group holds one prompt, and (with ``group_size``) exactly that many rows: a group split
        across requests is refused, never scored as a smaller group."""
        members: dict[int, list[int]] = {}
        for i, gid in enumerate(ids.tolist()):
            members.setdefault(gid, []).append(i)
        for gid, rows in members.items():
            if len({prompts[i] for i in rows}) != 1:
                raise ValueError(
                    f"group {gid} holds rows of different prompts (rows {rows[:8]}); a group is the "
                    f"completions of one prompt"
                )
            size = self.serve.group_size
            if size and len(rows) != size:
                raise ValueError(
                    f"group {gid} has {len(rows)} rows, but this service's groups have {size} "
                    f"(--group-size): a group split across requests is refused, as {self.cfg.reward.name} "
                    f"compares the rows of a group with each other; send each group whole in one request"
                )

    def merge(self, parts: list[Rollouts], step: int | None = None) -> Rollouts:
        """Several requests' rows as one batch, in order, each request's groups kept apart (renumbered
        0, 1, … across the batch); its step is ``step``, or (None) the number of batches done so far."""
        ids, offset = [], 0
        for part in parts:
            _, local = torch.unique(part.group_ids, sorted=False, return_inverse=True)  # [n] 0..g-1
            ids.append(local + offset)
            offset += int(local.max()) + 1
        return Rollouts(
            prompts=[p for x in parts for p in x.prompts],
            completions=[c for x in parts for c in x.completions],
            answers=[a for x in parts for a in x.answers],
            references=[r for x in parts for r in x.references],
            group_ids=torch.cat(ids),
            meta=[m for x in parts for m in x.meta],
            step=self.batches if step is None else step,
        )

    # ------------------------------------------------------------------ score → update → save
    def score(self, batch: Rollouts) -> RewardOutput:
        """The reward's output, checked as the trainer checks it: one finite float per row."""
        out = self.reward.score(batch)
        name = type(self.reward).__name__
        if out.rewards.shape != (len(batch),):
            raise ValueError(
                f"reward {name} returned rewards of shape {tuple(out.rewards.shape)}, expected [{len(batch)}]"
            )
        bad = (~torch.isfinite(out.rewards)).nonzero().flatten().tolist()
        if bad:
            raise NonFiniteError(
                f"reward {name} returned non-finite rewards at rows {bad[:10]}; the batch was not learned from"
            )
        out.rewards = out.rewards.float()
        return out

    def process(self, batch: Rollouts, requests: list[Part] = (), *, learn: bool = True) -> Processed:
        """Warm up (first batch only), score, update, audit, log and checkpoint one batch. ``requests`` are the
        parts of the requests merged into it, in order: each one's audit line is written (fsync'd) before the
        checkpoint, and each id's answer remembered with it. ``learn=False`` (or ``--no-learn``) only scores:
        the judge, its step and its checkpoint stay as they are. When anything fails, the reward is put back to
        its newest checkpoint and the error raised: nothing half-learned stays."""
        if not (learn and self.serve.learn):
            return self._score_only(batch, requests)
        t0 = time.perf_counter()
        try:
            warm: dict[str, float] = {}
            if not self.warmed:
                for _ in range(self.reward.warmup_steps):
                    warm = self.reward.update(batch, self.score(batch))
                warm = {f"warmup/{k}": v for k, v in warm.items()}
            out = self.score(batch)
            learned = namespaced(self.reward.update(batch, out))
        except Exception:
            self._resume()
            raise
        self.warmed = True
        self.batches += 1
        self._log(
            {
                "batch": self.batches,
                "rows": len(batch),
                "step": batch.step,
                "reward/mean": out.rewards.mean().item(),
                **namespaced(out.metrics),
                **warm,
                **learned,
                "time/batch_s": time.perf_counter() - t0,
            }
        )
        processed = Processed(batch=self.batches, out=out, answers=batch.answers, learned={**warm, **learned})
        start = 0
        for part in requests:
            self.audit.write(
                {
                    "client": part.client,
                    "request_id": part.request_id,
                    "rows": part.rows,
                    "event": "learned",
                    "judge_step": self.batches,
                    "client_references": [[start + i, p, r] for i, p, r in part.client_references],
                },
                sync=True,
            )
            if part.request_id is not None:
                self.answered[answer_key(part.client, part.request_id)] = {
                    k: v
                    for k, v in processed.share(start, start + part.rows).items()
                    if k not in ("metrics", "learned")
                }
            start += part.rows
        while len(self.answered) > REMEMBERED:
            self.answered.popitem(last=False)
        if self.batches % self.serve.checkpoint_every == 0:
            self.save()
        return processed

    def _score_only(self, batch: Rollouts, requests: list[Part]) -> Processed:
        """Score a batch with the judge as it is (no warm-up, no update, no checkpoint); audit each request."""
        out = self.score(batch)
        for part in requests:
            self.audit.write(
                {
                    "client": part.client,
                    "request_id": part.request_id,
                    "rows": part.rows,
                    "event": "scored",
                    "judge_step": self.batches,
                }
            )
        return Processed(batch=self.batches, out=out, answers=batch.answers)

    # ------------------------------------------------------------------ the policy, pushed by the trainer
    def push_policy(self, state: dict[str, torch.Tensor], client: str = "anonymous") -> int:
        """Load the trainer's current trainable parameters (with LoRA, its adapters) into the policy the reward
        reads, so RcRL's self-judge and the bonuses follow the policy being trained (with LoRA the self-judge is
        the policy with adapters off, as in-process); saved atomically to ``out_dir/policy.pt`` (a restart
        resumes it) and audited. A ValueError, before anything changes, for a reward that reads no policy or
        a state that is not a subset of the policy's trainable parameters with their shapes."""
        if self.policy is None:
            raise ValueError(
                f"reward {self.cfg.reward.name} does not read the policy (no bind_policy), so there is nothing to "
                f"push; only RcRL's self-judge and the bonuses follow the policy"
            )
        own = {n: p for n, p in self.policy.named_parameters() if p.requires_grad}
        unknown = sorted(set(state) - set(own))
        if unknown:
            raise ValueError(
                f"{len(unknown)} pushed tensors are not trainable parameters of the served policy (first: "
                f"{unknown[0]!r}); push named_parameters() with requires_grad, of the same model and LoRA settings"
            )
        bad = [n for n, t in state.items() if not isinstance(t, torch.Tensor) or t.shape != own[n].shape]
        if bad:
            raise ValueError(f"pushed tensor {bad[0]!r} is not a tensor of shape {tuple(own[bad[0]].shape)}")
        with torch.no_grad():
            for n, t in state.items():
                own[n].copy_(t.to(own[n].device, own[n].dtype))
        self.policy_version += 1
        tmp = self.out_dir / "policy.pt.tmp"
        with open(tmp, "wb") as f:
            torch.save({"version": self.policy_version, "state": state}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.out_dir / "policy.pt")
        self.audit.write(
            {"client": client, "event": "policy", "policy_version": self.policy_version, "tensors": len(state)},
            sync=True,
        )
        return self.policy_version

    def _resume_policy(self) -> None:
        """Load the newest pushed policy state, if any (a restart follows the trainer's policy, not the start)."""
        path = self.out_dir / "policy.pt"
        if self.policy is not None and path.exists():
            saved = torch.load(path, weights_only=True)
            own = dict(self.policy.named_parameters())
            with torch.no_grad():
                for n, t in saved["state"].items():
                    own[n].copy_(t)
            self.policy_version = saved["version"]

    # ------------------------------------------------------------------ state on disk
    def save(self) -> Path:
        """An atomic checkpoint of the reward after :attr:`batches` batches."""

        def write(tmp: Path) -> None:
            torch.save(self.reward.state_dict(), tmp / "reward.pt")
            (tmp / "service.json").write_text(
                json.dumps({"batches": self.batches, "warmed": self.warmed, "answered": list(self.answered.items())})
            )

        return write_atomically(
            self.out_dir,
            self.batches,
            write,
            accelerator=self.accelerator,
            keep=self.serve.keep,
            run_id=self.service_id,
        )

    def _resume(self) -> None:
        """Load the newest complete checkpoint (the reward after its batches), or write the first one
        (the reward as built) when there is none; then say which logged batches' updates it lacks."""
        found = checkpoints(self.out_dir)
        if not found:
            self.save()
            return
        latest = found[-1]
        self.reward.load_state_dict(torch.load(latest / "reward.pt", weights_only=False))
        state = json.loads((latest / "service.json").read_text())
        self.batches, self.warmed = state["batches"], state["warmed"] or self.warmed
        self.answered = OrderedDict((k, v) for k, v in state["answered"])
        restore_rng(latest, self.accelerator)
        logged = [row["batch"] for row in self.log_rows() if "batch" in row]
        self.lost = sorted({b for b in logged if b > self.batches})
        if self.lost:
            self._log({"event": "restart", "resumed_from_batch": self.batches, "lost_updates": self.lost})

    def log_rows(self) -> list[dict]:
        """The lines of ``serve_log.jsonl`` (a torn last line from a kill is skipped)."""
        return read_jsonl(self.out_dir / "serve_log.jsonl")

    def _log(self, row: dict) -> None:
        with open(self.out_dir / "serve_log.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _check_out_dir(self) -> None:
        """The service's directory holds this configuration's service or nothing: a restart with another
        recipe or other settings is refused (its checkpoint belongs to another reward)."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        saved = self.out_dir / "config.yaml"
        mine = to_yaml(self.cfg)
        if saved.exists() and checkpoints(self.out_dir) and saved.read_text() != mine:
            raise ConfigError(
                f"{self.out_dir} holds the state of a service with other settings ({saved}); "
                f"give another "
                f"--dir, or the same recipe and overrides to resume it"
            )
        saved.write_text(mine)

    def health(self) -> dict:
        """What ``GET /health`` says: the reward, the batches done, whether warmed up, lost updates."""
        return {
            "status": "ok",
            "reward": self.cfg.reward.name,
            "recipe": self.cfg.recipe.name,
            "task": self.task.name,
            "batches": self.batches,
            "warmed": self.warmed,
            "learn": self.serve.learn,
            "group_size": self.serve.group_size,
            "lost_updates": self.lost,
            "policy_version": self.policy_version,
            "settings": dataclasses.asdict(self.serve),
        }
