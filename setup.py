"""The optional compiled pieces of the hot path (docs/performance.md, "Compiled pieces"), and
the editable install's copy of ``pyspark_kraft.py`` (docs/spark.md, "Registration").

Everything else is in pyproject.toml. Each extension is optional: without a C compiler the
install still succeeds and mdshell runs the pure-Python path, which gives the same results
(tests compare the two on every fixture, the corpus and damaged copies)."""

import glob
import os
from typing import Any

from setuptools import Extension, setup

try:  # setuptools 64 and later (pip builds with the >= 68 of pyproject.toml)
    from setuptools.command.editable_wheel import editable_wheel
except ImportError:  # an older one, run directly (setup.py build_ext): no editable installs
    editable_wheel = None

_HERE = os.path.dirname(os.path.abspath(__file__))
# (module, C source): a source not in this checkout is not built.
_PIECES = [
    ("mdshell.wire._cwalk", "mdshell/wire/_cwalk.c"),
    ("mdshell.wire._cdecode", "mdshell/wire/_cdecode.c"),
]
# Headers the pieces include (a change rebuilds them): the parts of _cwalk.c, _idset.h,
# _kept.h.
_HEADERS = sorted(os.path.relpath(p, _HERE)
                  for p in glob.glob(os.path.join(_HERE, "mdshell", "wire", "_*.h")))
# Top-level modules an editable install also copies into site-packages as real files.
_COPIED = ["pyspark_kraft.py"]


class _AlsoWrites:
    """An editable install's strategy (setuptools' import hook or .pth file), which also
    writes the files of ``_COPIED`` into the wheel's top level."""

    def __init__(self, strategy: Any) -> None:
        self.strategy = strategy

    def __call__(self, wheel: Any, files: Any, mapping: Any) -> None:
        self.strategy(wheel, files, mapping)
        for name in _COPIED:
            with open(os.path.join(_HERE, name), "rb") as f:
                wheel.writestr(name, f.read())

    def __enter__(self) -> "_AlsoWrites":
        self.strategy.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.strategy.__exit__(*exc)


def _commands() -> dict[str, Any]:
    """``editable_wheel`` with the copy, where setuptools has its strategy hook (64 and
    later); otherwise setuptools' own (docs/spark.md's register(spark) line finds the
    source)."""
    if editable_wheel is None or not hasattr(editable_wheel, "_select_strategy"):
        return {}

    class Editable(editable_wheel):  # type: ignore[misc, valid-type]
        """``pip install -e .`` with ``pyspark_kraft.py`` a real file in site-packages.
        PySpark finds data sources with ``pkgutil.iter_modules()``, which lists the files on
        sys.path and never asks the import hook an editable install adds: without the copy,
        a PySpark job run outside the clone does not find the ``kraft`` source
        (DATA_SOURCE_NOT_FOUND). The copy only imports mdshell, which the hook finds in the
        clone."""

        def _select_strategy(self, *args: Any, **kwargs: Any) -> Any:
            return _AlsoWrites(super()._select_strategy(*args, **kwargs))

    return {"editable_wheel": Editable}


setup(ext_modules=[
    Extension(name, [src], depends=_HEADERS, optional=True)
    for name, src in _PIECES if os.path.exists(os.path.join(_HERE, src))
], cmdclass=_commands())
