import sys

from noon.cli import main

sys.exit(main())
