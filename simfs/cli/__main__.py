import sys

from simfs.cli.main import main

sys.exit(main())
