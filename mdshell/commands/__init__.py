"""Commands: results are data; front ends render them as text or JSON."""

from . import healthcmd as _healthcmd  # noqa: F401  (health)
from . import live as _live  # noqa: F401  (save)
from . import logcmds as _logcmds  # noqa: F401  (records, changes)
from . import navigate as _navigate  # noqa: F401  (registers the commands)
from . import nodescmd as _nodescmd  # noqa: F401  (nodes)
from . import session as _session  # noqa: F401  (help, man, history, exit)
from . import sparkcmds as _sparkcmds  # noqa: F401  (sql, tables; pyspark only when run)
from . import timetravel as _timetravel  # noqa: F401  (at, diff)
from . import views as _views  # noqa: F401  (topics, brokers, controllers, quorum, features)
from .base import REGISTRY, Command, CommandError, Result, UsageError
from .shell import Shell

__all__ = ["REGISTRY", "Command", "CommandError", "Result", "Shell", "UsageError"]
