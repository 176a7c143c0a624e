"""Heavy queries on Spark: session start, tables from an image and its log, the ``kraft`` data
source and the ``sql`` runner.

Nothing here is imported on the one-shot path: the ``sql`` and ``tables`` commands import these
modules when they run, and only :mod:`.session`, :mod:`.datasource` and :mod:`.query` import
pyspark. All access to mdshell's core (loader, image, log reader) is in :mod:`.tables`, so the
core can change shape behind one module.
"""
