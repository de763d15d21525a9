"""The prompts' rules on HOW to compute, checked on the submission's source (category "method").

Every rule a prompt of q5-q7 states about how the result is computed, and the check that grades it. Rules marked
"source" are judged here, from the syntax tree of ``student.source`` (source_rules: parsed with ``ast.parse`` on the
trusted side, never executed); the others are judged by what the function computes.

q5 ``scaled_attention`` (prompts/q5.md)

==========================================================  ===================================================
rule                                                        graded by
==========================================================  ===================================================
softmax of q·k/√D over the key axis, output = weights @ v    reference_example, softmax_axis, gradient
key_valid (True = may attend) and causal, intersected        masking (causal j <= i also with Tq != Tk: the
                                                             triangle starts top-left; gradient and empty_row
                                                             have such a case too)
masked weights exactly 0                                     masking
no allowed key → ValueError, not NaN                         empty_row
bad shapes → ValueError                                      validation
stable for scores ~1e4                                       stability (one head; then B = H = 2 with the heads'
                                                             maxima ~1e4 apart and key_valid masking each row's
                                                             largest score; float32 within a few float32
                                                             spacings of the largest score)
float64 gradients; no .detach / NumPy / lower precision      gradient (the effect is what matters: a harmless
                                                             ``.detach()`` of the row max is not penalised)
keep the inputs' dtype and device                            keeps_dtype_device (and gradient for float64)
do not modify the input tensors in place                     source: ``no_inplace``, through views and casts
                                                             that may return the input (``key_valid.bool()``);
                                                             gradient sees it too, but only when the inputs
                                                             require grad (never for the bool mask)
deterministic: no dropout or other random operations         determinism + source: ``no_random``
deterministic: no state kept between calls                   determinism + source: ``no_state``
batch computation with matrix products                       source: ``matrix_products``
no element-wise Python loops                                 timing + source: ``no_elementwise_loops`` (loops
                                                             over batch and heads are fine, loops over query or
                                                             key positions or features are element-wise)
==========================================================  ===================================================

q6 ``attention_loop`` / ``attention_batched`` (prompts/q6.md)

==========================================================  ===================================================
both: softmax(q·k/√D) over keys, float64 gradients, stable   loop/batched_matches_reference, *_gradient,
                                                             *_stability
both agree (assert_close)                                    loop_vs_batched
loop: explicit loop over query positions, scores of query    source: ``loop_per_query`` (a product of q indexed
i against all keys inside it                                 at its query axis by the loop variable, with k)
loop: weighted sum of the values inside the loop             source: ``loop_weighted_sum``
loop: stable softmax (subtract the max first)                loop_stability (its effect; the formula is free)
loop: no torch.softmax                                       source: ``no_library_softmax`` (torch.softmax,
                                                             F.softmax, .softmax, nn.Softmax, log_softmax,
                                                             softmin, scaled_dot_product_attention, ...)
loop: no whole score matrix outside the loop                 source: ``no_full_scores`` (no product of all of q
                                                             with k anywhere in the loop version)
batched: all scores and outputs at once by matrix products   source: ``batched_no_loops``,
                                                             ``batched_matrix_products``; batched_faster
batched: clearly faster than the loop at T = 256             batched_faster
==========================================================  ===================================================

q7 ``test_permutation_equivariance(layer)`` (prompts/q7.md)

==========================================================  ===================================================
returns on equivariant layers, AssertionError on the others  layer_0 ... layer_5 (each behind the basic probe:
                                                             both basic layers judged right)
random x built by the test                                   source: ``random_inputs`` (a layer call gets x
                                                             derived from torch.randn / rand / ...)
random permutation of the token axis                         source: ``random_permutation`` (a layer call gets
                                                             x permuted by randperm / shuffle / argsort(rand))
the mask permuted the same way                               layer checks (the prefix-mask and masked layers)
key_valid with some False entries                            layer checks (the prefix-mask layer)
every sample keeps one valid position                        not checked: the layers tolerate an all-False row
                                                             and the test's values exist only in the jail
reasonable floating-point tolerance                          layer checks (exact comparison fails equivariant
                                                             layers)
==========================================================  ===================================================

Limits (see source_rules): code that exists only at run time (exec/eval of strings, getattr with a computed name,
importlib, sys.modules) is invisible; classes of the file, nn.Module.forward, functools.partial and torch.vmap are
followed (source_rules), so a matrix product written there counts; the prompts do not forbid such code, so it is not
penalised, and the behavioural checks still judge its results. The source checks are gated like the other
secondary checks (basic.gate): rules about how a result is computed are worth nothing without the result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from checklibs.attention.basic import Probe, gate, no_probe
from checklibs.attention.source_rules import (
    LAYER,
    MASK,
    PERM,
    RANDOM,
    RANDOM_NAMES,
    Findings,
    LoopInfo,
    SourceUnreadable,
    Val,
    analyse,
    last_name,
    tensor_arg,
)
from checklibs.attention.tally import Tally
from graders.code.check_api import CheckFailed, CheckFunc, CheckUsageError, StudentProxy, check

Judge = Callable[[Findings, str], "str | None"]


@dataclass(frozen=True)
class Rule:
    """One rule of a prompt: its key, the rule in words, and how findings are judged (None = followed)."""

    key: str
    text: str
    judge: Judge


def _lines(lines: Sequence[int], limit: int = 5) -> str:
    shown = sorted(set(lines))
    text = ", ".join(str(n) for n in shown[:limit])
    more = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return f"line{'s' if len(shown) > 1 else ''} {text}{more}"


# --------------------------------------------------------------------------------------------------- judgements
ELEMENTWISE_ROLES = frozenset({"query", "key", "feature", "position"})


def _no_elementwise_loops(found: Findings, entry: str) -> str | None:
    bad = [
        (info.line, sorted(info.roles & ELEMENTWISE_ROLES)) for info in _loops(found) if info.roles & ELEMENTWISE_ROLES
    ]
    if not bad:
        return None
    what = ", ".join(f"line {line} (over {_axes(roles)})" for line, roles in bad[:5])
    return (
        f"{entry} loops in Python element by element: {what}; compute all queries and keys at once with matrix "
        "products (loops over the batch or the heads are fine)"
    )


AXIS_WORDS = {
    "batch": "the batch",
    "head": "the heads",
    "query": "query positions",
    "key": "key positions",
    "feature": "feature dimensions",
    "position": "sequence positions",
}


def _axes(roles: Sequence[str]) -> str:
    chosen = [r for r in roles if not (r == "position" and ({"query", "key"} & set(roles)))]
    return " / ".join(AXIS_WORDS.get(r, r) for r in chosen)


def _loops(found: Findings) -> list[LoopInfo]:
    return sorted(found.loops.values(), key=lambda info: info.line)


def _matrix_products(found: Findings, entry: str) -> str | None:
    scores = any(p.matmul and p.scores for p in found.products)
    values = any(p.matmul and p.values for p in found.products)
    if scores and values:
        return None
    missing = " and ".join(
        what for what, ok in (("the scores q·kᵀ", scores), ("the output weights·v", values)) if not ok
    )
    return (
        f"{entry} computes {missing} without a matrix product: use @ / torch.matmul (or einsum, bmm) on whole "
        "tensors instead of broadcasting element-wise products and sums"
    )


def _no_inplace(found: Findings, entry: str) -> str | None:
    if not found.inplace:
        return None
    first = sorted(found.inplace, key=lambda item: item[1])
    names = sorted({name for inputs, _, _ in first for name in inputs})
    how = "; ".join(f"line {line}: {text}" for _, line, text in first[:3])
    return (
        f"{entry} changes its input {', '.join(names)} in place ({how}): the caller's tensors must not change; "
        "write q = q / s instead of q /= s, and masked_fill instead of masked_fill_ on an input"
    )


def _is_random(name: str) -> bool:
    if name in ("random", "numpy.random", "torch.random", "np.random", ".random"):
        return False  # the module itself, not a random operation
    return last_name(name) in RANDOM_NAMES


def _no_random(found: Findings, entry: str) -> str | None:
    hits = found.refs_matching(_is_random)
    if not hits:
        return None
    names = ", ".join(f"{name.lstrip('.')} (line {line})" for name, line in hits[:4])
    return f"{entry} uses random operations: {names}; the result must be deterministic (no dropout, no sampling)"


def _no_state(found: Findings, entry: str) -> str | None:
    if not found.state:
        return None
    items = sorted(found.state, key=lambda item: item[1])
    how = "; ".join(f"line {line}: {text}" for text, line in items[:3])
    return f"{entry} keeps state between calls ({how}): each call must compute its result from its inputs alone"


def _loop_per_query(found: Findings, entry: str) -> str | None:
    if any(p.row_scores and p.loops for p in found.products):
        return None
    loops = [info.line for info in _loops(found)]
    where = f"loops at {_lines(loops)}, but " if loops else "no loop was found, and "
    return (
        f"{entry} must loop over the query positions explicitly and compute each query's scores against all keys "
        f"inside the loop (a product of q[..., i, :] with k); {where}no such product inside a loop was found"
    )


def _loop_weighted_sum(found: Findings, entry: str) -> str | None:
    if any(p.row_values and p.loops for p in found.products):
        return None
    return (
        f"{entry} must form each query's weighted sum of the value vectors inside the loop (its weights times v); "
        "no such product inside the loop was found"
    )


SOFTMAX_LIKE = ("softmax", "softmin", "scaled_dot_product_attention", "multiheadattention", "multi_head_attention")


def _is_softmax(name: str) -> bool:
    last = last_name(name).lower()
    return any(word in last for word in SOFTMAX_LIKE)


def _no_library_softmax(found: Findings, entry: str) -> str | None:
    hits = found.refs_matching(_is_softmax)
    if not hits:
        return None
    names = ", ".join(f"{name.lstrip('.')} (line {line})" for name, line in hits[:4])
    return (
        f"{entry} uses a library softmax: {names}; write the stable softmax yourself inside the loop (subtract the "
        "row maximum, exp, divide by the sum)"
    )


def _no_full_scores(found: Findings, entry: str) -> str | None:
    full = [p.line for p in found.products if p.full_scores]
    if not full:
        return None
    return (
        f"{entry} computes the whole score matrix of all queries at once ({_lines(full)}): compute one query's "
        "scores per iteration of the loop instead"
    )


def _batched_no_loops(found: Findings, entry: str) -> str | None:
    bad = [(info.line, sorted(info.roles)) for info in _loops(found) if info.roles]
    if not bad:
        return None
    what = ", ".join(f"line {line} (over {_axes(roles)})" for line, roles in bad[:5])
    return f"{entry} still loops in Python: {what}; compute all scores and outputs at once with matrix products"


def _batched_matrix_products(found: Findings, entry: str) -> str | None:
    scores = any(p.matmul and p.full_scores for p in found.products)
    values = any(p.matmul and p.values and not p.loops for p in found.products)
    if scores and values:
        return None
    missing = " and ".join(
        what for what, ok in (("all scores q·kᵀ", scores), ("all outputs weights·v", values)) if not ok
    )
    return f"{entry} does not compute {missing} with one matrix product (@ / torch.matmul / einsum)"


def _layer_args(found: Findings, mark: str) -> bool:
    return any(args and mark in args[0].src for args, _ in found.layer_calls)


def _random_permutation(found: Findings, entry: str) -> str | None:
    if _layer_args(found, PERM):
        return None
    return (
        f"{entry} must permute the token axis with a random permutation (e.g. perm = torch.randperm(T), then "
        "x[:, perm]): no call of layer received x permuted by a random permutation; a fixed one (reversal, roll) "
        "tests only one reordering"
    )


def _random_inputs(found: Findings, entry: str) -> str | None:
    if _layer_args(found, RANDOM):
        return None
    return f"{entry} must build a random input x itself (e.g. torch.randn(B, T, D)) and pass it to layer"


def _rule(key: str, text: str, judge: Judge) -> Rule:
    return Rule(key, text, judge)


Q5_RULES = (
    _rule("no_elementwise_loops", "no element-wise Python loops (不要在 Python 里逐元素循环)", _no_elementwise_loops),
    _rule("matrix_products", "batch computation with matrix products (用矩阵乘法批量计算)", _matrix_products),
    _rule("no_inplace", "the input tensors are not modified in place (不得原地修改输入张量)", _no_inplace),
    _rule("no_random", "no dropout or other random operations (不要使用 dropout 等随机操作)", _no_random),
    _rule("no_state", "no state kept between calls (不要在两次调用之间保存状态)", _no_state),
)
LOOP_RULES = (
    _rule("loop_per_query", "an explicit loop over the query positions (对每个查询位置 i 显式循环)", _loop_per_query),
    _rule(
        "loop_weighted_sum", "the weighted sum of the values inside the loop (再对值向量加权求和)", _loop_weighted_sum
    ),
    _rule("no_library_softmax", "no torch.softmax (不要调用 torch.softmax)", _no_library_softmax),
    _rule("no_full_scores", "no whole score matrix (不要在循环外一次性计算整个得分矩阵)", _no_full_scores),
)
BATCHED_RULES = (
    _rule("batched_no_loops", "no Python loop: everything at once (一次算出全部得分和输出)", _batched_no_loops),
    _rule("batched_matrix_products", "matrix products for scores and outputs (用矩阵乘法)", _batched_matrix_products),
)
Q7_RULES = (
    _rule("random_permutation", "a random permutation of the token axis (随机置换词元轴)", _random_permutation),
    _rule("random_inputs", "a random input x (随机的 x)", _random_inputs),
)

ATTENTION_ARGS = (tensor_arg("q"), tensor_arg("k"), tensor_arg("v"), tensor_arg(MASK, 2))
LAYER_ARGS = (Val(src=frozenset({LAYER})),)


def findings_for(source: str | None, entry: str, args: Sequence[Val]) -> Findings | str:
    """The findings of ``entry`` in ``source``, or why the source cannot be read (CheckUsageError without it)."""
    if source is None:
        raise CheckUsageError("this check reads the submission's source, which the proxy does not provide")
    try:
        found = analyse(source, entry, list(args))
    except SourceUnreadable as exc:
        return f"the grader could not read your source: {exc}"
    if not found.entry_found:
        return f"no top-level `def {entry}(...)` was found in your file; these rules are checked on its source"
    if found.incomplete:
        return f"{entry} and the functions it calls are too complex for the grader to check these rules"
    return found


def judge_rule(rule: Rule, found: Findings | str, entry: str) -> None:
    if isinstance(found, str):
        raise CheckFailed(found)
    problem = rule.judge(found, entry)
    if problem:
        raise CheckFailed(problem)


def source_rules_check(
    *,
    points: float,
    entry: str,
    rules: Sequence[Rule],
    args: Sequence[Val] = ATTENTION_ARGS,
    name: str = "method",
    visibility: str = "hidden",
    probe: Probe = no_probe,
) -> CheckFunc:
    """Build a check of ``rules`` on the source of ``entry`` (each rule an equal share of the points).

    ``args`` are the analysis values of the entry's parameters (``ATTENTION_ARGS``: q, k, v, key_valid). ``probe``
    gates the points (basic.attention_probe): a function that computes nothing follows every rule on how to
    compute.
    """

    @check(points=points, category="method", visibility=visibility, name=name)
    def method(student: StudentProxy) -> str | None:
        """The prompt's rules on how to compute, checked on the source."""

        def body() -> str:
            found = findings_for(student.source, entry, args)
            tally = Tally(f"the prompt's rules for {entry}")
            for rule in rules:
                tally.run(rule.text, partial(judge_rule, rule, found, entry))
            return tally.finish()

        return gate(student, probe, body)

    return method
