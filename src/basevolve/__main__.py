import sys

from basevolve.cli import main

sys.exit(main())
