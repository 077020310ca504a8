"""cffi out-of-line API-mode build of the cgstat helper (run by setup.py's cffi_modules).

The declarations given to cffi are generated from ``cgstat.h`` at build time, so the header
is the one place they are written: a prototype changed there cannot drift from a hand-kept
copy here.
"""

from __future__ import annotations

import re
from pathlib import Path

from cffi import FFI

# setuptools wants paths relative to the project root (where setup.py runs).
HERE = "native"
# The header itself is read through this file's own location, so the build (and the unit
# test that imports this module) works from any working directory.
HEADER = Path(__file__).resolve().parent / "cgstat.h"

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_DEFINE = re.compile(r"#\s*define\s+(\w+)(\([^)]*\))?(?:\s+(.*))?$")
# Conditionals (the include guard) and includes mean nothing to cffi's parser.
_DROPPED = re.compile(r"#\s*(ifndef|ifdef|if|elif|else|endif|include|pragma)\b")


def cdef_from_header(text: str) -> str:
    """The cffi ``cdef`` of a C header: comments and preprocessor conditionals removed, an
    object-like ``#define NAME value`` turned into ``#define NAME ...`` (cffi then takes the
    value from the compiled header), a ``#define NAME`` without a value (the include guard)
    dropped; types, enums and prototypes kept as written."""
    text = _COMMENT.sub(" ", text.replace("\\\n", " "))
    out: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            if stripped:
                out.append(line.rstrip())
            continue
        if _DROPPED.match(stripped):
            continue
        define = _DEFINE.match(stripped)
        if define is None:
            raise ValueError(f"cgstat.h: cannot turn this directive into a cdef: {stripped}")
        name, params, value = define.groups()
        if params is not None:
            raise ValueError(f"cgstat.h: function-like macro {name} has no cffi form")
        if value:
            out.append(f"#define {name} ...")
    return "\n".join(out) + "\n"


ffibuilder = FFI()
ffibuilder.cdef(cdef_from_header(HEADER.read_text()))
ffibuilder.set_source(
    "edgeprof.backends._cgstat",
    '#include "cgstat.h"',
    sources=[f"{HERE}/cgstat.c"],
    include_dirs=[HERE],
    extra_compile_args=["-O2", "-std=c99", "-Wall"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
