"""``python -m devtools``: see :mod:`devtools.cli`."""

from devtools.cli import main

main()
