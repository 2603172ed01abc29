"""Tasks from your own data: JSONL files and datasets saved to disk, column mapping, splits, errors."""

import dataclasses
import json
from pathlib import Path

import datasets
import pytest

from rewardzoo.tasks.user import UserTask, UserTaskConfig

EXAMPLE = Path(__file__).parents[2] / "examples" / "arithmetic.jsonl"


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


ROWS = [{"question": f"{i}+{i}=", "answer": str(2 * i), "level": i % 3} for i in range(40)]


def test_jsonl_with_column_mapping_and_fraction_split(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    cfg = UserTaskConfig(
        path=path, prompt_column="question", reference_column="answer", meta_columns=["level"], eval_fraction=0.25
    )
    task = UserTask(cfg)
    assert (len(task.train), len(task.eval)) == (30, 10)
    assert {e.prompt for e in task.train}.isdisjoint(e.prompt for e in task.eval)
    by_prompt = {r["question"]: r for r in ROWS}
    for e in task.train + task.eval:
        row = by_prompt[e.prompt]
        assert (e.reference, e.demonstration, e.meta) == (row["answer"], row["answer"], {"level": row["level"]})
    again = UserTask(cfg)
    assert again.eval == task.eval  # the split is reproducible from data_seed
    other = UserTask(dataclasses.replace(cfg, data_seed=1))
    assert other.eval != task.eval


def test_verifier_and_answer_format(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [{"prompt": "half of one?", "reference": "1/2"}] * 4)
    task = UserTask(UserTaskConfig(path=path, verifier="last_number", answer_format="tags"))
    example = task.eval[0]
    assert example.demonstration == "<answer>1/2</answer>"
    assert task.score_completion("so <answer>0.5</answer>", example) == 1.0  # value comparison
    assert task.score_completion("0.5", example) == 0.0  # no tags: malformed under 'tags'
    exact = UserTask(UserTaskConfig(path=path, verifier="exact", answer_format="tags"))
    assert exact.score_completion("<answer>0.5</answer>", example) == 0.0
    assert exact.score_completion("<answer> 1/2 </answer>", example) == 1.0
    contains = UserTask(UserTaskConfig(path=path, verifier="contains"))
    assert contains.score_completion("1/3 or 1/2 or 1/4", example) == 1.0  # the hackable one, on purpose
    assert contains.evaluate(["1/3 or 1/2", "1/3"], [example, example]) == {"accuracy": 0.5, "format_rate": 1.0}


def test_demonstration_column_and_numbers_as_text(tmp_path):
    rows = [{"prompt": f"{i}*2=", "reference": 2 * i, "demo": f"{i} doubled is {2 * i}"} for i in range(5)]
    task = UserTask(
        UserTaskConfig(
            path=write_jsonl(tmp_path / "r.jsonl", rows), demonstration_column="demo", verifier="last_number"
        )
    )
    for e in task.train + task.eval:
        assert e.reference == str(2 * int(e.prompt.split("*")[0]))
        assert e.demonstration.endswith(f"doubled is {e.reference}")
        assert task.score_completion(e.demonstration, e) == 1.0


def test_saved_dataset_dict_with_eval_split(tmp_path):
    data = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_list([{"prompt": f"p{i}", "reference": f"r{i}"} for i in range(12)]),
            "test": datasets.Dataset.from_list([{"prompt": f"q{i}", "reference": f"s{i}"} for i in range(3)]),
        }
    )
    data.save_to_disk(str(tmp_path / "dd"))
    task = UserTask(UserTaskConfig(path=str(tmp_path / "dd"), eval_split="test"))
    assert [e.prompt for e in task.train] == [f"p{i}" for i in range(12)]
    assert [e.prompt for e in task.eval] == ["q0", "q1", "q2"]
    with pytest.raises(ValueError, match=r"has splits \['test', 'train'\], not 'validation'"):
        UserTask(UserTaskConfig(path=str(tmp_path / "dd"), eval_split="validation"))


def test_saved_dataset_and_separate_eval_file(tmp_path):
    datasets.Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "ds"))
    eval_path = write_jsonl(tmp_path / "held_out.jsonl", [{"question": "100+100=", "answer": "200", "level": 1}])
    task = UserTask(
        UserTaskConfig(
            path=str(tmp_path / "ds"),
            eval_path=eval_path,
            prompt_column="question",
            reference_column="answer",
            n_train=25,
        )
    )
    assert len(task.train) == 25 and [e.prompt for e in task.train] == [r["question"] for r in ROWS[:25]]
    assert [(e.prompt, e.reference) for e in task.eval] == [("100+100=", "200")]


def test_in_memory_rows():
    task = UserTask(
        UserTaskConfig(prompt_column="question", reference_column="answer"),
        rows=datasets.Dataset.from_list(ROWS),
        eval_rows=ROWS[:2],
    )
    assert len(task.train) == 40 and [e.prompt for e in task.eval] == ["0+0=", "1+1="]


