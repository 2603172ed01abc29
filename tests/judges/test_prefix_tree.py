"""The KV-cache prefix tree: its shape by hand, and that reading questions through it gives what each question
read alone gives — on tiny models built from a config (both architectures, GQA, two layers, batches that pad
and split), through the LM judge in both modes (round robin, duplicates, left-cut inputs, LoRA), and in the
``real`` tier on SmolLM2-135M-Instruct through its chat template."""

import pytest
import torch

from rewardzoo.core.model_store import is_fetched, model_dir
from rewardzoo.core.models import (
    LoraSettings,
    ModelConfig,
    TinyModelConfig,
    add_lora,
    char_tokenizer,
    load_policy,
    tiny_causal_lm,
)
from rewardzoo.judges.pairwise import LMJudge, LMJudgeConfig, Tournament
from rewardzoo.judges.prefix_tree import Node, build_tree, read_tree, tree_tokens
from rewardzoo.judges.rubric import Criterion

CRIT = Criterion("clarity", "Is it clear and to the point?", title="Clear")


def test_tree_by_hand():
    """Keys (prompt, first): the p family shares [1, 2, 3]; within it 'a' shares [4] and 'b' its whole rows,
    which are identical — one leaf answers both, the answer read at their last token, so 'b' keeps [7, 8]
    after folding its only child; the r family has one question, which reads alone.  Tokens: 3 + 1 + 1 + 1
    + 2 + 2 = 10 against 22 read one by one."""
    seqs = [[1, 2, 3, 4, 5], [1, 2, 3, 4, 6], [1, 2, 3, 7, 8], [1, 2, 3, 7, 8], [9, 1]]
    keys = [("p", "a"), ("p", "a"), ("p", "b"), ("p", "b"), ("r", "c")]
    roots = build_tree(seqs, keys)
    assert roots == [
        Node([1, 2, 3], [], [Node([4], [], [Node([5], [0]), Node([6], [1])]), Node([7, 8], [2, 3])]),
        Node([9, 1], [4]),
    ]
    assert tree_tokens(roots) == 10 and sum(map(len, seqs)) == 22


def test_tree_refuses_bad_questions():
    with pytest.raises(ValueError, match="same number of keys"):
        build_tree([[1], [2]], [("a",), ("a", "b")])
    with pytest.raises(ValueError, match="at least one token"):
        build_tree([[1], []], [("a",), ("a",)])


def alone(model, seq: list[int]) -> torch.Tensor:
    """[V] the next-token distribution after ``seq``, read alone: one unpadded sequence, no cache."""
    with torch.no_grad():
        return torch.softmax(model(input_ids=torch.tensor([seq])).logits[0, -1].double(), -1)  # [V]


@pytest.mark.parametrize("arch", ["qwen3", "llama"])
def test_tree_reads_what_each_question_reads_alone(arch):
    """Three families of random questions with shared openings and shared second parts, of different lengths,
    read in batches of 2 (padding at every level, parents split over batches): every full next-token
    distribution equals the unshared read to float rounding."""
    vocab, g = 50, torch.Generator().manual_seed(0)
    model = tiny_causal_lm(
        TinyModelConfig(arch=arch, hidden_size=32, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=64),
        vocab,
        seed=3,
    ).eval()

    def rand(n: int) -> list[int]:
        return torch.randint(1, vocab, (n,), generator=g).tolist()

    seqs, keys = [], []
    for family in range(3):
        opening = rand(5 + 3 * family)
        for branch in range(3):
            middle = rand(2 + branch)
            for leaf in range(2 + family):
                seqs.append(opening + middle + rand(1 + (leaf + family) % 4))
                keys.append((family, branch))
    roots = build_tree(seqs, keys)
    assert tree_tokens(roots) < sum(map(len, seqs))
    got = read_tree(model, roots, len(seqs), list(range(vocab)), batch_size=2, pad_id=0)  # [M, V]
    want = torch.stack([alone(model, s) for s in seqs])  # [M, V]
    assert torch.allclose(got, want, atol=1e-6, rtol=0)


TINY = TinyModelConfig(hidden_size=32, num_layers=2, num_heads=2, num_kv_heads=1, intermediate_size=64)
SHORT = LMJudgeConfig(
    pairwise_template="{title}: {description}|{prompt}|{first}|{second}|",
    absolute_template="{title}|{prompt}|{response}|",
    answer_prefix="?",
    choices=["A", "B"],
    absolute_choices=["Y", "N"],
    min_choice_mass=0.0,
    batch_size=3,
    max_length=104,
)
PROMPTS = ["a red cat on a mat", "the sun"]
RESPONSES = [
    ["The red cat sits.", "cat", "A mat, red and wide, and a cat on it.", "cat"],  # two identical responses
    [
        "Sun.",
        "The warm sun sings all day long over the hills.",
        "sun sun",
        "It is hot.",
    ],  # the longest pairs cut at 104 tokens
]


