"""The prompts' rules on how to compute, judged on the source's syntax tree (prompt_rules over source_rules).

Each test names a source (accepted or refused) and the rules it must pass or break; aliases and indirections a
student could use are covered, and the documented limits (code that exists only at run time) are pinned too.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from checklibs.attention.prompt_rules import (
    ATTENTION_ARGS,
    BATCHED_RULES,
    LAYER_ARGS,
    LOOP_RULES,
    Q5_RULES,
    Q7_RULES,
    findings_for,
    source_rules_check,
)
from checklibs.attention.source_rules import Analysis, SourceUnreadable, analyse, tensor_arg
from graders.code.checks import CheckFailed
from graders.code.proxy import CheckUsageError
from tests.checklibs.attention.direct_proxy import DirectProxy

SET_ROOT = Path(__file__).resolve().parents[3] / "problems" / "attention"
QKV = list(ATTENTION_ARGS[:3])


def broken(source: str, entry: str, rules, args=ATTENTION_ARGS) -> set[str]:
    """The keys of the rules ``source`` breaks (all of them when it cannot be read)."""
    found = findings_for(textwrap.dedent(source), entry, args)
    if isinstance(found, str):
        return {rule.key for rule in rules}
    return {rule.key for rule in rules if rule.judge(found, entry)}


def q5(source: str) -> set[str]:
    return broken(source, "scaled_attention", Q5_RULES)


def loop(source: str) -> set[str]:
    return broken(source, "attention_loop", LOOP_RULES, QKV)


def batched(source: str) -> set[str]:
    return broken(source, "attention_batched", BATCHED_RULES, QKV)


def q7(source: str) -> set[str]:
    return broken(source, "test_permutation_equivariance", Q7_RULES, LAYER_ARGS)


# ------------------------------------------------------------------------------------------ the shipped files
@pytest.mark.parametrize("path", sorted((SET_ROOT / "solutions" / "q5").glob("*.py")), ids=lambda p: p.name)
def test_q5_solutions_follow_every_rule(path):
    assert q5(path.read_text()) == set()


@pytest.mark.parametrize("path", sorted((SET_ROOT / "solutions" / "q6").glob("*.py")), ids=lambda p: p.name)
def test_q6_solutions_follow_every_rule(path):
    assert loop(path.read_text()) == set()
    assert batched(path.read_text()) == set()


@pytest.mark.parametrize("path", sorted((SET_ROOT / "solutions" / "q7").glob("*.py")), ids=lambda p: p.name)
def test_q7_solutions_follow_every_rule(path):
    assert q7(path.read_text()) == set()


@pytest.mark.parametrize(
    ("mutant", "entry", "expected"),
    [
        ("q5/per_query_loop.py", "scaled_attention", {"no_elementwise_loops"}),
        ("q5/broadcast_scores.py", "scaled_attention", {"matrix_products"}),
        ("q5/inplace_without_grad.py", "scaled_attention", {"no_inplace"}),
        ("q5/inplace_mutation.py", "scaled_attention", {"no_inplace"}),
        ("q5/seeded_random_key_order.py", "scaled_attention", {"no_random"}),
        ("q5/dropout_left_on.py", "scaled_attention", {"no_random"}),
        ("q5/memoised_outputs.py", "scaled_attention", {"no_state"}),
        ("q5/mask_flipped_in_place.py", "scaled_attention", {"no_inplace"}),
        ("q6/loop_is_batched_with_sleep.py", "attention_loop", {r.key for r in LOOP_RULES}),
        ("q6/loop_calls_softmax.py", "attention_loop", {"no_library_softmax"}),
        ("q6/loop_full_scores_first.py", "attention_loop", {"loop_per_query", "no_full_scores"}),
        ("q6/loop_weighted_sum_after.py", "attention_loop", {"loop_weighted_sum"}),
        ("q6/batched_still_loops.py", "attention_batched", {"batched_no_loops", "batched_matrix_products"}),
        ("q6/batched_broadcast_sum.py", "attention_batched", {"batched_matrix_products"}),
        ("q7/fixed_permutation.py", "test_permutation_equivariance", {"random_permutation"}),
        ("q7/fixed_inputs.py", "test_permutation_equivariance", {"random_inputs"}),
    ],
)
def test_each_rule_mutant_breaks_exactly_its_rules(mutant, entry, expected):
    source = (SET_ROOT / "mutants" / mutant).read_text()
    rules = {"scaled_attention": Q5_RULES, "attention_batched": BATCHED_RULES}.get(entry)
    if entry == "attention_loop":
        rules = LOOP_RULES
    if entry == "test_permutation_equivariance":
        assert q7(source) == expected
        return
    args = ATTENTION_ARGS if entry == "scaled_attention" else QKV
    assert broken(source, entry, rules, args) == expected


# ------------------------------------------------------------------------------------------------ q5: loops
HEAD = """
import math
import torch
"""


def test_loops_over_batch_and_heads_are_allowed():
    assert "no_elementwise_loops" not in q5(
        HEAD
        + """
