"""Several nodes' metadata directories of one cluster, compared (``-d`` given more than once,
``nodes``, ``diff --node``).

A quorum gone wrong leaves each node with its own log: which one the quorum follows, where the
others part from it, and which records were never committed can only be told from all of them
at once. :mod:`.group` opens the directories and checks they are one cluster; :mod:`.scan`
reads each log's batch headers (offsets, epochs, CRCs, control records); :mod:`.compare` finds
where two logs diverge, by offset and epoch, with the records checked by CRC; :mod:`.report`
says what it means (the quorum's log, what is committed, what Kafka will truncate);
:mod:`.tail` is what one directory alone can say of its tail.
"""