def test_errors_say_what_to_change(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    with pytest.raises(
        ValueError,
        match=r"no column 'prompt' \(set by task.user.prompt_column\); its columns are \['question', 'answer', 'level'\]",
    ):
        UserTask(UserTaskConfig(path=path))
    with pytest.raises(ValueError, match=r"no column 'lvl' \(set by task.user.meta_columns\[0\]\)"):
        UserTask(UserTaskConfig(path=path, prompt_column="question", reference_column="answer", meta_columns=["lvl"]))
    with pytest.raises(FileNotFoundError, match="no file or directory"):
        UserTask(UserTaskConfig(path=str(tmp_path / "missing.jsonl")))
    with pytest.raises(ValueError, match="path is empty"):
        UserTask(UserTaskConfig())
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(ValueError, match="is empty"):
        UserTask(UserTaskConfig(path=str(tmp_path / "empty.jsonl")))
    (tmp_path / "broken.jsonl").write_text('{"prompt": "a", "reference": "b"}\n{"prompt": \n')
    with pytest.raises(ValueError, match="cannot read .* as json"):
        UserTask(UserTaskConfig(path=str(tmp_path / "broken.jsonl")))
    with pytest.raises(ValueError, match="no rows"):
        UserTask(UserTaskConfig(), rows=[])
    with pytest.raises(ValueError, match="verifier must be one of"):
        UserTask(UserTaskConfig(path=path, verifier="fuzzy"))
    with pytest.raises(ValueError, match="set answer_format=plain"):
        UserTask(UserTaskConfig(path=path, verifier="tagged", answer_format="tags"))
    with pytest.raises(ValueError, match="only split is 'train'"):
        UserTask(UserTaskConfig(path=path, eval_split="test"))
    with pytest.raises(ValueError, match="eval_fraction must be in"):
        UserTask(UserTaskConfig(path=path, prompt_column="question", reference_column="answer", eval_fraction=1.0))
    with pytest.raises(ValueError, match=r"row 2 .* no value in column 'reference'"):
        UserTask(UserTaskConfig(), rows=[{"prompt": "a", "reference": "b"}, {"prompt": "c", "reference": None}])


def test_a_broken_line_is_named_by_the_line_an_editor_shows(tmp_path):
    """The sixth line of a JSONL file lacks its reference: the error says line 6 (and of a CSV, line 7)."""
    lines = [{"prompt": f"{i}+1=", "reference": str(i + 1)} for i in range(8)]
    lines[5]["reference"] = None
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in lines))
    with pytest.raises(ValueError, match=r"row 6 \(line 6\) of .*data.jsonl has no value in column 'reference'"):
        UserTask(UserTaskConfig(path=str(path)))
    csv = tmp_path / "data.csv"
    csv.write_text("prompt,reference\n" + "".join(f"{r['prompt']},{r['reference'] or ''}\n" for r in lines))
    with pytest.raises(ValueError, match=r"row 6 \(line 7\) of .*data.csv"):
        UserTask(UserTaskConfig(path=str(csv)))


def test_shipped_example_file():
    task = UserTask(
        UserTaskConfig(
            path=str(EXAMPLE), reference_column="answer", meta_columns=["op"], verifier="last_number", eval_fraction=0.1
        )
    )
    assert (len(task.train), len(task.eval)) == (1800, 200)
    assert len({e.prompt for e in task.train + task.eval}) == 2000
    assert task.evaluate([e.demonstration for e in task.eval], task.eval)["accuracy"] == 1.0
    for e in task.train[:50]:
        a, b = (int(x) for x in e.prompt.rstrip("=").split(e.meta["op"]))
        assert int(e.reference) == (a + b if e.meta["op"] == "+" else a - b)


def test_instruct_format_reads_the_stated_answer_of_a_free_text_reply(tmp_path):
    """An instruct model's reply: the verifier (and a judge) see the stated answer, not the whole reply."""
    path = write_jsonl(tmp_path / "rows.jsonl", [{"prompt": "What is 47 * 6?", "reference": "282"}] * 4)
    task = UserTask(UserTaskConfig(path=path, verifier="last_number", answer_format="instruct"))
    example = task.eval[0]
    assert example.demonstration == "The answer is 282."
    replies = {
        "47 * 6 = 282.": "282",
        "**Answer:** 282": "282",
        "Let me think. 47 * 6 = 280 + 2, so \\boxed{282}": "282",
        "47 * 6 = 272": "272",
    }
    for reply, answer in replies.items():
        assert task.parse(reply) == answer
    assert [task.score_completion(r, example) for r in replies] == [1.0, 1.0, 1.0, 0.0]
    plain = UserTask(UserTaskConfig(path=path, verifier="exact"))
    assert plain.score_completion("47 * 6 = 282.", example) == 0.0  # the whole reply is no answer under 'plain'
    with pytest.raises(ValueError, match="answer_format must be one of plain, tags, instruct; got 'free'"):
        UserTask(UserTaskConfig(path=path, answer_format="free"))


def test_shipped_chat_example_file_holds_every_pair_once_with_its_product():
    path = EXAMPLE.with_name("multiplication_chat.jsonl")
    task = UserTask(
        UserTaskConfig(path=str(path), verifier="last_number", answer_format="instruct", eval_fraction=0.25)
    )
    examples = task.train + task.eval
    assert (len(task.train), len(task.eval)) == (608, 202) and len({e.prompt for e in examples}) == 810
    for e in examples:
        a, b = (int(x) for x in e.prompt.removeprefix("What is ").split("?")[0].split(" * "))
        assert 10 <= a <= 99 and 1 <= b <= 9 and e.reference == str(a * b)