def scaled_attention(q, k, v, key_valid=None, causal=False):
    for t in (q, k, v):
        if t.ndim != 4:
            raise ValueError("4-D")
    b, h, _, _ = q.shape
    out = torch.zeros(b, h, q.shape[2], v.shape[3])
    for bi in range(b):
        for hi in range(h):
            w = torch.softmax(q[bi, hi] @ k[bi, hi].T / math.sqrt(q.shape[-1]), -1)
            out[bi, hi] = w @ v[bi, hi]
    return out, out
"""
    )


@pytest.mark.parametrize(
    "body",
    [
        # range over a size unpacked from the shape
        "b, h, tq, d = q.shape\n    rows = []\n    for i in range(tq):\n        rows.append(q[:, :, i] @ k.mT)",
        # a comprehension over q.size(-2)
        "rows = [q[..., i, :] @ k.mT for i in range(q.size(-2))]",
        # iterating the query rows of one head
        "for row in q[0, 0]:\n        s = row @ k[0, 0].T",
        # a while loop over the keys
        "j = 0\n    while j < k.shape[2]:\n        s = q @ k[:, :, j:j+1].mT\n        j += 1",
        # an element-wise write into an untracked tensor
        "w = torch.zeros(2, 2, 5, 5)\n    for i in range(5):\n        w[:, :, i] = 1.0",
        # unbind along the query axis
        "for qi in q.unbind(dim=2):\n        s = qi @ k.mT",
    ],
)
def test_loops_over_positions_are_element_wise(body):
    source = HEAD + f"\ndef scaled_attention(q, k, v, key_valid=None, causal=False):\n    {body}\n    return q, k\n"
    assert "no_elementwise_loops" in q5(source)


def test_matrix_products_accept_einsum_and_matmul_and_refuse_broadcasting():
    ok = HEAD + "def scaled_attention(q, k, v, key_valid=None, causal=False):\n    w = torch.matmul(q, k.mT)\n"
    ok += "    return torch.einsum('bhij,bhjd->bhid', w, v), w\n"
    assert "matrix_products" not in q5(ok)
    bad = HEAD + "def scaled_attention(q, k, v, key_valid=None, causal=False):\n"
    bad += "    w = (q.unsqueeze(3) * k.unsqueeze(2)).sum(-1)\n"
    bad += "    return (w.unsqueeze(-1) * v.unsqueeze(2)).sum(3), w\n"
    assert "matrix_products" in q5(bad)


# ---------------------------------------------------------------------------------------------- q5: in place
@pytest.mark.parametrize(
    "body",
    [
        "q /= math.sqrt(q.shape[-1])",
        "q.div_(2.0)",
        "k[..., 0] = 0.0",
        "v += 1",
        "torch.mul(q, 2.0, out=q)",
        "torch.nn.functional.relu(q, inplace=True)",
        "x = q.view(-1)\n    x.mul_(2)",
        "x = q[:, :, 0]\n    x *= 2",
        "q = q.float()\n    q /= 2",  # .float() returns q itself when it is float32 already
        "for t in (q, k):\n        t.zero_()",
        "_scale(q)",
        "q.masked_fill_(torch.zeros_like(q, dtype=torch.bool), 0.0)",
        "torch.Tensor.add_(q, 1.0)",
    ],
)
def test_in_place_changes_of_inputs_are_refused(body):
    source = HEAD + "def _scale(t):\n    t /= 2\n\n"
    source += f"def scaled_attention(q, k, v, key_valid=None, causal=False):\n    {body}\n    return q, k\n"
    assert "no_inplace" in q5(source)


@pytest.mark.parametrize(
    "body",
    [
        "q = q / 2\n    q /= 2",  # rebinding first: q is a new tensor
        "s = q @ k.mT\n    s /= 2\n    s.masked_fill_(s > 0, 0.0)",
        "x = q.clone()\n    x.mul_(2)",
        "_scale(q @ k.mT)",
        "q.requires_grad_(True)",
    ],
)
def test_in_place_changes_of_new_tensors_are_fine(body):
    source = HEAD + "def _scale(t):\n    t /= 2\n\n"
    source += f"def scaled_attention(q, k, v, key_valid=None, causal=False):\n    {body}\n    return q, k\n"
    assert "no_inplace" not in q5(source)


# ---------------------------------------------------------------------------------------- q5: random, state
@pytest.mark.parametrize(
    ("imports", "body"),
    [
        ("import torch.nn.functional as F", "w = F.dropout(q, 0.1)"),
        ("from torch.nn.functional import dropout as drop", "w = drop(q, 0.1, training=True)"),
        ("import torch.nn as nn", "w = nn.Dropout(0.1)(q)"),
        ("", "w = q + 1e-9 * torch.rand_like(q)"),
        ("", "w = q[:, :, torch.randperm(q.shape[2])]"),
        ("import numpy as np", "w = q * float(np.random.rand())"),
        ("import random", "w = q * random.random()"),
        ("", "w = q.clone().bernoulli_(0.5)"),
    ],
)
def test_random_operations_are_refused(imports, body):
    source = f"import torch\n{imports}\n\ndef scaled_attention(q, k, v, key_valid=None, causal=False):\n"
    source += f"    {body}\n    return w, w\n"
    assert "no_random" in q5(source)


def test_seeding_and_importing_random_modules_are_not_random_operations():
    source = "import random\nimport torch\n\ndef scaled_attention(q, k, v, key_valid=None, causal=False):\n"
    source += "    torch.manual_seed(0)\n    return q @ k.mT, random\n"
    assert "no_random" not in q5(source)


@pytest.mark.parametrize(
    ("module", "body"),
    [
        ("_cache = {}", "_cache[1] = q"),
        ("_cache = {}", "_cache.setdefault(1, q)"),
        ("_calls = [0]", "_calls[0] += 1"),
        ("_count = 0", "global _count\n    _count += 1"),
        ("", "scaled_attention.last = q"),
        ("_buf = torch.zeros(3)", "_buf.add_(1.0)"),
        ("import functools\n_helper = functools.lru_cache(maxsize=None)(lambda x: x)", "_helper(1)"),
    ],
)
def test_state_between_calls_is_refused(module, body):
    source = f"import torch\n{module}\n\ndef scaled_attention(q, k, v, key_valid=None, causal=False):\n"
    source += f"    {body}\n    return q, k\n"
    assert "no_state" in q5(source)


def test_a_cached_helper_and_a_mutated_default_are_state():
    decorated = "import functools\nimport torch\n\n@functools.lru_cache(maxsize=None)\ndef _h(n):\n    return n\n\n"
    decorated += "def scaled_attention(q, k, v, key_valid=None, causal=False):\n    _h(3)\n    return q, k\n"
    assert "no_state" in q5(decorated)
    default = "def scaled_attention(q, k, v, key_valid=None, causal=False, _seen=[]):\n    _seen.append(1)\n"
    default += "    return q, k\n"
    assert "no_state" in q5(default)


def test_reading_module_constants_and_local_lists_are_not_state():
    source = "import torch\nSCALE = 0.5\nNAMES = ('q', 'k')\n\n"
    source += "def scaled_attention(q, k, v, key_valid=None, causal=False):\n    rows = []\n    s = SCALE\n"
    source += "    s *= 2\n    rows.append(q @ k.mT * s)\n    rows += [NAMES]\n    return rows[0], rows[0]\n"
    assert "no_state" not in q5(source)


# ------------------------------------------------------------------------------------------ q6: the loop rules
GOOD_LOOP = """
import math
import torch


