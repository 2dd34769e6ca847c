"""Suite-wide settings.

Hypothesis runs derandomized (the same examples on every run, as every other statistical test
here uses fixed seeds), so a red CI can be reproduced; ``HYPOTHESIS_PROFILE=explore`` draws new
random examples for a bug hunt (then pin what it finds with ``@example``).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("repro", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repro"))
