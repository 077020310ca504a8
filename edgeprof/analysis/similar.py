"""The names a user may have meant by one no catalog holds: the device catalog's refusal and
``calibrate``'s note both offer them, in the same words."""

from __future__ import annotations

from collections.abc import Sequence


def similar_devices(name: str, names: Sequence[str], close: int = 3) -> list[str]:
    """The ``names`` a user typing ``name`` may have meant: every one it begins (a family,
    sorted), then those difflib finds close, best first, while there are fewer than
    ``close`` in all.  ``--device rpi4`` had been offered ``rpi5-4gb`` alone, over the four
    ``rpi4-*`` entries (a tester's); ``rpi4-4g`` is still offered ``rpi4-4gb`` alone."""
    import difflib  # only on a name's error path

    family = sorted(n for n in names if n.startswith(name) and n != name) if name else []
    room = close - len(family)
    if room <= 0:
        return family
    near = difflib.get_close_matches(name, names, n=close, cutoff=0.6)
    return family + [n for n in near if n not in family][:room]


def either(names: Sequence[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
