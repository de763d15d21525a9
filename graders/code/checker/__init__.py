"""The checker: a jailed process that runs one problem set's own code (checks, and what they call) for the service.

``host`` is the service's side (start a checker, run a check in it, answer its proxy calls), ``main`` and ``remote``
run inside the jail, ``protocol`` is what both sides share. See docs/sandbox.md, "Three parties".
"""
