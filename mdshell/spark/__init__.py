"""Heavy queries on Spark: session start, tables from an image and its log, the ``kraft`` data
source and the ``sql`` runner.

Nothing here is imported on the one-shot path: the ``sql`` and ``tables`` commands import these
modules when they run, and only :mod:`.session`, :mod:`.datasource`, :mod:`.query` and
:mod:`.compat` (which holds every use of pyspark's and Spark's internals) import pyspark.
All access to mdshell's core (loader, image, log reader), besides the shared error types, is
in the table modules that :mod:`.tables` gathers (:mod:`.columns`, :mod:`.recordtable`,
:mod:`.imagetables`, :mod:`.changes`, :mod:`.logfiles`) and in the wire readers :mod:`.fastlog`
and :mod:`.crcs`; the rest (session, data source, query runner) reaches the core only through
:mod:`.tables`, so the core can change shape behind those modules.
"""
