"""A batch of judge questions read with every prefix they share computed once (a KV-cache prefix tree).

A judge's questions come in families.  Every comparison of one group on one criterion opens with the same
instruction, criterion and prompt; every comparison that shows response i first continues with i.  Read one
by one, a round robin of G rollouts reads the shared opening G(G − 1) times and each response 2(G − 1) times.

Here the questions are arranged in a tree by keys the caller gives, a tuple per question, coarsest first
(the LM judge's comparisons: ``(criterion, prompt, first response)``).  A node's tokens are the longest
common prefix, in token ids, of the questions below it; a question's own tokens follow, down to a leaf.
Each node is run once, as a KV cache (a transformers ``DynamicCache``) that its children's forward pass
extends, the children batched over their parents' rows.  The answer is read at each leaf's last position.

Why the verdicts do not change: a causal LM's output at a position depends only on the token ids at and
before it and on their position ids.  A question read through the tree sees exactly its own ids, because
the prefixes are common prefixes of the ids the question would be tokenized to alone (a key that groups
unrelated questions only shortens the shared part).  Its position ids are the same too, counted from
its first real token.  Padding, left of each node's tokens in a batch, is masked out of attention
wherever it sits in the cache.  What differs is the order of floating-point reductions: batched matmuls
of other shapes and softmaxes over padded caches.  So the next-token distribution agrees with the
unshared read to float rounding (``tests/judges/test_prefix_tree.py``), not bit for bit.

Choices of ours: the keys as levels, so that a tree has at most one level per key and no per-token
branching; a family of one question, a node with no tokens of its own, and the only child of a node that
answers nothing all fold into their neighbours (no forward pass for them alone); identical questions
share one leaf; siblings are batched in order of length (less padding).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache

from rewardzoo.core.models import cache_keyword


@dataclass
class Node:
    """A run of tokens read once for every question below it."""

    tokens: list[int]  # the ids this node adds after its parent's
    rows: list[int] = field(default_factory=list)  # questions that end here (the answer is read after tokens)
    children: list[Node] = field(default_factory=list)


def common_prefix(seqs: list[list[int]]) -> int:
    """Length of the longest prefix every sequence shares.

    >>> common_prefix([[1, 2, 3], [1, 2, 4, 5], [1, 2]])
    2
    """
    first, n = seqs[0], min(map(len, seqs))
    return next((i for i in range(n) if any(s[i] != first[i] for s in seqs)), n)


def build_tree(seqs: list[list[int]], keys: list[tuple[Hashable, ...]]) -> list[Node]:
    """The root's children: the questions ``seqs`` (token ids, each at least one) grouped level by level by
    ``keys`` (one tuple per question, all of one length), each group's node holding the common prefix."""
    if len({len(k) for k in keys}) > 1:
        raise ValueError("every question needs the same number of keys")
    if any(not s for s in seqs):
        raise ValueError("every question needs at least one token")
    return _fold(_nodes(seqs, keys, list(range(len(seqs))), 0, 0))


def _nodes(seqs: list[list[int]], keys: list[tuple], rows: list[int], depth: int, start: int) -> list[Node]:
    """Nodes covering ``rows``, whose first ``start`` tokens are read above them, grouped from key ``depth``."""
    if depth == len(keys[rows[0]]):
        leaves: dict[tuple[int, ...], list[int]] = {}
        for r in rows:
            leaves.setdefault(tuple(seqs[r][start:]), []).append(r)
        return [Node(list(t), rs) for t, rs in leaves.items()]
    families: dict[Hashable, list[int]] = {}
    for r in rows:
        families.setdefault(keys[r][depth], []).append(r)
    out: list[Node] = []
    for members in families.values():
        members_seqs = [seqs[r] for r in members]
        end = min(common_prefix(members_seqs), min(map(len, members_seqs)) - 1)  # a leaf keeps ≥ 1 token
        if len(members) == 1 or end <= start:
            out += _nodes(seqs, keys, members, depth + 1, start)
        else:
            out.append(Node(seqs[members[0]][start:end], [], _nodes(seqs, keys, members, depth + 1, end)))
    return out


