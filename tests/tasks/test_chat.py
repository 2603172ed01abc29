"""Tasks as conversations (tasks/chat.py) and the instruct answer format (tasks/checks/formats.py)."""

from __future__ import annotations

import pytest
from tokenizers import processors

from rewardzoo.core.config import ConfigError
from rewardzoo.core.models import char_tokenizer
from rewardzoo.core.types import Rollouts
from rewardzoo.tasks.chat import QUESTION, ChatTask, judge_prompts, render_chat
from rewardzoo.tasks.hackable_multiplication import HackableMultiplication, HackableMultiplicationConfig
from rewardzoo.tasks.multiplication import Multiplication, MultiplicationConfig
from rewardzoo.zoo import as_chat_task, build_task, load_config

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def chat_tokenizer():
    """The character tokenizer with a ChatML template (a real PreTrainedTokenizerFast, as a hub model's is)."""
    tok = char_tokenizer()
    tok.chat_template = CHATML
    return tok


def instruct_task() -> Multiplication:
    return Multiplication(MultiplicationConfig(digits_a=3, digits_b=1, n_train=20, n_eval=5, answer_format="instruct"))


@pytest.mark.parametrize(
    "completion, answer",
    [
        ("347 * 6 = 2082", "2082"),
        ("The answer is 2082.", "2082"),
        ("so \\boxed{2082} done", "2082"),
        ("The answer is 2,082.", "2082"),
        ("**Answer:** 2082\nbecause 300 * 6 = 1800", "2082"),
        ("2082", "2082"),
        ("347 x 6 = 2082 (checked)", "2082"),
        ("The result is -12", "-12"),
        ("145 * 2 is equal to 2 * 145.", None),
        ("To calculate 347 * 6, you multiply", None),
        ("", None),
        ("The answer is 2,08.", None),
    ],
)
def test_instruct_answers_are_read_as_an_instruct_model_states_them(completion, answer):
    assert instruct_task().parse(completion) == answer


def test_an_instruct_task_asks_a_question_and_its_demonstrations_parse_back():
    task = instruct_task()
    e = task.train[0]
    assert e.prompt == f"What is {e.meta['a']} * {e.meta['b']}? Answer with the number only."
    assert task.parse(e.demonstration) == e.reference


def test_the_hackable_task_stays_strict():
    with pytest.raises(ValueError, match="not strict"):
        HackableMultiplication(
            HackableMultiplicationConfig(multiplication=MultiplicationConfig(answer_format="instruct"))
        )
    tags = HackableMultiplication(
        HackableMultiplicationConfig(multiplication=MultiplicationConfig(answer_format="tags"))
    )
    assert tags.parse("The answer is 42.") is None and tags.parse("<answer>42 43</answer>") == "42 43"


def test_a_chat_task_renders_prompts_with_the_template_and_keeps_the_question_for_judges():
    task = instruct_task()
    chat = ChatTask(task, chat_tokenizer(), system_prompt="Be brief.")
    e, raw = chat.eval[0], task.eval[0]
    assert e.prompt == (
        f"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n{raw.prompt}<|im_end|>\n<|im_start|>assistant\n"
    )
    assert e.meta[QUESTION] == raw.prompt and e.reference == raw.reference
    assert chat.name == task.name and chat.answer_format == "instruct" and chat.cfg is task.cfg
    assert chat.score_completion("= 1", e) == 0.0 and chat.evaluate([f"= {raw.reference}"], [e])["accuracy"] == 1.0
    batch = Rollouts(
        prompts=[e.prompt, "plain"],
        completions=["", ""],
        answers=[None, None],
        references=["1", "2"],
        group_ids=__import__("torch").tensor([0, 1]),
        meta=[e.meta, {}],
        step=0,
    )
    assert judge_prompts(batch) == [raw.prompt, "plain"]


def test_render_chat_needs_a_template_and_drops_a_bos_the_tokenizer_adds_itself():
    with pytest.raises(ValueError, match="has none: use an instruct model"):
        render_chat(char_tokenizer(), "hi")
    tok = chat_tokenizer()
    tok.chat_template = "<bos>" + CHATML
    assert render_chat(tok, "hi").startswith("<bos><|im_start|>user")  # the character tokenizer adds no BOS itself
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="<bos> $A", special_tokens=[("<bos>", 1)]
    )
    text = render_chat(tok, "hi")
    assert text.startswith("<|im_start|>user") and tok(text)["input_ids"][:2] == [1, tok.convert_tokens_to_ids("<")]


def test_task_chat_needs_a_model_with_a_template():
    cfg = load_config("rlvr_multiplication", ["task.chat=true"])
    with pytest.raises(ConfigError, match="task.chat=true needs a model with a chat template"):
        as_chat_task(cfg, build_task(cfg.task))
    plain = load_config("rlvr_multiplication")
    task = build_task(plain.task)
    assert as_chat_task(plain, task) is task


def test_the_plain_format_can_ask_the_question_and_stays_strict():
    cfg = MultiplicationConfig(digits_a=1, digits_b=1, n_train=20, n_eval=5, question=True)
    task = HackableMultiplication(HackableMultiplicationConfig(multiplication=cfg))
    e = task.train[0]
    assert e.prompt.endswith("? Answer with the number only.") and e.demonstration == e.reference
    assert task.parse("8 * 7 = 56 54") == "56 54" and task.parse("The answer is 56.") is None
