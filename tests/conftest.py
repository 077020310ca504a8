"""Shared test policy: tiers that cannot set themselves up skip on a laptop, fail in CI."""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def require(ok: bool, reason: str) -> None:
    """Skip with ``reason`` when ``ok`` is false — except in CI, where no tier may skip."""
    if ok:
        return
    if IN_CI:
        pytest.fail(f"tier cannot run in CI: {reason}", pytrace=False)
    pytest.skip(reason)
