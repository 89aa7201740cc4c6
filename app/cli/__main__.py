"""``python -m app.cli``: the ``hexa`` command (tests and child processes start it so, with this checkout's code)."""
import sys

from . import main

sys.exit(main())
