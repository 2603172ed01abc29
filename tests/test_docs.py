"""The docs stay true: every key a real run logs is defined in docs/metrics.md or a reward's page."""

import re
from pathlib import Path

import pytest

from rewardzoo.core.logger import read_metrics
from rewardzoo.recipes import make_trainer

DOCS = Path(__file__).resolve().parents[1] / "docs"


def documented_patterns() -> list[re.Pattern]:
    """Every backticked metric key in the docs; ``<name>`` matches one path segment, ``…`` anything."""
    text = "\n".join(p.read_text() for p in [DOCS / "metrics.md", *sorted((DOCS / "rewards").glob("*.md"))])
    keys = {k for k in re.findall(r"`([a-z_]+/[^`\s]+)`", text) if not k.endswith("/…")}  # not a section title
    return [
        re.compile(
            "".join(
                "[^/]+" if part.startswith("<") else ".*" if part == "…" else re.escape(part)
                for part in re.split(r"(<[^>]+>|…)", key)
            )
        )
        for key in keys
    ]


@pytest.mark.parametrize(
    "overrides",
    [
        ["grpo.beta=0.1", "steps=2"],  # RLVR with a KL term
        [
            "reward.name=ral",
            "reward.ral.warmup_steps=1",
            "reward.ral.replay_fraction=0.5",
            "reward.ral.polyak=true",
            "reward.ral.judge.tiny.hidden_size=32",
            "reward.ral.judge.tiny.intermediate_size=64",
            "reward.ral.judge.tiny.num_layers=1",
            "reward.ral.judge.init_from=",
            "steps=3",
        ],
        ["task.name=hackable_multiplication", "sft.n_examples=100", "steps=2"],
        [
            "task.name=refdist",
            "task.refdist.n_prompts=4",
            "task.refdist.copies=16",
            "eval.n_examples=0",
            "sft.enabled=true",
            "sft.steps=40",
            "sft.batch_size=32",
            "sft.lr=1e-2",
            "sft.n_examples=0",
            "sft.disjoint_rl_prompts=false",
            "sampling.temperature=0.5",
            "reward.name=varl",
            "reward.varl.warmup_steps=1",
            "reward.varl.discriminator.tiny.hidden_size=32",
            "reward.varl.discriminator.tiny.intermediate_size=64",
            "reward.varl.discriminator.tiny.num_layers=1",
            "steps=2",
        ],
        [
            "task.name=rubric_writing",
            "task.rubric_writing.n_train=200",
            "task.rubric_writing.n_eval=16",
            "sft.disjoint_rl_prompts=false",
            "reward.name=rcrl",
            "reward.rcrl.rubric=rubric_writing",
            "reward.rcrl.judge.kind=rule",
            "reward.rcrl.steps_per_criterion=1",
            "reward.bonuses.exploration_weight=0.1",
            "reward.bonuses.usefulness_weight=0.1",
            "steps=2",
        ],
        [
            "task.name=rubric_writing",
            "task.rubric_writing.n_train=200",
            "task.rubric_writing.n_eval=16",
            "sft.disjoint_rl_prompts=false",
            "reward.name=rcrl",
            "reward.rcrl.rubric=rubric_writing",
            "reward.rcrl.judge.kind=rule",
            "reward.rcrl.scoring=absolute",
            "reward.rcrl.schedule=dropout",
            "steps=2",
        ],
    ],
    ids=["rlvr-kl", "ral", "hackable", "varl-refdist", "rcrl-bonuses", "rcrl-absolute"],
)
def test_every_logged_key_is_documented(fast_config, overrides):
    cfg = fast_config(*overrides, "eval.every=1")
    make_trainer(cfg).train()
    logged = {k for row in read_metrics(Path(cfg.run_dir) / "metrics.jsonl") for k in row} - {"step"}
    patterns = documented_patterns()
    undocumented = sorted(k for k in logged if not any(p.fullmatch(k) for p in patterns))
    assert not undocumented, f"add these keys to docs/metrics.md: {undocumented}"


def test_readme_example_runs_from_any_directory(tmp_path, monkeypatch):
    """The README's 20-line example runs as printed — warm start, RL, a real held-out accuracy — from a
    directory outside the checkout (shortened: 2 RL steps, a 20-step warm start in its own cache)."""
    readme = (DOCS.parent / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    assert '"steps=20", "run_dir=runs/short_answers"' in code
    code = code.replace(
        '"steps=20", "run_dir=runs/short_answers"',
        f'"steps=2", "run_dir={tmp_path / "run"}", "sft.steps=20", "sft.cache_dir={tmp_path / "sft"}", '
        f'"logging.progress=false", "eval.n_examples=8", "eval.every=0"',
    )
    monkeypatch.chdir(tmp_path)
    printed = []
    exec(compile(code, "README.md", "exec"), {"print": printed.append})
    assert printed and printed[0].startswith("held-out accuracy after RL: ")
    assert (tmp_path / "sft").is_dir() and (tmp_path / "run" / "samples.jsonl").exists()


RECIPE_KEYS = {"`grpo.lr`": "lr", "`grpo.beta`": "beta", "`grpo.advantage`": "advantage"}


def recipe_tables() -> list[tuple[str, str, dict[str, str]]]:
    """(page, recipe, {grpo key: cell}) for every row of every docs table whose header has a ``recipe`` column
    and a ``grpo.lr``, ``grpo.beta`` or ``grpo.advantage`` column (the recipe cell names it in backticks)."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not line.lstrip().startswith("|") or "recipe" not in cells or not set(cells) & set(RECIPE_KEYS):
                continue
            for row in lines[i + 2 :]:
                if not row.lstrip().startswith("|"):
                    break
                values = dict(zip(cells, (c.strip() for c in row.strip().strip("|").split("|"))))
                name = re.search(r"`([a-z0-9_]+?)(?:\.yaml)?`", values["recipe"]).group(1)
                found.append((page.name, name, {RECIPE_KEYS[k]: v for k, v in values.items() if k in RECIPE_KEYS}))
    return found


def test_docs_tables_give_each_recipe_s_own_lr_beta_and_advantage():
    """Every docs table that cites a recipe's β, learning rate or advantage says what the recipe holds (a
    docs page once said the RAL recipes use β = 0.1; they use 0, or 0.05 on refdist)."""
    from rewardzoo.zoo import load_config

    rows = recipe_tables()
    assert {page for page, _, _ in rows} >= {"leaderboard.md", "ral.md"}
    for page, name, values in rows:
        grpo = load_config(name).grpo
        for key, cell in values.items():
            want = getattr(grpo, key)
            assert (cell.strip("`") == want) if key == "advantage" else float(cell) == pytest.approx(want), (
                f"docs/{page}: {name} has grpo.{key} = {want}, the table says {cell}"
            )
