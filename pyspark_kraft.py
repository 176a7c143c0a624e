"""PySpark's discovery of Python data sources: at its first data source call a session imports
every top-level module named ``pyspark_*`` and registers its ``DefaultSource``, so after
``pip install 'mdshell[spark]'`` ``spark.read.format("kraft")`` works in any PySpark 4 job
without a register call. The source is :class:`mdshell.spark.datasource.KraftDataSource`."""

from mdshell.spark.datasource import KraftDataSource as DefaultSource

__all__ = ["DefaultSource"]