def both_modes(make_model) -> dict[bool, tuple]:
    """Round robin and absolute scores of two groups, through the tree and whole, on the model ``make_model()``."""
    tok = char_tokenizer()
    prompts = [p for p, rs in zip(PROMPTS, RESPONSES) for _ in rs]
    texts = [r for rs in RESPONSES for r in rs]
    groups = [[0, 1, 2, 3], [4, 5, 6, 7]]
    out = {}
    for share in (False, True):
        model = make_model(tok)
        judge = LMJudge.self_judge(model, tok, SHORT)
        judge.share_prefixes = share
        asked = []

        def ask(first, second, judge=judge, asked=asked):
            v = judge.compare(CRIT, [prompts[i] for i in first], [{}] * len(first), [texts[i] for i in first],
                              [texts[i] for i in second])  # fmt: skip
            asked.append(v.prob)
            return v

        w, stats = Tournament("round_robin").win_rates(ask, groups)  # [N]
        absolute = judge.score(CRIT, prompts, [{}] * len(texts), texts).prob  # [N]
        out[share] = (torch.cat(asked), w, absolute, judge.calls, judge.tokens_read, model)
    return out


def test_lm_judge_tree_equals_whole_questions():
    """The tree gives the whole questions' verdicts, win rates and absolute scores (to float rounding), with
    the same call count and fewer tokens read; the two orders of a duplicate pair are one question."""
    out = both_modes(lambda tok: tiny_causal_lm(TINY, len(tok), seed=5).eval())
    (j0, w0, a0, calls0, tokens0, _), (j1, w1, a1, calls1, tokens1, _) = out[False], out[True]
    assert torch.allclose(j1, j0, atol=1e-6, rtol=0) and torch.allclose(w1, w0, atol=1e-6, rtol=0)
    assert torch.allclose(a1, a0, atol=1e-6, rtol=0)
    assert (j0 - 0.5).abs().max() > 1e-3  # the verdicts are not all ties: the check can fail
    assert calls0 == calls1 == 2 * 12 + 8 and tokens1 < tokens0


def test_lm_judge_tree_on_a_lora_self_judge():
    """A LoRA policy's self-judge (the live policy, adapters disabled) through the tree: the verdicts of the
    whole questions, and the policy's training mode restored."""

    def lora_policy(tok):
        policy = add_lora(tiny_causal_lm(TINY, len(tok), seed=6), LoraSettings(enabled=True, r=4, alpha=8))
        with torch.no_grad():
            for name, p in policy.named_parameters():
                if "lora_B" in name:
                    p.copy_(0.5 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))
        return policy.train()

    out = both_modes(lora_policy)
    assert torch.allclose(out[True][0], out[False][0], atol=1e-6, rtol=0)
    assert out[True][5].training


SMOLLM2 = "smollm2-135m-instruct"


@pytest.mark.real
@pytest.mark.skipif(not is_fetched(SMOLLM2), reason=f"{SMOLLM2} is not fetched into {model_dir(SMOLLM2)}")
def test_smollm2_chat_judge_tree_equals_whole_questions():
    """SmolLM2-135M-Instruct as a chat self-judge with the default templates (the RcRL recipe's judge): a
    round robin of 5 responses and their absolute scores agree between the modes to float rounding."""
    policy, tok = load_policy(ModelConfig(name=SMOLLM2))
    cfg = LMJudgeConfig(chat_template=True, batch_size=8)
    prompt = "Write one sentence about a lighthouse."
    texts = [
        "The lighthouse stands tall.",
        "A lighthouse guides ships through the stormy night with its steady beam.",
        "Light.",
        "The old keeper climbs the stairs of the lighthouse every evening.",
        "The lighthouse stands tall.",
    ]
    verdicts = {}
    for share in (False, True):
        judge = LMJudge.self_judge(policy, tok, cfg)
        judge.share_prefixes = share
        first, second = zip(*[(a, b) for a in texts for b in texts if a is not b])
        v = judge.compare(CRIT, [prompt] * len(first), [{}] * len(first), list(first), list(second))
        s = judge.score(CRIT, [prompt] * len(texts), [{}] * len(texts), texts)
        verdicts[share] = (v.prob, s.prob)
    assert torch.allclose(verdicts[True][0], verdicts[False][0], atol=1e-5, rtol=0)
    assert torch.allclose(verdicts[True][1], verdicts[False][1], atol=1e-5, rtol=0)
