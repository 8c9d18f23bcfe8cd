"""``python -m tools.goldens``: see cli.py."""
from .cli import main

main()
