"""``python -m evoround.cli``: the same command as the ``evoround`` script."""

from evoround.cli import main

main()  # exits with the command's code
