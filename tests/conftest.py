"""Test configuration: in CI (``CI=true``) hypothesis runs derandomized, so a run is reproducible
and a property failure is never a matter of luck; locally it explores fresh examples each run."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
