"""`python -m asyncbroker ...` is the `asyncbroker` command."""
import sys

from asyncbroker.cli import main

sys.exit(main())
