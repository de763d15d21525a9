"""An in-process StudentProxy for TRUSTED instructor files (solutions, mutants): no sandbox, for tests and benches.

It mimics the jailed child (graders/sandbox/child.py): arguments and results are copied (so in-place changes
never reach the caller), exceptions cross as StudentError(type name, message), ``call``/``time`` reach the
submission module's names only, ``time`` sends noisy copies per run, ``time_reference`` and ``timing_session`` run
instructor source as a module of its own, ``define`` runs in a separate helpers namespace that holds the module as
``submission``, Ref(name) resolves helper names, and a TrustedFunction becomes a callable that copies its arguments
and results and raises what the child's proxy would (ArgumentRejected as its type, anything else as one fixed
RuntimeError). Never use it for student uploads: the code runs in this process. For the same reason, never load a
mutant that patches torch or builtins here (inplace_forges_torch_equal, timing_slows_reference): it would patch the
trusted side too; those are graded through the sandbox only.
"""

from __future__ import annotations

import contextlib
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from graders.code.checks import (
    ArgumentRejected,
    CheckFailed,
    CheckSpec,
    Ref,
    StudentError,
    TimedCall,
    Timing,
    TrustedFunction,
    load_checks,
)
from graders.code.proxy import CALLBACK_FAILED
from graders.results import CheckResult, GradeResult, verdict_from_checks

if TYPE_CHECKING:
    from graders.model import CodeProblem


