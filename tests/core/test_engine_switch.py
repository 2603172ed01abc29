"""The engine switch (``sampling.engine``) and the weight-sync hook, in the default environment (no vLLM
needed; the vLLM engine itself is tested in tests/core/test_vllm_engine.py, tier ``vllm``)."""

import subprocess
import sys

import pytest
import torch

from rewardzoo.core.config import ConfigError
from rewardzoo.core.engines import HFEngine, make_engine
from rewardzoo.core.trainer import Trainer
from rewardzoo.zoo import build_reward, build_task, load_config

RECIPE = "algorithms/rlvr_multiplication.yaml"


def test_importing_rewardzoo_never_imports_vllm():
    code = (
        "import sys, rewardzoo, rewardzoo.zoo, rewardzoo.recipes, rewardzoo.core.trainer; print('vllm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_vllm_asked_for_but_not_importable_is_a_config_error_naming_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` fails, here and where it is installed
    with pytest.raises(ConfigError) as err:
        load_config(RECIPE, ["sampling.engine=vllm"])
    message = str(err.value)
    assert message.startswith("sampling.engine is 'vllm', but vLLM does not import here (ModuleNotFoundError")
    assert "`make test-vllm`" in message and "scripts/setup_vllm_env.sh" in message and "sampling.engine=hf" in message


def test_an_unknown_engine_is_a_config_error():
    with pytest.raises(ConfigError, match=r"sampling.engine must be one of hf, vllm; got 'sglang'"):
        load_config(RECIPE, ["sampling.engine=sglang"])


class SyncRecorder:
    """The real HFEngine, recording every ``sync_weights`` call and the policy's weights at that moment."""

    runs_policy = True

    def __init__(self, engine: HFEngine):
        self.engine = engine
        self.synced: list[dict[str, torch.Tensor]] = []

    def generate(self, prompts, n=1, greedy=False):
        return self.engine.generate(prompts, n=n, greedy=greedy)

    def sync_weights(self, policy):
        self.synced.append({k: v.clone() for k, v in policy.state_dict().items()})
        self.engine.sync_weights(policy)


def test_the_trainer_pushes_weights_after_every_policy_step_and_on_resume(fast_config, tmp_path):
    """The default engine is HFEngine (whose push is a no-op: it samples from the policy itself); the
    trainer calls ``sync_weights`` once per step, after the last optimiser step, and once when it resumes."""
    cfg = fast_config("steps=2", "checkpoint_every=1", "grpo.num_iterations=2", f"run_dir={tmp_path / 'run'}")
    task = build_task(cfg.task)
    trainer = Trainer(cfg, task=task, reward=build_reward(cfg.reward, task))
    assert isinstance(trainer.engine, HFEngine) and isinstance(
        make_engine(trainer.policy, trainer.tokenizer, cfg.sampling), HFEngine
    )
    trainer.engine = SyncRecorder(trainer.engine)
    trainer.train()
    assert len(trainer.engine.synced) == 2
    final = trainer.policy.state_dict()
    assert all(torch.equal(trainer.engine.synced[-1][k], final[k]) for k in final)
    resumed = Trainer(
        fast_config(
            "steps=3", "checkpoint_every=1", "grpo.num_iterations=2", "resume=true", f"run_dir={tmp_path / 'run'}"
        ),
        task=task,
        reward=build_reward(cfg.reward, task),
    )
    resumed.engine = SyncRecorder(resumed.engine)
    with pytest.warns(UserWarning, match="steps: 2 → 3"):
        resumed.train()
    assert len(resumed.engine.synced) == 2  # the checkpoint's weights, then step 3's
    assert all(torch.equal(resumed.engine.synced[0][k], final[k]) for k in final)