def attention_loop(q, k, v):
    outputs, weights = [], []
    for i in range(q.shape[2]):
        s = q[:, :, i] @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (B, H, Tk)
        e = torch.exp(s - s.amax(-1, keepdim=True))
        w = e / e.sum(-1, keepdim=True)
        weights.append(w)
        outputs.append(w @ v)
    return torch.stack(outputs, 2), torch.stack(weights, 2)
"""


@pytest.mark.parametrize(
    "variant",
    [
        GOOD_LOOP,
        # a while loop, and the scores computed by a helper called inside the loop
        """
import torch

def _row(qi, k):
    return torch.einsum("bhd,bhjd->bhj", qi, k) / qi.shape[-1] ** 0.5

def attention_loop(q, k, v):
    rows, outs = [], []
    i = 0
    while i < q.shape[-2]:
        s = _row(q[..., i, :], k)
        e = (s - s.max(-1, keepdim=True).values).exp()
        w = e / e.sum(-1, keepdim=True)
        rows.append(w)
        outs.append(torch.einsum("bhj,bhjd->bhd", w, v))
        i += 1
    return torch.stack(outs, -2), torch.stack(rows, -2)
""",
        # iterating the query slices, with a user function that happens to be called softmax
        """
import torch

def softmax(x):
    e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)

