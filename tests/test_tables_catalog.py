"""``tables`` reads ``mdshell/spark/catalog.py``, generated from the Spark tables' Arrow schemas:
it must say what the tables are (the spark extra is needed to compare)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.spark


def test_the_catalogue_is_the_tables_as_spark_types_them() -> None:
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("the spark extra is not installed")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import make_catalog
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    assert make_catalog.TARGET.read_text() == make_catalog.render(), (
        "mdshell/spark/catalog.py is out of date: python scripts/make_catalog.py")
