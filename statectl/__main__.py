"""`python -m statectl`."""

from statectl.cli import main

main()