def attention_loop(q, k, v):
    q = q / q.shape[-1] ** 0.5
    pairs = [(w, w @ v) for w in (softmax(qi @ k.mT) for qi in q.unbind(dim=2))]
    return torch.stack([o for _, o in pairs], 2), torch.stack([w for w, _ in pairs], 2)
""",
        # a (batch, head, query) triple loop is still a loop over the queries
        """
import torch

def attention_loop(q, k, v):
    b, h, t, d = q.shape
    w = q.new_zeros(b, h, t, k.shape[2])
    out = q.new_zeros(b, h, t, v.shape[3])
    for bi in range(b):
        for hi in range(h):
            for i in range(t):
                s = k[bi, hi] @ q[bi, hi, i] / d ** 0.5
                e = torch.exp(s - s.max())
                w[bi, hi, i] = e / e.sum()
                out[bi, hi, i] = w[bi, hi, i] @ v[bi, hi]
    return out, w
""",
    ],
)
def test_loop_versions_that_follow_the_prompt(variant):
    assert loop(variant) == set()


@pytest.mark.parametrize(
    ("imports", "call"),
    [
        ("", "torch.softmax(s, -1)"),
        ("import torch.nn.functional as F", "F.softmax(s, dim=-1)"),
        ("from torch import softmax", "softmax(s, -1)"),
        ("from torch.nn.functional import softmax as sm", "sm(s, -1)"),
        ("", "s.softmax(-1)"),
        ("", "torch.nn.Softmax(dim=-1)(s)"),
        ("", "getattr(torch, 'softmax')(s, -1)"),
        ("", "torch.__dict__['softmax'](s, -1)"),
        ("", "torch.log_softmax(s, -1).exp()"),
        ("", "torch.special.softmax(s, -1)"),
        ("", "torch.Tensor.softmax(s, -1)"),
        ("_sm = torch.softmax", "_sm(s, -1)"),
        ("import functools\n_sm = functools.partial(torch.softmax, dim=-1)", "_sm(s)"),
        ("torch.exp = torch.softmax", "torch.exp(s)"),
        ("from torch.nn.functional import *", "softmax(s, -1)"),
        ("import importlib\nF = importlib.import_module('torch.nn.functional')", "F.softmax(s, -1)"),
    ],
)
def test_every_spelling_of_a_library_softmax_is_refused(imports, call):
    source = f"import torch\n{imports}\n\ndef attention_loop(q, k, v):\n    ws = []\n"
    source += f"    for i in range(q.shape[2]):\n        s = q[:, :, i] @ k.mT\n        w = {call}\n"
    source += "        ws.append(w @ v)\n    return torch.stack(ws, 2), ws\n"
    assert loop(source) == {"no_library_softmax"}


def test_a_softmax_in_a_default_argument_or_a_helper_is_refused():
    default = "import torch\n\ndef attention_loop(q, k, v, norm=torch.softmax):\n    ws = []\n"
    default += "    for i in range(q.shape[2]):\n        w = norm(q[:, :, i] @ k.mT, -1)\n        ws.append(w @ v)\n"
    default += "    return ws, ws\n"
    assert "no_library_softmax" in loop(default)
    helper = "import torch\n\ndef _norm(x):\n    return torch.nn.functional.softmax(x, -1)\n\n"
    helper += "def attention_loop(q, k, v):\n    ws = []\n    for i in range(q.shape[2]):\n"
    helper += "        w = _norm(q[:, :, i] @ k.mT)\n        ws.append(w @ v)\n    return ws, ws\n"
    assert "no_library_softmax" in loop(helper)
    sdpa = "import torch.nn.functional as F\n\ndef attention_loop(q, k, v):\n"
    sdpa += "    return F.scaled_dot_product_attention(q, k, v), None\n"
    assert "no_library_softmax" in loop(sdpa)


@pytest.mark.parametrize(
    "scores",
    [
        "q @ k.transpose(-1, -2)",
        "torch.matmul(q, k.mT)",
        "torch.einsum('bhid,bhjd->bhij', q, k)",
        "_scores(q, k)",
        "(q.unsqueeze(3) * k.unsqueeze(2)).sum(-1)",
        "q.transpose(1, 2) @ k.transpose(1, 2).mT",
    ],
)
def test_a_whole_score_matrix_is_refused(scores):
    source = "import torch\n\ndef _scores(a, b):\n    return a @ b.mT\n\n"
    source += f"def attention_loop(q, k, v):\n    all_s = {scores}\n    ws = []\n"
    source += "    for i in range(q.shape[2]):\n        s = all_s[:, :, i]\n"
    source += "        e = (s - s.max(-1, keepdim=True).values).exp()\n"
    source += "        w = e / e.sum(-1, keepdim=True)\n        ws.append(w @ v)\n    return ws, ws\n"
    assert "no_full_scores" in loop(source)
    assert "loop_per_query" in loop(source)


def test_the_whole_score_matrix_inside_the_loop_is_refused_too():
    source = "import torch\n\ndef attention_loop(q, k, v):\n    ws = []\n    for i in range(q.shape[2]):\n"
    source += "        s = (q @ k.mT)[:, :, i]\n        e = (s - s.max(-1, keepdim=True).values).exp()\n"
    source += "        ws.append(e / e.sum(-1, keepdim=True) @ v)\n    return ws, ws\n"
    assert {"no_full_scores", "loop_per_query"} <= loop(source)


def test_a_loop_over_the_batch_is_not_a_loop_over_the_queries():
    source = "import torch\n\ndef attention_loop(q, k, v):\n    outs = []\n    for b in range(q.shape[0]):\n"
    source += "        s = q[b] @ k[b].mT\n        e = (s - s.max(-1, keepdim=True).values).exp()\n"
    source += "        outs.append(e / e.sum(-1, keepdim=True) @ v[b])\n    return outs, outs\n"
    assert {"loop_per_query", "no_full_scores"} <= loop(source)


# --------------------------------------------------------------------------------------- q6: the batched rules
def test_batched_loops_are_refused_but_a_comprehension_over_the_inputs_is_not():
    fine = "import torch\n\ndef attention_batched(q, k, v):\n    q, k, v = (t.double() for t in (q, k, v))\n"
    fine += "    w = torch.softmax(q @ k.mT, -1)\n    return w @ v, w\n"
    assert batched(fine) == set()
    per_head = "import torch\n\ndef attention_batched(q, k, v):\n    outs = []\n    for h in range(q.shape[1]):\n"
    per_head += "        w = torch.softmax(q[:, h] @ k[:, h].mT, -1)\n        outs.append(w @ v[:, h])\n"
    per_head += "    return torch.stack(outs, 1), outs\n"
    assert "batched_no_loops" in batched(per_head)


# --------------------------------------------------------------------------------------------------------- q7
@pytest.mark.parametrize(
    "perm",
    [
        "torch.randperm(t)",
        "torch.argsort(torch.rand(t))",
        "torch.rand(t).argsort()",
        "np.random.permutation(t)",
        "np.random.default_rng(0).permutation(t)",
    ],
)
def test_random_permutations_are_recognised(perm):
    source = "import numpy as np\nimport torch\n\ndef test_permutation_equivariance(layer):\n    t = 6\n"
    source += f"    x = torch.randn(2, t, 4)\n    m = torch.rand(2, t) < 0.5\n    perm = {perm}\n"
    source += "    torch.testing.assert_close(layer(x[:, perm], m[:, perm]), layer(x, m)[:, perm])\n"
    assert q7(source) == set()


def test_a_shuffled_list_and_a_permutation_matrix_are_random_permutations():
    shuffled = "import random\nimport torch\n\ndef test_permutation_equivariance(layer):\n"
    shuffled += "    perm = list(range(6))\n    random.shuffle(perm)\n    x = torch.randn(2, 6, 4)\n"
    shuffled += "    m = torch.ones(2, 6, dtype=torch.bool)\n"
    shuffled += "    assert torch.allclose(layer(x[:, perm], m), layer(x, m)[:, perm])\n"
    assert q7(shuffled) == set()
    via_helper = "import torch\n\ndef _check(f, x, m, p):\n    assert torch.allclose(f(p @ x, m), p @ f(x, m))\n\n"
    via_helper += "def test_permutation_equivariance(layer):\n    p = torch.eye(6)[torch.randperm(6)]\n"
    via_helper += "    _check(layer, torch.randn(2, 6, 4), torch.ones(2, 6, dtype=torch.bool), p)\n"
    assert q7(via_helper) == set()


@pytest.mark.parametrize("perm", ["torch.arange(5, -1, -1)", "torch.roll(torch.arange(6), 2)", "[1, 0, 3, 2, 5, 4]"])
def test_fixed_permutations_are_refused(perm):
    source = "import torch\n\ndef test_permutation_equivariance(layer):\n    x = torch.randn(2, 6, 4)\n"
    source += f"    m = torch.rand(2, 6) < 0.5\n    perm = {perm}\n"
    source += "    torch.testing.assert_close(layer(x[:, perm], m[:, perm]), layer(x, m)[:, perm])\n"
    assert q7(source) == {"random_permutation"}


# ------------------------------------------------------------------------------------------------ edge cases
def test_a_missing_entry_an_unparsable_source_and_no_source():
    assert "no top-level `def scaled_attention" in str(findings_for("x = 1\n", "scaled_attention", ATTENTION_ARGS))
    assert "could not read your source" in str(findings_for("def f(:\n", "scaled_attention", ATTENTION_ARGS))
    with pytest.raises(SourceUnreadable):
        Analysis("def f(:\n")
    with pytest.raises(CheckUsageError):
        findings_for(None, "scaled_attention", ATTENTION_ARGS)


def test_an_entry_bound_to_a_lambda_or_a_def_under_another_name_is_found():
    source = "import torch\n_impl = lambda q, k, v, key_valid=None, causal=False: (q @ k.mT @ v, q @ k.mT)\n"
    source += "scaled_attention = _impl\n"
    assert "matrix_products" not in q5(source)


def test_deep_nesting_and_recursion_do_not_break_the_walk():
    deep = "def scaled_attention(q, k, v, key_valid=None, causal=False):\n    return " + "-" * 400 + "q, q\n"
    found = findings_for(deep, "scaled_attention", ATTENTION_ARGS)
    assert not isinstance(found, str) or "could not read" in found
    recursive = "def _f(x, n):\n    return _f(x, n - 1) if n else x\n\n"
    recursive += "def scaled_attention(q, k, v, key_valid=None, causal=False):\n    return _f(q @ k.mT, 3), q\n"
    assert analyse(recursive, "scaled_attention", list(ATTENTION_ARGS)).entry_found


def test_an_exploding_call_graph_is_reported_as_too_complex():
    lines = ["import torch"]
    for i in range(30):
        lines.append(f"def f{i}(x):\n    return f{i + 1}(x) + f{i + 1}(x * 2) + f{i + 1}(x[0])")
    lines.append("def f30(x):\n    return x")
    lines.append("def scaled_attention(q, k, v, key_valid=None, causal=False):\n    return f0(q), f0(k)")
    found = findings_for("\n".join(lines) + "\n", "scaled_attention", ATTENTION_ARGS)
    assert isinstance(found, str) and "too complex" in found


def test_documented_limit_code_built_at_run_time_is_not_seen():
    """getattr with a computed name and exec of strings are recorded as dynamic, not judged (see source_rules)."""
    source = "import torch\n\ndef attention_loop(q, k, v):\n    f = getattr(torch, 'soft' + 'max')\n"
    source += "    exec('pass')\n    ws = []\n    for i in range(q.shape[2]):\n        w = f(q[:, :, i] @ k.mT, -1)\n"
    source += "        ws.append(w @ v)\n    return ws, ws\n"
    assert loop(source) == set()
    found = analyse(source, "attention_loop", QKV)
    assert {what for what, _ in found.dynamic} == {"getattr with a computed name", "exec"}


def test_the_analysis_never_runs_the_source(tmp_path):
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').write('x')\n\ndef scaled_attention(q, k, v):\n"
    source += f"    open({str(marker)!r}, 'w')\n    return q, q\n"
    analyse(source, "scaled_attention", [tensor_arg("q"), tensor_arg("k"), tensor_arg("v")])
    assert not marker.exists()


# --------------------------------------------------------------------------------------------------- the check
def test_the_check_reads_the_source_from_the_proxy():
    check = source_rules_check(points=3, entry="scaled_attention", rules=Q5_RULES)
    good = DirectProxy((SET_ROOT / "solutions" / "q5" / "masked_fill.py").read_text())
    assert "all 5 cases passed" in str(check(good))
    bad = DirectProxy((SET_ROOT / "mutants" / "q5" / "per_query_loop.py").read_text())
    with pytest.raises(CheckFailed) as failed:
        check(bad)
    assert failed.value.score_fraction == pytest.approx(0.8)
    assert "line 27" in failed.value.feedback and "query positions" in failed.value.feedback


def test_adversarial_sources_cost_little_on_the_trusted_side():
    """Nothing interrupts trusted-side CPU time, so the walk has budgets (steps, calls, value sizes)."""
    import time

    head = "def scaled_attention(q, k, v, key_valid=None, causal=False):\n"
    many_branches = head + "".join(f"    v{i} = q\n" for i in range(2000))
    many_branches += "".join(f"    if v{i}:\n        v{i} = k\n" for i in range(2000)) + "    return q, q\n"
    nested = head + "    x = q\n" + "    x = (x, x)\n" * 80 + "    z = x\n" + "    z = zip(z, z)\n" * 60
    nested += "    for a in z:\n        pass\n    return x, x\n"
    for source in (many_branches, nested):
        start = time.perf_counter()
        found = findings_for(source, "scaled_attention", ATTENTION_ARGS)
        assert time.perf_counter() - start < 5
        assert isinstance(found, str) or found.entry_found
    assert "too complex" in str(findings_for(many_branches, "scaled_attention", ATTENTION_ARGS))


# ------------------------------------------------- classes, forward, partial, vmap: seen, in both directions
Q5_HEAD = HEAD + "from torch import nn\nimport functools\n"
VALIDATE = """
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("4-D")
"""
STYLES = {
    "an nn.Module's forward, called on an instance": """
