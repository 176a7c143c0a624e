"""The optional compiled pieces of the hot path (docs/performance.md, "Compiled pieces").

Everything else is in pyproject.toml. Each extension is optional: without a C compiler the
install still succeeds and mdshell runs the pure-Python path, which gives the same results
(tests compare the two on every fixture, the corpus and damaged copies)."""

import os

from setuptools import Extension, setup

_HERE = os.path.dirname(os.path.abspath(__file__))
# (module, C source): a source not in this checkout is not built.
_PIECES = [
    ("mdshell.wire._cwalk", "mdshell/wire/_cwalk.c"),
    ("mdshell.wire._cdecode", "mdshell/wire/_cdecode.c"),
]

setup(ext_modules=[
    Extension(name, [src], optional=True)
    for name, src in _PIECES if os.path.exists(os.path.join(_HERE, src))
])
