"""native/build_cgstat.py: the cffi declarations are generated from cgstat.h, the one source."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
from cffi import FFI

from edgeprof.backends import cgroupfs as fs
from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
HEADER = REPO / "native" / "cgstat.h"


def _build_module() -> ModuleType:
    """native/build_cgstat.py, loaded by path (native/ is not a package)."""
    spec = importlib.util.spec_from_file_location("build_cgstat", REPO / "native/build_cgstat.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _squash(text: str) -> str:
    """``text`` with comments removed and every run of white space one blank."""
    return " ".join(re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL).split())


def _prototypes(header: str) -> dict[str, str]:
    """{name: whole declaration} of every function prototype in ``header``, read from the
    header itself (not through the generator under test)."""
    return {
        m.group(1): m.group(0)
        for m in re.finditer(r"\b[A-Za-z_][\w\s\*]*?\b(\w+)\s*\([^;{}]*\)\s*;", _squash(header))
    }


def test_cdef_holds_every_prototype_of_the_header() -> None:
    header = HEADER.read_text()
    cdef = _build_module().cdef_from_header(header)
    protos = _prototypes(header)
    # The two calls edgeprof's reader makes: the extraction above must find at least those.
    assert {"cg_read", "cg_sample"} <= set(protos)
    flat = _squash(cdef)
    for name, proto in protos.items():
        assert proto in flat, f"{name}: {proto!r} is not in the generated cdef"


def test_cdef_keeps_constants_enum_and_struct_and_drops_the_rest() -> None:
    cdef = _build_module().cdef_from_header(HEADER.read_text())
    assert "#define CG_MISSING ..." in cdef
    assert "#define CG_UNLIMITED ..." in cdef
    flat = _squash(cdef)
    for member in ("CG_INT = 0", "CG_KV = 1", "CG_IOSTAT = 2", "CG_BLKIO = 3"):
        assert member in flat
    assert "} cg_file;" in flat
    assert "EDGEPROF_CGSTAT_H" not in cdef  # the include guard
    assert "#endif" not in cdef and "#ifndef" not in cdef
    assert "/*" not in cdef and "*/" not in cdef
    FFI().cdef(cdef)  # and cffi's parser accepts it


def test_cdef_generation_rules_on_a_small_header() -> None:
    build = _build_module()
    header = (
        "#ifndef G_H\n#define G_H\n#include <stdint.h>\n"
        "#define LIMIT (1 << 4) /* a value */\n// a line comment\n"
        "#define LONG_ONE \\\n    42\n"
        "int f(int a,\n      int b);\n#endif\n"
    )
    assert build.cdef_from_header(header) == (
        "#define LIMIT ...\n#define LONG_ONE ...\nint f(int a,\n      int b);\n"
    )
    with pytest.raises(ValueError, match="function-like macro"):
        build.cdef_from_header("#define SQUARE(x) ((x) * (x))\n")


def test_built_helper_exposes_the_header_constants() -> None:
    """The compiled helper carries the header's values, and they are the ones the Python
    side uses: CG_MISSING is the sentinel it compares samples against, ``Kind`` the file
    kinds it passes in."""
    require(fs.NATIVE_AVAILABLE, "the native helper is not built in this installation")
    from edgeprof.backends import _cgstat  # type: ignore[attr-defined]

    lib = _cgstat.lib
    assert lib.CG_MISSING == -(2**63) == fs._MISSING
    assert lib.CG_UNLIMITED == -1
    assert (lib.CG_INT, lib.CG_KV, lib.CG_IOSTAT, lib.CG_BLKIO, lib.CG_PSI) == (0, 1, 2, 3, 4)
    assert {k.name: int(k) for k in fs.Kind} == {
        "INT": lib.CG_INT,
        "KV": lib.CG_KV,
        "IOSTAT": lib.CG_IOSTAT,
        "BLKIO": lib.CG_BLKIO,
        "PSI": lib.CG_PSI,
    }
