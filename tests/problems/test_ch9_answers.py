"""Acceptance tests for problems/ch9: realistic student answers, right and wrong, graded by the real graders."""

from __future__ import annotations

import pytest

from graders.answers import grade_part
from tests.problems.conftest import Case, check_set_files, failing_yaml_examples, part_spec, uncovered_auto_parts

SET_ID = "ch9"

# (problem, part, student answer, expected correct)
CASES: list[Case] = [
    # q1 b1: the scale factor sqrt(d_k), in the forms students type
    ("q1", "b1", "sqrt(d_k)", True),
    ("q1", "b1", "\\sqrt{d_k}", True),
    ("q1", "b1", "$\\sqrt{d_k}$", True),
    ("q1", "b1", "\\sqrt{d_{k}}", True),
    ("q1", "b1", "d_k**0.5", True),
    ("q1", "b1", "d_k^(1/2)", True),
    ("q1", "b1", "sqrt（d_k）", True),
    ("q1", "b1", "√d_k", True),
    ("q1", "b1", "√(d_k)", True),
    ("q1", "b1", "d_k", False),
    ("q1", "b1", "d_k/2", False),
    ("q1", "b1", "1/sqrt(d_k)", False),
    ("q1", "b1", "sqrt(d_k)^2", False),
    # q1 b2: V, case-sensitive
    ("q1", "b2", "V", True),
    ("q1", "b2", " V ", True),
    ("q1", "b2", "Ｖ", True),
    ("q1", "b2", "v", False),
    ("q1", "b2", "K", False),
    ("q1", "b2", "Q", False),
    ("q1", "b2", "K^T", False),
    ("q1", "b2", "\\mathbf{V}", True),
    ("q1", "b2", "$V$", True),
    ("q1", "b2", "\\boldsymbol{V}", True),
    ("q1", "b2", "V矩阵", True),
    ("q1", "b2", "$\\mathbf{K}$", False),
    ("q1", "b2", "v矩阵", False),
    # q1 b3: what the query stands for
    ("q1", "b3", "查找的信息", True),
    ("q1", "b3", "想找什么", True),
    ("q1", "b3", "想要查找的信息", True),
    ("q1", "b3", "要检索的内容", True),
    ("q1", "b3", "查找的信息。", True),
    ("q1", "b3", "What to look for", True),
    ("q1", "b3", "查找的信息（what to look for）", True),
    ("q1", "b3", "匹配", False),
    ("q1", "b3", "内容", False),
    ("q1", "b3", "被查找的信息", False),
    ("q1", "b3", "key", False),
    # q1 b4: what the key does with the query
    ("q1", "b4", "匹配", True),
    ("q1", "b4", "相似度计算", True),
    ("q1", "b4", "计算相似度", True),
    ("q1", "b4", "Matching", True),
    ("q1", "b4", "点积", True),
    ("q1", "b4", "比较。", True),
    ("q1", "b4", "匹配（matching）", True),
    ("q1", "b4", "查找", False),
    ("q1", "b4", "加权求和", False),
    ("q1", "b4", "softmax", False),
    ("q1", "b4", "内容", False),
    # q1 b5: what the value carries
    ("q1", "b5", "内容", True),
    ("q1", "b5", "信息", True),
    ("q1", "b5", "Value", True),
    ("q1", "b5", "值", True),
    ("q1", "b5", "被取回的内容", True),
    ("q1", "b5", "被加权取回的信息", True),
    ("q1", "b5", "值向量", True),
    ("q1", "b5", "权重", False),
    ("q1", "b5", "注意力权重", False),
    ("q1", "b5", "相似度", False),
    ("q1", "b5", "query", False),
    # q2: B
    ("q2", "b1", "B", True),
    ("q2", "b1", "b", True),
    ("q2", "b1", "Ｂ", True),
    ("q2", "b1", "（B）", True),
    ("q2", "b1", "B.", True),
    ("q2", "b1", "A", False),
    ("q2", "b1", "D", False),
    ("q2", "b1", "BC", False),
    # q3 b1: order
    ("q3", "b1", "顺序", True),
    ("q3", "b1", "顺序信息", True),
    ("q3", "b1", "位置信息", True),
    ("q3", "b1", "先后顺序", True),
    ("q3", "b1", "Order", True),
    ("q3", "b1", "position", True),
    ("q3", "b1", "顺序(order)", True),
    ("q3", "b1", "语义", False),
    ("q3", "b1", "上下文", False),
    ("q3", "b1", "semantic", False),
    # q3 b2: positional encoding
    ("q3", "b2", "positional encoding", True),
    ("q3", "b2", "Positional Encoding", True),
    ("q3", "b2", "位置编码", True),
    ("q3", "b2", "位置 编码", True),
    ("q3", "b2", "位置嵌入", True),
    ("q3", "b2", "position embedding", True),
    ("q3", "b2", "正余弦位置编码", True),
    ("q3", "b2", "可学习的位置嵌入向量", True),
    ("q3", "b2", "ＰＥ", True),
    ("q3", "b2", "位置", False),
    ("q3", "b2", "词嵌入", False),
    ("q3", "b2", "token embedding", False),
    ("q3", "b2", "segment embedding", False),
    ("q3", "b2", "位置編碼", True),
    ("q3", "b2", "learnable position embeddings", True),
    ("q3", "b2", "不需要位置编码", False),
    ("q3", "b2", "位置编码器", False),
    # q3 b3: causal mask; a bare "mask" does not say which mask (padding masks do not hide the future)
    ("q3", "b3", "causal mask", True),
    ("q3", "b3", "Causal Mask", True),
    ("q3", "b3", "因果掩码", True),
    ("q3", "b3", "因果 mask", True),
    ("q3", "b3", "look-ahead mask", True),
    ("q3", "b3", "lookahead mask", True),
    ("q3", "b3", "上三角掩码", True),
    ("q3", "b3", "未来掩码。", True),
    ("q3", "b3", "因果掩码（causal mask）", True),
    ("q3", "b3", "mask", False),
    ("q3", "b3", "掩码", False),
    ("q3", "b3", "padding mask", False),
    ("q3", "b3", "填充掩码", False),
    ("q3", "b3", "attention mask", False),
    ("q3", "b3", "因果掩碼", True),
    ("q3", "b3", "非因果掩码", False),
    ("q3", "b3", "不是因果掩码", False),
    # q3 b4: decoder
    ("q3", "b4", "decoder", True),
    ("q3", "b4", "Decoder", True),
    ("q3", "b4", "解码器", True),
    ("q3", "b4", "Decoder 的当前表示", True),
    ("q3", "b4", "encoder", False),
    ("q3", "b4", "编码器", False),
    ("q3", "b4", "encoder-decoder", False),
    ("q3", "b4", "解碼器", True),
    ("q3", "b4", "来自解码器", True),
    ("q3", "b4", "decoder 和 encoder", False),
    # q3 b5: encoder
    ("q3", "b5", "encoder", True),
    ("q3", "b5", "编码器", True),
    ("q3", "b5", "编码器的输出", True),
    ("q3", "b5", "Encoder output", True),
    ("q3", "b5", "decoder", False),
    ("q3", "b5", "解码器", False),
    ("q3", "b5", "位置编码", False),
    ("q3", "b5", "encoder-decoder", False),
    ("q3", "b5", "encoder 的 query", False),
    ("q3", "b5", "编码器的查询", False),
    ("q3", "b5", "編碼器的輸出", True),
    # q4: C
    ("q4", "b1", "C", True),
    ("q4", "b1", "c", True),
    ("q4", "b1", "（C）", True),
    ("q4", "b1", "Ｃ", True),
    ("q4", "b1", "A", False),
    ("q4", "b1", "B", False),
    ("q4", "b1", "AC", False),
    # q5 b1-b3: Python names (case matters: Python is case-sensitive)
    ("q5", "b1", "AutoTokenizer", True),
    ("q5", "b1", " AutoTokenizer ", True),
    ("q5", "b1", "ＡｕｔｏＴｏｋｅｎｉｚｅｒ", True),
    ("q5", "b1", "autotokenizer", False),
    ("q5", "b1", "GPT2Tokenizer", False),
    ("q5", "b1", "AutoModelForCausalLM", False),
    ("q5", "b2", "AutoModelForCausalLM", True),
    ("q5", "b2", "AutoModel", False),
    ("q5", "b2", "AutoModelForSeq2SeqLM", False),
    ("q5", "b2", "AutoModelForCausalLm", False),
    ("q5", "b3", "generate", True),
    ("q5", "b3", "generate()", True),
    ("q5", "b3", "model.generate", True),
    ("q5", "b3", "generate（）", True),
    ("q5", "b3", "forward", False),
    ("q5", "b3", "predict", False),
    ("q5", "b3", "model.forward", False),
    # q5 b4: KV cache
    ("q5", "b4", "KV cache", True),
    ("q5", "b4", "KV缓存", True),
    ("q5", "b4", "kv-cache", True),
    ("q5", "b4", "key-value cache", True),
    ("q5", "b4", "键值缓存", True),
    ("q5", "b4", "past_key_values", True),
    ("q5", "b4", "KV Cache 机制", True),
    ("q5", "b4", "缓存过去的 key 和 value", True),
    ("q5", "b4", "K/V 缓存", True),
    ("q5", "b4", "缓存", False),
    ("q5", "b4", "cache", False),
    ("q5", "b4", "注意力机制", False),
    ("q5", "b4", "query 缓存", False),
    ("q5", "b4", "beam search", False),
    ("q5", "b4", "QKV cache", False),
    ("q5", "b4", "Q/K/V 缓存", False),
    ("q5", "b4", "缓存 query、key 和 value", False),
]


@pytest.mark.parametrize(("problem", "part", "answer", "expected"), CASES)
def test_answer(load_set, problem, part, answer, expected):
    result = grade_part(answer, part_spec(load_set(SET_ID), problem, part))
    assert result.correct is expected, f"{problem}.{part} {answer!r}: {result.feedback}"
    assert result.score == (1.0 if expected else 0.0)


def test_set_validates_and_files_exist(load_set):
    problem_set = load_set(SET_ID)
    assert [p.id for p in problem_set.problems] == ["q1", "q2", "q3", "q4", "q5"]
    assert problem_set.language == "zh"
    assert problem_set.show_explanations == "after_grading"
    assert all(p.explanation for p in problem_set.problems)
    check_set_files(SET_ID, problem_set)


def test_every_auto_part_has_right_and_wrong_cases(load_set):
    assert not uncovered_auto_parts(load_set(SET_ID), CASES)


def test_yaml_examples_hold(load_set):
    assert not failing_yaml_examples(load_set(SET_ID))