class Attn(nn.Module):
    def forward(self, q, k, v):
        {body}

ATTN = Attn()

def scaled_attention(q, k, v, key_valid=None, causal=False):
    return ATTN(q, k, v)
""",
    "a module built per call, __init__ storing a helper, a method of a base class": """
class Base:
    def run(self, q, k, v):
        {body}

class Attn(Base):
    def __init__(self, scale):
        self.scale = scale
        self.inner = Base()

    def __call__(self, q, k, v):
        return self.inner.run(q, k, v)

def scaled_attention(q, k, v, key_valid=None, causal=False):
    return Attn(0.5)(q, k, v)
""",
    "a static method called on the class": """
class Ops:
    @staticmethod
    def attend(q, k, v):
        {body}

def scaled_attention(q, k, v, key_valid=None, causal=False):
    return Ops.attend(q, k, v)
""",
    "a class method called on an instance": """
class Ops:
    @classmethod
    def attend(cls, q, k, v):
        {body}

def scaled_attention(q, k, v, key_valid=None, causal=False):
    return Ops().attend(q, k, v)
""",
    "functools.partial of a helper": """
def _attend(scale, q, k, v):
    {body}

attend = functools.partial(_attend, 0.5)

def scaled_attention(q, k, v, key_valid=None, causal=False):
    return attend(q, k, v)
