"""A run never destroys or mixes its data (issue 12, items 1, 2, 3, 4, 9): the run directory is
claimed before any work, resume refuses a different experiment, pruning touches only the run's own
checkpoints, the listing never shows a half-deleted checkpoint, a diverged step or warm start is
never saved.

Most tests start from a copy of one finished 2-step run (``finished``: step_1 and step_2)."""

import dataclasses
import errno
import json
import shutil
import subprocess
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import load_file

from rewardzoo import recipes
from rewardzoo.core import checkpoint
from rewardzoo.core.checkpoint import check_run_dir, checkpoint_state, checkpoints, remove_tree
from rewardzoo.core.config import ConfigError
from rewardzoo.core.config import resolved_run_dir as resolved
from rewardzoo.core.models import load_policy
from rewardzoo.core.sft import sft_cache_dir, warm_start
from rewardzoo.core.trainer import NonFiniteError, Trainer, make_accelerator
from rewardzoo.rewards.context import RewardContext
from rewardzoo.rewards.rlvr import RLVR
from rewardzoo.zoo import build_task, load_config
from tests.conftest import FAST

QUICK = ["eval.n_examples=4", "checkpoint_every=1"]


def make_trainer(cfg):
    task = build_task(cfg.task)
    return Trainer(cfg, task=task, reward=RLVR.from_config(ctx=RewardContext(task=task)))


def steps_on_disk(run_dir):
    return [p.name for p in checkpoints(run_dir)]


