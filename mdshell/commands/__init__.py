"""Commands: results are data; front ends render them as text or JSON."""

from . import navigate as _navigate  # noqa: F401  (registers the commands)
from . import session as _session  # noqa: F401  (help, man, history, exit)
from .base import REGISTRY, Command, CommandError, Result, UsageError
from .shell import Shell

__all__ = ["REGISTRY", "Command", "CommandError", "Result", "Shell", "UsageError"]
