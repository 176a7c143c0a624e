"""Entry point of ``python -m mdshell.synth``."""

import sys

from .cli import main

sys.exit(main())