""",
    "torch.vmap of a helper, twice": """
def _attend(q, k, v):
    {body}

def scaled_attention(q, k, v, key_valid=None, causal=False):
    return torch.vmap(torch.vmap(_attend))(q, k, v)
""",
    "functools.partial of a class whose __init__ takes the bound argument": """
class Attn:
    def __init__(self, scale):
        self.scale = scale

    def forward(self, q, k, v):
        {body}

    __call__ = forward

make = functools.partial(Attn, 0.5)

def scaled_attention(q, k, v, key_valid=None, causal=False):
    return make()(q, k, v)
""",
    "torch.func.vmap with in_dims, stored at module level": """
def _attend(q, k, v):
    {body}

MAPPED = torch.func.vmap(_attend, in_dims=(0, 0, 0))

def scaled_attention(q, k, v, key_valid=None, causal=False):
    return MAPPED(q, k, v)
""",
}
GOOD_BODY = "w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), -1)\nreturn w @ v, w"
BAD_BODIES = {
    # (body, the rule it breaks)
    "broadcast products": (
        "w = (q.unsqueeze(-2) * k.unsqueeze(-3)).sum(-1).softmax(-1)\n"
        "return (w.unsqueeze(-1) * v.unsqueeze(-3)).sum(-2), w",
        "matrix_products",
    ),
    "a loop over the queries": (
        "rows = [torch.softmax(q[..., i, :] @ k.mT, -1) for i in range(q.shape[-2])]\nw = torch.stack(rows, -2)\n"
        "return w @ v, w",
        "no_elementwise_loops",
    ),
    "an input scaled in place": ("q /= 2\nw = torch.softmax(q @ k.mT, -1)\nreturn w @ v, w", "no_inplace"),
    "dropout": ("w = torch.dropout(torch.softmax(q @ k.mT, -1), 0.1, True)\nreturn w @ v, w", "no_random"),
}


def styled(style: str, body: str) -> str:
    """The style's template with ``body`` (lines without indentation) indented where ``{body}`` stands."""
    template = STYLES[style]
    indent = template.split("{body}")[0].rsplit("\n", 1)[-1]
    return Q5_HEAD + template.replace("{body}", ("\n" + indent).join(body.split("\n")))


