"""edgeprof's version, written once (pyproject reads it without importing the package).

A module of its own so that the layers which stamp it on what they write (results, reports,
recipes) import nothing above them: through ``edgeprof/__init__.py`` they would depend, for
import-linter, on every module the package's namespace names for type checkers."""

__version__ = "0.1.0"