class DirectProxy:
    """Runs a trusted source file's functions in this process, through the StudentProxy protocol."""

    device = "cpu"

    def __init__(self, source: str, filename: str = "<submission>") -> None:
        self.source = source
        self.module = types.ModuleType("submission")
        self.helpers: dict[str, Any] = {"__name__": "autograder_helpers", "submission": self.module}
        previous = sys.modules.get("submission")
        sys.modules["submission"] = self.module  # as in the child, while the module body runs
        try:
            exec(compile(source, filename, "exec"), self.module.__dict__)  # trusted instructor file only
        finally:
            if previous is None:
                sys.modules.pop("submission", None)
            else:
                sys.modules["submission"] = previous

    def _function(self, name: str) -> Callable[..., Any]:
        fn = getattr(self.module, name, None)
        if not callable(fn):
            raise StudentError("MissingFunction", f"the submission defines no function named {name!r}")
        return fn

    def _copy_in(self, value: Any) -> Any:
        if isinstance(value, Ref):
            return self.helpers[value.name]
        if isinstance(value, TrustedFunction):
            return self._trusted(value.fn)
        if isinstance(value, torch.Tensor):
            return value.detach().clone()
        if isinstance(value, (list, tuple)):
            return type(value)(self._copy_in(v) for v in value)
        if isinstance(value, dict):
            return {k: self._copy_in(v) for k, v in value.items()}
        return value

    def _trusted(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return self._copy_out(fn(*self._copy_out(args), **self._copy_out(kwargs)))
            except ArgumentRejected as err:
                raise (TypeError if err.type_name == "TypeError" else ValueError)(err.message) from None
            except Exception:
                raise RuntimeError(CALLBACK_FAILED) from None

        return call

    def _copy_out(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value.detach().clone()
        if isinstance(value, (list, tuple)):
            return type(value)(self._copy_out(v) for v in value)
        if isinstance(value, dict):
            return {k: self._copy_out(v) for k, v in value.items()}
        return value

    def _run(self, func: Callable[[], Any]) -> Any:
        try:
            return func()
        except Exception as err:
            raise StudentError(type(err).__name__, str(err)) from err

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        fn = self._function(name)
        args, kwargs = self._copy_in(args), self._copy_in(kwargs)
        return self._copy_out(self._run(lambda: fn(*args, **kwargs)))

    def define(self, source: str) -> None:
        exec(compile(source, "<define>", "exec"), self.helpers)

    def call_with_grad(
        self, name: str, args: list[Any], kwargs: dict[str, Any], grad_outputs: list[Any], wrt: list[int]
    ) -> tuple[Any, list[Any]]:
        fn = self._function(name)
        args, kwargs = list(self._copy_in(args)), self._copy_in(kwargs)
        for i in wrt:
            args[i] = args[i].requires_grad_(True)

        def run() -> tuple[Any, list[Any]]:
            outputs = fn(*args, **kwargs)
            flat = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
            pairs = [
                (o, g)
                for o, g in zip(flat, grad_outputs, strict=False)
                if g is not None and isinstance(o, torch.Tensor) and o.requires_grad
            ]
            leaves = [args[i] for i in wrt]
            grads: list[Any] = [None] * len(wrt)
            if pairs:
                found = torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True)
                grads = list(found)
            return outputs, grads

        outputs, grads = self._run(run)
        return self._copy_out(outputs), [self._copy_out(g) for g in grads]

    def time(
        self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None, *, warmup: int = 2, repeat: int = 5
    ) -> Timing:
        return _time_runs(self._function(name), args, kwargs or {}, warmup, repeat, self._run)

    def time_reference(
        self,
        source: str,
        name: str,
        args: list[Any],
        kwargs: dict[str, Any] | None = None,
        *,
        warmup: int = 2,
        repeat: int = 5,
    ) -> Timing:
        """Like the sandbox: ``source`` becomes a module of its own that never saw the submission."""
        fn = _reference_function(source, name)
        return _time_runs(fn, args, kwargs or {}, warmup, repeat, lambda run: run())

    @contextlib.contextmanager
    def timing_session(self, source: str, name: str) -> Iterator[DirectTimingSession]:
        """Like the sandbox: the reference is a module of its own; arguments are passed as given (no noise)."""
        yield DirectTimingSession(self, _reference_function(source, name))


def _reference_function(source: str, name: str) -> Callable[..., Any]:
    """``name`` from ``source`` run as a module of its own (trusted instructor source, as the sandbox loads it)."""
    module = types.ModuleType("reference")
    exec(compile(source, "<reference>", "exec"), module.__dict__)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise AssertionError(f"the reference source defines no function named {name!r}")
    return fn


class DirectTimingSession:
    """The TimingSession of DirectProxy: each call timed around the call itself, on copies of the arguments."""

    def __init__(self, proxy: DirectProxy, reference: Callable[..., Any]) -> None:
        self.proxy, self.reference_fn = proxy, reference

    def student(self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None) -> TimedCall:
        fn = self.proxy._function(name)
        a, k = self.proxy._copy_in(list(args)), self.proxy._copy_in(dict(kwargs or {}))
        start, wall = time.process_time(), time.perf_counter()  # the work, as the sandbox's session times it
        value = self.proxy._run(lambda: fn(*a, **k))
        elapsed, wall = time.process_time() - start, time.perf_counter() - wall
        out = self.proxy._copy_out(value)
        return TimedCall(elapsed, lambda: out, wall)

    def reference(self, args: list[Any], kwargs: dict[str, Any] | None = None) -> float:
        a, k = self.proxy._copy_in(list(args)), self.proxy._copy_in(dict(kwargs or {}))
        start = time.process_time()
        self.reference_fn(*a, **k)
        return time.process_time() - start


def fresh_inputs(value: Any) -> Any:
    """Copies with tiny fresh noise on floating-point tensors, as the sandbox proxy sends each timed run."""
    if isinstance(value, torch.Tensor):
        copy = value.detach().clone()
        if copy.is_floating_point():
            copy = copy * (1 + 1e-7 * torch.randn(copy.shape, dtype=copy.dtype))
        return copy
    if isinstance(value, (list, tuple)):
        return type(value)(fresh_inputs(v) for v in value)
    if isinstance(value, dict):
        return {k: fresh_inputs(v) for k, v in value.items()}
    return value


def _time_runs(
    fn: Callable[..., Any],
    args: list[Any],
    kwargs: dict[str, Any],
    warmup: int,
    repeat: int,
    run: Callable[[Callable[[], Any]], Any],
) -> Timing:
    """``warmup`` then ``repeat`` calls, each on freshly sent (noisy) copies of the arguments, timed around the call."""
    times = []
    for i in range(warmup + repeat):
        a, k = fresh_inputs(list(args)), fresh_inputs(kwargs)
        start = time.perf_counter()
        run(lambda a=a, k=k: fn(*a, **k))
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return Timing(times)


def run_check(spec: CheckSpec, proxy: DirectProxy) -> CheckResult:
    """Run one check the way a grader does: pass = full points, CheckFailed = its fraction, else 0."""
    start = time.perf_counter()
    score, passed = 0.0, False
    try:
        feedback = spec.func(proxy) or "passed"
        score, passed = spec.points, True
    except CheckFailed as err:
        feedback, score = err.feedback, spec.points * err.score_fraction
    except AssertionError as err:
        feedback = str(err) or "assertion failed"
    except StudentError as err:
        feedback = f"your code raised {err.type_name}: {err.message}"
    except Exception:
        feedback = "internal error in the check:\n" + traceback.format_exc(limit=3)
    duration_ms = (time.perf_counter() - start) * 1e3
    return CheckResult(
        spec.name, spec.category, passed, round(score, 6), spec.points, feedback, spec.visibility, duration_ms
    )


class DirectGrader:
    """Grades trusted files in-process (same interface as CodeGrader) for tests before/without a sandbox.

    Only for the shipped sets in tests: it imports the checks here, which the service never does.
    """

    def checks(self, root: Path, relative: str) -> list[CheckSpec]:
        return load_checks(root / relative)

    def grade(self, *, source: str, problem: CodeProblem, checks: list[CheckSpec]) -> GradeResult:
        proxy = DirectProxy(source)
        results = [run_check(spec, proxy) for spec in checks]
        return GradeResult(verdict_from_checks(results), results)


def load_direct(path: Path) -> DirectProxy:
    return DirectProxy(path.read_text(encoding="utf-8"), str(path))
