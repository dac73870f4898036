import sys

from workbook.cli import main

sys.exit(main())
