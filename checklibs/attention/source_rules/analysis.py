"""The whole walk: ``Analysis`` puts its parts together; ``analyse`` runs it on one entry function."""

from __future__ import annotations

from checklibs.attention.source_rules.calls import Calls
from checklibs.attention.source_rules.expressions import Expressions
from checklibs.attention.source_rules.statements import Statements
from checklibs.attention.source_rules.values import Findings, SourceUnreadable, Val


class Analysis(Statements, Expressions, Calls):
    """The parsed module; ``run(entry, args)`` walks one entry function with the given argument values."""


def tensor_arg(name: str, ndim: int = 4) -> Val:
    """The value of an input tensor argument: its own label, its own layout, its own storage."""
    return Val(src=frozenset({name}), alias=frozenset({name}), layout=tuple((name, i) for i in range(ndim)))


def analyse(source: str, entry: str, args: list[Val]) -> Findings:
    """Walk ``entry`` of ``source`` called with ``args``; raises SourceUnreadable if it cannot be parsed."""
    analysis = Analysis(source)
    try:
        return analysis.run(entry, args)
    except (RecursionError, MemoryError):
        raise SourceUnreadable("the source is too deeply nested to analyse") from None
