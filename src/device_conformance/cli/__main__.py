import sys

from device_conformance.cli.main import main

sys.exit(main())