def _fold(nodes: list[Node]) -> list[Node]:
    """Merge every node that answers nothing into its only child."""
    out = []
    for node in nodes:
        node.children = _fold(node.children)
        while not node.rows and len(node.children) == 1:
            child = node.children[0]
            node = Node(node.tokens + child.tokens, child.rows, child.children)
        out.append(node)
    return out


def tree_tokens(nodes: list[Node]) -> int:
    """Tokens a tree reads (each node once, padding not counted)."""
    return sum(len(n.tokens) + tree_tokens(n.children) for n in nodes)


@dataclass
class KVState:
    """The KV cache of n token sequences, each left-padded within every node it was extended by."""

    layers: list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values [n, H_kv, T, D]
    mask: torch.Tensor  # [n, T] long: 1 where the cache holds a token, 0 at padding
    length: torch.Tensor  # [n] long: tokens held, the position id of the next token


def extend(
    model: torch.nn.Module, parent: KVState | None, parents: list[int], segments: list[list[int]], pad_id: int
) -> tuple[KVState, torch.Tensor]:
    """Run ``segments`` (token ids, one per new row) after the cached rows ``parents`` of ``parent`` (None: from
    the start) in one forward pass; the new rows' cache and their next-token logits [b, V] (float32 or the
    model's dtype)."""
    device = next(model.parameters()).device
    b, S = len(segments), max(map(len, segments))
    ids = torch.full((b, S), pad_id, dtype=torch.long)  # [b, S] left-padded
    seg_mask = torch.zeros(b, S, dtype=torch.long)  # [b, S]
    for i, s in enumerate(segments):
        ids[i, S - len(s) :] = torch.tensor(s)
        seg_mask[i, S - len(s) :] = 1
    seg_mask = seg_mask.to(device)
    if parent is None:
        past, mask, start = None, seg_mask, torch.zeros(b, dtype=torch.long, device=device)  # [b, S], [b]
    else:
        idx = torch.tensor(parents, device=device)  # [b]
        past = DynamicCache([(k[idx], v[idx]) for k, v in parent.layers])  # [b, H_kv, T, D] each
        mask = torch.cat([parent.mask[idx], seg_mask], dim=1)  # [b, T + S]
        start = parent.length[idx]  # [b]
    positions = start[:, None] + (seg_mask.cumsum(1) - 1).clamp(min=0)  # [b, S]
    key = cache_keyword(model)
    out = model(
        input_ids=ids.to(device),
        attention_mask=mask,
        position_ids=positions,
        use_cache=True,
        logits_to_keep=1,
        **{key: past},
    )
    layers = [(layer.keys, layer.values) for layer in getattr(out, key).layers]  # [b, H_kv, T + S, D] each
    return KVState(layers, mask, start + seg_mask.sum(1)), out.logits[:, -1]  # [b, V]


@torch.no_grad()
def read_tree(
    model: torch.nn.Module, roots: list[Node], n_rows: int, ids: list[int], batch_size: int, pad_id: int
) -> torch.Tensor:
    """[n_rows, len(ids)] float64 next-token probabilities of ``ids`` after every question of the tree."""
    out = torch.zeros(n_rows, len(ids), dtype=torch.float64)  # [M, K]
    _descend(model, None, [(0, n) for n in roots], out, ids, batch_size, pad_id)
    return out


def _descend(
    model: torch.nn.Module,
    parent: KVState | None,
    items: list[tuple[int, Node]],
    out: torch.Tensor,
    ids: list[int],
    batch_size: int,
    pad_id: int,
) -> None:
    """Run ``items`` (row of ``parent`` each extends, node) in batches, then their children depth first."""
    items = sorted(items, key=lambda item: len(item[1].tokens))
    for s in range(0, len(items), batch_size):
        chunk = items[s : s + batch_size]
        state, logits = extend(model, parent, [p for p, _ in chunk], [n.tokens for _, n in chunk], pad_id)  # [b, V]
        probs = torch.softmax(logits.double(), dim=-1)[:, ids].cpu()  # [b, K]
        for i, (_, node) in enumerate(chunk):
            out[node.rows] = probs[i]
        children = [(i, c) for i, (_, node) in enumerate(chunk) for c in node.children]
        if children:
            _descend(model, state, children, out, ids, batch_size, pad_id)
