import torch

from checklibs.attention.compare import compare, mismatch, nonfinite_problem


def test_mismatch_reports_worst_index_errors_and_dtype():
    expected = torch.zeros(2, 3, dtype=torch.float64)
    expected[1, 2] = 2.0
    actual = expected.clone().float()
    actual[1, 2] = 2.5
    found = mismatch(actual, expected, rtol=1e-7, atol=1e-9, what="weights")
    assert found is not None
    assert found.index == (1, 2)
    assert found.dtype == "float32"
    assert abs(found.max_abs - 0.5) < 1e-12 and abs(found.max_rel - 0.25) < 1e-12
    text = found.describe(visible=True)
    assert "max abs error 0.5" in text and "(1, 2)" in text and "float32" in text
    hidden = found.describe()  # hidden checks: orders of magnitude, no index (the student's output decides them)
    assert "of order 1e-01" in hidden and "(1, 2)" not in hidden and "float32" in hidden


def test_relative_error_ignores_expected_zeros():
    expected = torch.tensor([0.0, 1.0], dtype=torch.float64)
    found = mismatch(torch.tensor([1e-3, 1.0], dtype=torch.float64), expected, rtol=1e-7, atol=1e-9, what="w")
    assert found is not None and found.max_rel == 0.0


def test_close_tensors_give_no_report():
    x = torch.randn(3, 4, dtype=torch.float64)
    assert compare(x + 1e-12, x, rtol=1e-7, atol=1e-9, what="x") is None


def test_shape_type_and_nan_problems_are_named():
    x = torch.ones(2, 2, dtype=torch.float64)
    assert "shape (2,)" in (compare(torch.ones(2), x, rtol=0, atol=0, what="out", visible=True) or "")
    assert "the wrong shape, expected (2, 2)" in (compare(torch.ones(2), x, rtol=0, atol=0, what="out") or "")
    assert "should be a tensor" in (compare([1.0], x, rtol=0, atol=0, what="out") or "")
    nan = x.clone()
    nan[0, 1] = float("nan")
    shown = nonfinite_problem(nan, "out", visible=True) or ""
    assert "NaN" in shown and "(0, 1)" in shown
    assert nonfinite_problem(nan, "out") == "out contains NaN"


def test_a_complex_result_is_refused_not_compared_by_its_real_part():
    expected = torch.ones(2, 2, dtype=torch.float64)
    problem = compare(torch.ones(2, 2, dtype=torch.complex128) + 5j, expected, rtol=1e-7, atol=1e-9, what="weights")
    assert problem == "weights is complex (complex128); a real floating-point tensor is expected"