def snapshot(run_dir):
    """Every file of the run's checkpoints → its bytes."""
    root = run_dir / "checkpoints"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A finished 2-step run (checkpoints step_1 and step_2)."""
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    cfg = load_config("algorithms/rlvr_multiplication.yaml", [*FAST, *QUICK, "steps=2", f"run_dir={run_dir}"])
    make_trainer(cfg).train()
    return run_dir


@pytest.fixture
def run(finished_run, fast_config, tmp_path):
    """``run(*overrides)`` → a config on a private copy of the finished run."""
    shutil.copytree(finished_run, tmp_path / "run")
    (tmp_path / "run" / "config.yaml").write_text(
        (finished_run / "config.yaml").read_text().replace(str(finished_run), str(tmp_path / "run"))
    )
    return lambda *overrides: fast_config(*QUICK, *overrides)


def test_a_fresh_run_refuses_a_directory_holding_a_run_and_overwrite_deletes_it(run):
    """Item 1: a fresh 1-step run into the directory of a finished 2-step run used to prune by step
    number and delete every checkpoint it wrote.  Now it is refused before any work (naming the three
    choices) and the old run is untouched; overwrite=true deletes it and starts again."""
    fresh = make_trainer(run("steps=1"))
    before = snapshot(fresh.run_dir)
    with pytest.raises(ConfigError, match="holds a run.*resume=true.*run_dir=<a new directory>.*overwrite=true"):
        fresh.train()
    assert snapshot(fresh.run_dir) == before and fresh.step == 0
    old_id = checkpoint_state(checkpoints(fresh.run_dir)[0])["run_id"]
    make_trainer(run("steps=1", "overwrite=true")).train()
    assert steps_on_disk(fresh.run_dir) == ["step_000001"]
    assert checkpoint_state(checkpoints(fresh.run_dir)[0])["run_id"] != old_id
    assert [json.loads(line)["step"] for line in (fresh.run_dir / "metrics.jsonl").read_text().splitlines()] == [0, 1]


def test_pruning_deletes_only_the_runs_own_checkpoints(run):
    """Item 1: checkpoints another run left (here step_11 and step_12 with a foreign run id) survive,
    and this run keeps its own newest keep_checkpoints=2."""
    trainer = make_trainer(run("steps=4", "resume=true"))
    trainer._maybe_resume()
    root = trainer.run_dir / "checkpoints"
    for step in (11, 12):
        shutil.copytree(root / "step_000001", root / f"step_{step:06d}")
        state = checkpoint_state(root / f"step_{step:06d}")
        foreign = {**state, "step": step, "run_id": "other"}
        (root / f"step_{step:06d}" / "trainer_state.json").write_text(json.dumps(foreign))
    for step in (3, 4):
        trainer.step = step
        trainer.save()
    assert steps_on_disk(trainer.run_dir) == ["step_000003", "step_000004", "step_000011", "step_000012"]
    assert [p.name for p in checkpoints(trainer.run_dir, trainer.run_id)] == ["step_000003", "step_000004"]


def test_resume_refuses_a_different_experiment_and_applies_what_may_change(run):
    """Item 2: a changed grpo.lr or task.name is refused whole, naming each key, before any work; a
    longer run with other logging is applied and said."""
    for overrides, key in (
        (["grpo.lr=3e-4"], "grpo.lr: 0.001 → 0.0003"),
        (["task.name=countdown"], "task.name"),
        (["grpo.batch_size=64", "seed=1"], "grpo.batch_size: 32 → 64; seed: 0 → 1"),
    ):
        with pytest.raises(ConfigError, match=f"differ from .*config.yaml.*{key}.*init_from=<checkpoint>/policy"):
            check_run_dir(run("steps=4", "resume=true", *overrides))
    with pytest.warns(UserWarning, match=r"applied: logging.every: 1 → 2; sft.cache_dir: .*; steps: 2 → 4$"):
        check_run_dir(run("steps=4", "resume=true", "logging.every=2"))


def test_recipes_check_the_run_directory_before_the_warm_start(run, tmp_path):
    """Items 1-2: `rewardzoo train` refuses before SFT runs (no warm start is trained or cached)."""
    for overrides in (["resume=true", "grpo.lr=3e-4"], []):
        with pytest.raises(ConfigError, match="grpo.lr" if overrides else "already holds a run"):
            recipes.train(run("steps=3", "sft.enabled=true", "sft.steps=2", *overrides))
    assert not (tmp_path / "sft").exists()


def test_the_listing_never_shows_a_half_deleted_checkpoint(run, monkeypatch):
    """Item 9: a kill mid-delete used to leave trainer_state.json without policy/, listed as complete.
    Such a directory is not listed now, and deleting renames first, so an interrupted delete leaves
    no step_ directory at all."""
    run_dir = resolved(run())
    root = run_dir / "checkpoints"
    shutil.rmtree(root / "step_000001" / "policy")  # what a kill inside rmtree leaves
    assert steps_on_disk(run_dir) == ["step_000002"]

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the delete is interrupted after the rename

    monkeypatch.setattr(checkpoint.shutil, "rmtree", killed)
    with pytest.raises(KeyboardInterrupt):
        remove_tree(root / "step_000002")
    assert steps_on_disk(run_dir) == [] and not (root / "step_000002").exists()
    monkeypatch.undo()
    remove_tree(root / "step_000001")  # also sweeps the trash the interrupted delete left
    assert list(root.iterdir()) == []


def test_parameters_that_become_non_finite_stop_the_run_before_a_checkpoint(fast_config):
    """Item 3: a finite gradient times an absurd learning rate and weight decay (both finite, so the
    config check accepts them) makes every weight infinite; the step stops, naming it, and nothing is saved."""
    trainer = make_trainer(fast_config(*QUICK, "steps=1", "grpo.lr=1e20", "grpo.weight_decay=1e20"))
    with pytest.raises(NonFiniteError, match=r"parameters became non-finite in the optimizer step of step 0"):
        trainer.train()
    assert checkpoints(trainer.run_dir) == []


def test_a_diverged_step_keeps_the_previous_checkpoint(run):
    """Item 3: when the update of step 2 poisons a weight, the run stops there and step_2 stays the
    latest checkpoint, loadable and finite."""
    trainer = make_trainer(run("steps=3", "resume=true"))
    victim = trainer.policy.model.layers[0].mlp.up_proj.weight
    trainer.optimizer.optimizer.register_step_post_hook(lambda *args: victim.data.view(-1)[0].fill_(float("nan")))
    with pytest.raises(NonFiniteError, match=r"step 2 \(\['model.layers.0.mlp.up_proj.weight'\]\)"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the applied change of steps
            trainer.train()
    assert steps_on_disk(trainer.run_dir) == ["step_000001", "step_000002"]
    resumed = make_trainer(dataclasses.replace(trainer.cfg, resume=True))
    resumed._maybe_resume()
    assert resumed.step == 2 and all(torch.isfinite(p).all() for p in resumed.policy.parameters())


def test_a_lora_warm_start_loads_offline_and_a_failed_one_is_never_cached(fast_config):
    """Item 4: with LoRA the warm start used to be an adapter-only directory that RL could not load
    without the hub.  Now it holds merged full weights, RL builds from it offline (its base weights
    are the warm start), and a diverged warm start raises and leaves nothing in the cache."""
    sft = ["sft.enabled=true", "sft.steps=2", "sft.batch_size=8"]
    cfg = fast_config(*sft, "model.lora.enabled=true", "model.lora.r=4")
    task = build_task(cfg.task)
    out = warm_start(cfg, task, make_accelerator())
    assert (out / "model.safetensors").exists() and not (out / "adapter_config.json").exists()
    with_lora, _ = load_policy(cfg.model, out)  # fresh adapters (B = 0) on top of the warm start
    plain, _ = load_policy(fast_config().model, out)
    merged = dict(with_lora.merge_and_unload().named_parameters())
    assert all(torch.equal(merged[name], weight) for name, weight in plain.named_parameters())
    bad = fast_config(*sft, "sft.lr=1e20", "sft.weight_decay=1e20")
    with pytest.raises(NonFiniteError, match="warm start diverged.*nothing was cached"):
        warm_start(bad, task, make_accelerator())
    cache = sft_cache_dir(bad, task)
    assert not cache.exists() and not list(cache.parent.glob(f".tmp-{cache.name}-*"))


def test_resume_and_overwrite_together_are_refused(fast_config):
    with pytest.raises(ConfigError, match="resume=true and overwrite=true contradict"):
        fast_config("resume=true", "overwrite=true")


def test_resume_of_a_legacy_checkpoint_without_run_id_still_works(run):
    """Checkpoints written before the manifest (trainer_state.json = {"step": N}) stay loadable, and
    are not pruned (no run owns them)."""
    cfg = run("steps=3", "resume=true")
    for step in (1, 2):
        state = resolved(cfg) / "checkpoints" / f"step_00000{step}" / "trainer_state.json"
        state.write_text(json.dumps({"step": step}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make_trainer(cfg).train()
    assert steps_on_disk(resolved(cfg)) == ["step_000001", "step_000002", "step_000003"]


def test_a_fixed_sft_seed_shares_one_warm_start_across_run_seeds(fast_config):
    """``sft.seed`` set: every run seed maps to one cached warm start, trained once with that seed's
    weights; unset (null): each run seed has its own, and sft.seed=s is the same one as seed=s."""
    from rewardzoo.core.sft import sft_seed

    sft = ["sft.enabled=true", "sft.steps=2", "sft.batch_size=8"]
    task = build_task(fast_config().task)
    shared = {sft_cache_dir(fast_config(*sft, f"seed={s}", "sft.seed=0"), task) for s in (0, 1, 2)}
    own = {sft_cache_dir(fast_config(*sft, f"seed={s}", "sft.seed=null"), task) for s in (0, 1, 2)}
    assert len(shared) == 1 and len(own) == 3
    assert shared == {sft_cache_dir(fast_config(*sft, "seed=0", "sft.seed=null"), task)}  # = seed 0's own warm start
    assert sft_seed(fast_config(*sft, "seed=3", "sft.seed=null")) == 3
    assert sft_seed(fast_config(*sft, "seed=3", "sft.seed=1")) == 1
    a = warm_start(fast_config(*sft, "seed=1", "sft.seed=0"), task, make_accelerator())
    b = warm_start(fast_config(*sft, "seed=0", "sft.seed=null"), task, make_accelerator())
    assert a == b
    with pytest.raises(ConfigError, match=r"sft\.seed must be >= 0"):
        fast_config("sft.seed=-1")


def test_the_warm_starts_key_covers_the_grpo_settings_sft_reads_and_no_other(fast_config):
    """SFT reads grpo.micro_batch_size (its micro-batches) and grpo.max_grad_norm (its clipping): each
    changes the cache key; an RL-only setting (grpo.lr, grpo.beta) does not."""
    sft = ["sft.enabled=true", "sft.steps=2", "sft.batch_size=8"]
    task = build_task(fast_config().task)
    base = sft_cache_dir(fast_config(*sft), task)
    for change in ("grpo.micro_batch_size=4", "grpo.max_grad_norm=0.5"):
        assert sft_cache_dir(fast_config(*sft, change), task) != base, change
    for change in ("grpo.lr=1e-4", "grpo.beta=0.1"):
        assert sft_cache_dir(fast_config(*sft, change), task) == base, change


def test_a_finished_run_can_keep_only_its_trained_policy(run):
    """A sweep that drops a finished run's checkpoints (``rewardzoo leaderboard`` by default) keeps the newest
    one's trained policy, byte for byte, in run_dir/policy: a new run starts from it, the run still counts as a
    run (a fresh one is refused, overwrite deletes the policy too), and resume=true says where the policy is."""
    cfg = run("steps=4", "resume=true")
    run_dir = resolved(cfg)
    newest = run_dir / "checkpoints" / "step_000002" / "policy"
    weights = {p.name: p.read_bytes() for p in newest.iterdir()}
    assert checkpoint.keep_only_policy(run_dir) == run_dir / "policy"
    assert not (run_dir / "checkpoints").exists()
    assert {p.name: p.read_bytes() for p in (run_dir / "policy").iterdir()} == weights
    with pytest.raises(ConfigError, match=f"no complete checkpoint.*init_from={run_dir / 'policy'}"):
        check_run_dir(cfg)
    with pytest.raises(ConfigError, match=r"already holds a run \(policy, config.yaml"):
        check_run_dir(run("steps=1"))
    start, _ = load_policy(cfg.model, run_dir / "policy", cfg.seed)
    saved = load_file(run_dir / "policy" / "model.safetensors")
    assert all(torch.equal(p, saved[k]) for k, p in start.state_dict().items() if k in saved) and saved
    checkpoint.clear_run_dir(run_dir)
    assert not (run_dir / "policy").exists()
    assert checkpoint.keep_only_policy(run_dir) is None  # nothing to keep: the directory is left as it is


@pytest.fixture
def small_disk(tmp_path):
    """``small_disk.mount(kib)`` → a tmpfs of that size mounted in tmp_path (skipped where mounting is not
    allowed), ``small_disk.grow(kib)`` resizes it; unmounted afterwards, which fails the test while a file there
    is still open."""
    root = tmp_path / "disk"
    root.mkdir()

    def mount(kib: int, *options: str) -> Path:
        if shutil.which("mount") is None:
            pytest.skip("no mount command here")
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", ",".join([*options, f"size={kib}k"]), "tmpfs", str(root)],
            capture_output=True,
        )
        if done.returncode and not options:
            pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
        assert done.returncode == 0, done.stderr.decode()
        return root

    yield SimpleNamespace(mount=mount, grow=lambda kib: mount(kib, "remount"))
    done = subprocess.run(["umount", str(root)], capture_output=True)
    if done.returncode:  # a file still open there (the space of a deleted file not given back): detach, then fail
        subprocess.run(["umount", "--lazy", str(root)], capture_output=True)
        raise AssertionError(f"the small disk could not be unmounted: {done.stderr.decode().strip()}")


def test_a_full_disk_stops_a_checkpoint_with_a_clear_error_and_loses_nothing(finished_run, fast_config, small_disk):
    """A checkpoint that does not fit used to fail deep in torch (``unexpected pos …``) and leave a partial
    ``.tmp-step_…`` holding the space.  Now: an OSError (ENOSPC) naming the disk and what to change, the partial
    write deleted, the checkpoint before it intact; with more room, resume=true finishes the run."""
    one = sum(p.stat().st_size for p in (finished_run / "checkpoints" / "step_000001").rglob("*")) // 1024
    disk = small_disk.mount(one * 3 // 2)  # one checkpoint of the tiny model fits, a second beside it does not
    cfg = fast_config(*QUICK, "steps=2", f"run_dir={disk / 'run'}", "eval.every=0")
    with pytest.raises(
        OSError,
        match=r"disk under .* is full: writing checkpoint step 2 .*step_000001, is intact.*"
        r"keep_checkpoints=1.*resume=true",
    ) as caught:
        make_trainer(cfg).train()
    assert caught.value.errno == errno.ENOSPC
    assert steps_on_disk(disk / "run") == ["step_000001"]
    assert not list((disk / "run" / "checkpoints").glob(".tmp-*"))
    assert shutil.disk_usage(disk).used < one * 1024 * 6 // 5  # the partial write's space is back (no file held open)
    small_disk.grow(one * 4)
    resumed = make_trainer(fast_config(*QUICK, "steps=2", f"run_dir={disk / 'run'}", "eval.every=0", "resume=true"))
    resumed.train()
    assert steps_on_disk(disk / "run") == ["step_000001", "step_000002"] and resumed.step == 2
