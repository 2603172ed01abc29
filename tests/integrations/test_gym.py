"""Tasks as Gymnasium environments: registration, Gymnasium's checker, rewards of known completions."""

import dataclasses
import json
import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import rewardzoo  # noqa: F401  (registers the environments)
from rewardzoo.integrations.gym import TaskEnv, env_id, make_env, register_envs
from rewardzoo.tasks.multiplication import Multiplication, MultiplicationConfig
from rewardzoo.zoo import TASKS, TaskConfig

SMALL = {"n_train": 20, "n_eval": 5}


def small_settings(name, tmp_path):
    """Settings that make a task small and fast: n_train/n_eval wherever its config has them (in
    nested sections too), and a file to read for the user task."""
    if name == "smiles":
        pytest.importorskip("rdkit")
    if name == "user":
        path = tmp_path / "rows.jsonl"
        path.write_text("".join(json.dumps({"prompt": f"{i}+1=", "reference": str(i + 1)}) + "\n" for i in range(30)))
        return {"path": str(path)}
    if name == "abstracts":
        path = tmp_path / "abstracts.jsonl"
        path.write_text(
            "".join(json.dumps({"title": f"paper {i}", "abstract": f"we study {i}."}) + "\n" for i in range(30))
        )
        return {"path": str(path)}
    return _shrunk(getattr(TaskConfig(), name))


def _shrunk(section) -> dict:
    settings = {k: v for k, v in SMALL.items() if hasattr(section, k)}
    for f in dataclasses.fields(section):
        value = getattr(section, f.name)
        if dataclasses.is_dataclass(value) and _shrunk(value):
            settings[f.name] = _shrunk(value)
    return settings


def test_every_task_is_registered():
    ids = {env_id(name) for name in TASKS}
    assert ids <= set(gymnasium.registry)
    assert "rewardzoo/Multiplication-v0" in ids


def test_registration_is_idempotent():
    before = dict(gymnasium.registry)
    register_envs()
    assert dict(gymnasium.registry) == before


@pytest.mark.parametrize("name", sorted(TASKS))
def test_check_env_passes(name, tmp_path):
    env = gymnasium.make(env_id(name), **small_settings(name, tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a checker warning fails the test too
        check_env(env.unwrapped)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_demonstration_earns_full_reward(name, tmp_path):
    env = gymnasium.make(env_id(name), split="eval", **small_settings(name, tmp_path))
    prompt, info = env.reset(seed=3)
    example = env.unwrapped.examples[info["index"]]
    assert prompt == example.prompt and example in env.unwrapped.task.eval
    obs, reward, terminated, truncated, step_info = env.step(example.demonstration)
    task = env.unwrapped.task
    if not task.demonstrations_verify:  # demonstrations imperfect by design: the reward is still the verifier's
        assert reward == task.score_completion(example.demonstration, example) and terminated and not truncated
        return
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert step_info["reference"] == example.reference and step_info["correct"] == 1.0


def test_multiplication_make_and_step():
    env = gymnasium.make("rewardzoo/Multiplication-v0", **SMALL)
    prompt, _ = env.reset(seed=0)
    a, b = map(int, prompt.rstrip("=").split("*"))
    _, reward, terminated, _, info = env.step(str(a * b))
    assert (
        reward == 1.0
        and terminated
        and info == {"reference": str(a * b), "answer": str(a * b), "correct": 1.0, "relative_error": 0.0}
    )
    env.reset(seed=0)
    _, reward, _, _, info = env.step(str(a * b + 1))
    assert reward == 0.0 and info["correct"] == 0.0 and info["relative_error"] == pytest.approx(1 / (a * b))
    env.reset(seed=0)
    _, reward, _, _, info = env.step("ünïcode ✓ and no number")  # outside the action space: still scored
    assert reward == 0.0 and info["answer"] is None


def test_module_prefixed_id_and_reset_reproducible():
    env = gymnasium.make("rewardzoo:rewardzoo/Multiplication-v0", **SMALL)
    first = [env.reset(seed=s)[0] for s in range(10)]
    assert first == [env.reset(seed=s)[0] for s in range(10)]
    assert len(set(first)) > 1


def test_wraps_any_task_instance():
    task = Multiplication(MultiplicationConfig(n_train=10, n_eval=3))
    env = TaskEnv(task, split="eval")
    check_env(env, skip_render_check=True)  # no spec to re-make it from: nothing to render anyway
    prompt, info = env.reset(seed=1)
    assert prompt in {e.prompt for e in task.eval}


def test_bad_use_has_clear_errors():
    with pytest.raises(TypeError, match="unknown setting.*n_trian"):
        make_env("multiplication", n_trian=5)
    with pytest.raises(TypeError, match=r"task 'hackable_multiplication'.multiplication"):
        make_env("hackable_multiplication", multiplication={"digits": 3})
    with pytest.raises(ValueError, match="split"):
        make_env("multiplication", split="test", **SMALL)
    env = make_env("multiplication", **SMALL)
    with pytest.raises(RuntimeError, match="reset"):
        env.step("1")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="str"):
        env.step(12)
    env.reset(seed=0)
    env.step("1")
    with pytest.raises(RuntimeError, match="reset"):
        env.step("1")  # the episode is over after one step
