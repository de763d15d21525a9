from __future__ import annotations

from tests.app.conftest import accounts, basic_set, client  # noqa: F401
