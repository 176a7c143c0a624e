"""Writers of realistic KRaft metadata directories, for fixtures, benchmarks and demos.

Layering: this package imports only ``mdshell.wire`` (and the standard library), so generated
data checks the reader rather than mirroring it.

- :class:`ClusterBuilder` appends operations as Kafka's controller would write them and writes
  snapshots of its own model of the cluster.
- :func:`generate` with a :class:`Scenario` writes a whole cluster history from a few numbers.
"""

from .batches import CODECS, Codec, codec_named
from .builder import ClusterBuilder
from .scenario import Scenario, Summary, generate
from .snapshot import SnapshotOptions, Voter

__all__ = ["CODECS", "ClusterBuilder", "Codec", "Scenario", "SnapshotOptions", "Summary",
           "Voter", "codec_named", "generate"]
