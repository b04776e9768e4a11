"""`python -m tests.volume.kernel_small`: make the tarball and the kernel's layout (see __init__)."""

import sys

from . import main

sys.exit(main())
