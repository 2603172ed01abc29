"""Judge pretraining: the equation corpus holds no operand pair of any prompt of the task (RL, SFT,
held out), its equations are true, and the pretrained backbone is cached by its settings and loads
into a likelihood judge."""

import json

import pytest
import torch

from rewardzoo.core.models import TinyModelConfig
from rewardzoo.judges.classifier import JudgeConfig, SequenceJudge
from rewardzoo.judges.pretrain import JudgePretrainConfig, backbone_dir, equation_corpus, pretrain_backbone
from rewardzoo.tasks.multiplication import Multiplication, MultiplicationConfig, task_pairs
from rewardzoo.zoo import load_config

TINY = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64)


def operands(prompt: str) -> tuple[int, int]:
    a, b = prompt.removesuffix("=").split("*")
    return int(a), int(b)


def test_the_recipe_corpus_is_disjoint_from_every_prompt_of_the_task():
    """The RAL multiplication recipe: 8,100 pairs, the task uses 6,000 (1,000 held out, 4,000 SFT demonstrations,
    1,000 RL prompts) and 500 validation prompts; the corpus is the other 1,600, each a true equation."""
    cfg = load_config("ral_multiplication")
    task = Multiplication(cfg.task.multiplication)
    corpus = equation_corpus(cfg.task.multiplication)
    sft = task.train[: cfg.sft.n_examples]
    rl = task.train[cfg.sft.n_examples :]
    assert len(sft) == 4000 and len(rl) == 1000 and len(task.eval) == 1000
    assert len(task.validation) == 500
    for split in (sft, rl, task.eval, task.validation):
        assert not corpus.pairs() & {operands(e.prompt) for e in split}
    assert len(corpus.train) == 1600 == 8100 - 6500
    assert all(
        int(e.demonstration) == e.meta["a"] * e.meta["b"] and e.prompt == f"{e.meta['a']}*{e.meta['b']}="
        for e in corpus.train
    )
    assert set(task_pairs(cfg.task.multiplication)) == {
        operands(e.prompt) for e in task.train + task.eval + task.validation
    }


def test_corpus_order_is_seeded_and_can_be_cut():
    task = MultiplicationConfig(digits_a=2, digits_b=1, n_train=300, n_eval=100, n_validation=100)
    a, b = equation_corpus(task, seed=0), equation_corpus(task, seed=1)
    assert a.pairs() == b.pairs() and len(a.train) == 810 - 500
    assert [e.prompt for e in a.train] != [e.prompt for e in b.train]
    assert len(equation_corpus(task, n_equations=7).train) == 7
    with pytest.raises(ValueError, match="lower them"):
        equation_corpus(MultiplicationConfig(digits_a=1, digits_b=1, n_train=70, n_eval=11))


def test_pretraining_is_cached_by_its_settings_and_loads_into_a_likelihood_judge(tmp_path):
    task = MultiplicationConfig(digits_a=2, digits_b=1, n_train=300, n_eval=100, n_validation=100)
    cfg = JudgePretrainConfig(tiny=TINY, steps=3, batch_size=8, cache_dir=str(tmp_path))
    path = pretrain_backbone(cfg, task)
    assert path == backbone_dir(cfg, task) and json.loads((path / "sft_done.json").read_text())["sft/loss"] > 0
    mtime = (path / "model.safetensors").stat().st_mtime_ns
    assert pretrain_backbone(cfg, task) == path and (path / "model.safetensors").stat().st_mtime_ns == mtime  # reused
    assert backbone_dir(JudgePretrainConfig(tiny=TINY, steps=4, batch_size=8, cache_dir=str(tmp_path)), task) != path
    judge = SequenceJudge.build(JudgeConfig(init_from=str(path), readout="lm_likelihood", end_token=True), seed=0)
    z = judge.logit_reference(["12*3=", "12*3="], ["36", "35"])
    assert z.shape == (2,) and torch.isfinite(z).all()
