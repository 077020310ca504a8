"""Only the native helper's build lives here; everything else is in pyproject.toml."""

import sys
import sysconfig

from setuptools import setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):  # type: ignore[misc]
    """The native counter reader is an optimisation: a failed compile (no compiler, no
    headers) must not fail the installation; edgeprof then reads counters in pure Python."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - any build failure means "no helper"
            print(f"edgeprof: native helper not built ({exc}); using the pure-Python reader")

    def build_extension(self, ext: object) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001
            print(f"edgeprof: native helper not built ({exc}); using the pure-Python reader")


def wheel_options() -> dict[str, dict[str, str]]:
    """One wheel for every CPython from 3.10 (tag cp310-abi3) where the helper is built
    against the limited API: cffi's out-of-line API mode defines Py_LIMITED_API and marks the
    extension py_limited_api (it is built as _cgstat.abi3.so), except on a debug or a
    free-threaded interpreter, where cffi builds a version-specific module and the wheel must
    keep the version-specific tag (setuptools refuses py_limited_api on a free-threaded one).
    The wheel built under 3.11.7 loaded its helper under 3.10.13, 3.12.1 and 3.13.0 (`edgeprof
    doctor`: "counter reader: native helper")."""
    debug = hasattr(sys, "gettotalrefcount")
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    if sys.implementation.name != "cpython" or debug or free_threaded:
        return {}
    # cp310: the oldest Python pyproject's requires-python admits.
    return {"bdist_wheel": {"py_limited_api": "cp310"}}


setup(
    cffi_modules=["native/build_cgstat.py:ffibuilder"],
    cmdclass={"build_ext": OptionalBuildExt},
    options=wheel_options(),
)
