import sys

from ferry.cli.main import main

raise SystemExit(main(sys.argv[1:]))