@pytest.mark.parametrize("style", list(STYLES))
def test_matrix_products_in_classes_partials_and_vmap_are_seen(style):
    """Item 4 of issue 23: such code lost the matrix_products points though the prompt allows it."""
    assert q5(styled(style, GOOD_BODY)) == set()


@pytest.mark.parametrize("bad", list(BAD_BODIES))
@pytest.mark.parametrize("style", list(STYLES))
def test_the_same_styles_still_break_the_rules_they_break(style, bad):
    body, rule = BAD_BODIES[bad]
    assert rule in q5(styled(style, body))


def test_state_kept_on_a_module_level_instance_is_state():
    source = (
        Q5_HEAD
        + """
class Attn(nn.Module):
    def forward(self, q, k, v):
        w = torch.softmax(q @ k.mT, -1)
        self.last = w @ v
        return self.last, w

ATTN = Attn()

def scaled_attention(q, k, v, key_valid=None, causal=False):
    return ATTN(q, k, v)
"""
    )
    assert q5(source) == {"no_state"}
    per_call = source.replace("return ATTN(q, k, v)", "return Attn()(q, k, v)")
    assert q5(per_call) == set()


def test_a_partial_of_a_library_product_is_a_product():
    source = (
        Q5_HEAD
        + """
scores = functools.partial(torch.einsum, "bhqd,bhkd->bhqk")
mix = functools.partial(torch.matmul)

def scaled_attention(q, k, v, key_valid=None, causal=False):
    w = scores(q, k).softmax(-1)
    return mix(w, v), w
"""
    )
    assert q5(source) == set()


