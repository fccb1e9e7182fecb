import sys

from ..cli.demo import main

sys.exit(main())
