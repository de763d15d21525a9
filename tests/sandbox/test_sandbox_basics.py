from graders.results import Verdict
from tests.sandbox import support


def test_good_solution_gets_full_marks(grader):
    result = grader.grade(source=support.GOOD_SOURCE, problem=support.problem(), checks=support.checks(grader))
    assert result.verdict == Verdict.ACCEPTED, result.to_dict()
    assert result.score == result.max_score == support.FULL_MARKS