# --------------------------------------------------------------------- in place through casts that may alias
@pytest.mark.parametrize(
    "body",
    [
        "m = key_valid.bool()\n    m.logical_not_()",  # bool mask: .bool() returns the caller's tensor
        "m = key_valid.to(torch.bool)\n    m[:, 0] = True",
        "m = torch.as_tensor(key_valid)\n    m &= True",
        "m = key_valid.to(dtype=torch.bool)\n    m.fill_(True)",
        "x = q.to(q.dtype)\n    x.mul_(2)",
        "x = q.double()\n    x /= 2",  # q may already be float64
    ],
)
def test_in_place_changes_through_casts_that_may_return_the_input_are_refused(body):
    source = HEAD + f"def scaled_attention(q, k, v, key_valid=None, causal=False):\n    {body}\n    return q, k\n"
    assert "no_inplace" in q5(source)


@pytest.mark.parametrize(
    "body",
    [
        "m = key_valid.float()\n    m[m == 0] = float('-inf')",  # a bool mask cast to float is a copy
        "m = key_valid.to(q.dtype)\n    m.sub_(1.0)",
        "m = key_valid.long()\n    m *= 2",
        "m = key_valid.to(torch.float32)\n    m.mul_(-1e9)",
        "x = q.bool()\n    x.logical_not_()",  # floating q cast to bool is a copy
    ],
)
def test_in_place_changes_of_cast_copies_are_fine(body):
    source = HEAD + f"def scaled_attention(q, k, v, key_valid=None, causal=False):\n    {body}\n    return q, k\n"
    assert "no_inplace" not in q5(source)


def test_an_instance_that_calls_itself_forever_is_too_complex_not_a_crash():
    source = (
        Q5_HEAD
        + """
class A:
    def __init__(self):
        self.forward = self

def scaled_attention(q, k, v, key_valid=None, causal=False):
    return A()(q), q
"""
    )
    found = findings_for(source, "scaled_attention", ATTENTION_ARGS)
    assert isinstance(found, str) and "too complex" in found
