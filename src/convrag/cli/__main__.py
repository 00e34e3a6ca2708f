"""``python -m convrag.cli``."""

from convrag.cli import main

main()
