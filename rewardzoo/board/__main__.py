"""``python -m rewardzoo.board``: the same as ``rewardzoo leaderboard``."""

import sys

from rewardzoo.board.command import main

sys.exit(main())
