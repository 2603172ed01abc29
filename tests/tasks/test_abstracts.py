"""The abstracts / free-writing task from a synthetic JSONL corpus: format, split, metrics, errors."""

import json

import pytest

from rewardzoo.tasks.abstracts import Abstracts, AbstractsConfig, unigram_f1


def corpus(tmp_path, rows):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


ROWS = [{"title": f"On topic {i}", "abstract": f"We study topic {i} and find that it matters."} for i in range(20)]


def test_jsonl_corpus_prompts_references_and_split(tmp_path):
    task = Abstracts(AbstractsConfig(path=corpus(tmp_path, ROWS), eval_fraction=0.25))
    assert (len(task.train), len(task.eval)) == (15, 5)
    ex = task.train[0]
    assert ex.prompt.startswith("Title: On topic ") and ex.prompt.endswith("\nAbstract:")
    assert ex.demonstration == " " + ex.reference and ex.reference.startswith("We study topic")
    free = Abstracts(
        AbstractsConfig(
            path=corpus(tmp_path, [{"prompt": "Write about rain."}] * 4),
            prompt_column="prompt",
            reference_column="",
            prompt_template="{prompt}\n",
        )
    )
    assert free.train[0].prompt == "Write about rain.\n" and free.train[0].reference == ""


def test_metrics_by_hand():
    """'we study topic 3' vs 'We study topic 3 and find that it matters.': overlap 4, P = 4/4, R = 4/9,
    F1 = 2·(4/9)/(1 + 4/9) = 8/13 = 0.615 ≥ 0.5 → correct.  'the the the the': 3 bigrams, 2 repeat → ⅔."""
    task = Abstracts(AbstractsConfig(min_words=3, max_words=6), rows=ROWS)
    ref = "We study topic 3 and find that it matters."
    rows = task.row_metrics(
        ["we study topic 3", "the the the the", None, "二十年 years"], [ref, ref, ref, ""], [{}] * 4
    )
    assert rows["unigram_f1"][0] == pytest.approx(8 / 13) and rows["correct"] == [1.0, 0.0, 0.0, 0.0]
    assert rows["repetition"][1] == pytest.approx(2 / 3) and rows["words"] == [4.0, 4.0, 0.0, 2.0]
    assert rows["non_english_rate"][3] == 0.5 and rows["in_window"] == [1.0, 1.0, 0.0, 0.0]
    assert unigram_f1("", "x") == 0.0


def test_bad_corpora_fail_clearly(tmp_path):
    with pytest.raises(ValueError, match="task.abstracts.path is empty"):
        Abstracts(AbstractsConfig())
    with pytest.raises(ValueError, match="no column 'title'"):
        Abstracts(AbstractsConfig(path=corpus(tmp_path, [{"name": "x", "abstract": "y"}] * 3)))
    with pytest.raises(ValueError, match="empty 'title'"):
        Abstracts(AbstractsConfig(), rows=[{"title": " ", "abstract": "y"}] * 3)
    with pytest.raises(ValueError, match="must contain"):
        Abstracts(AbstractsConfig(prompt_template="Title:"), rows=ROWS)
