"""Test configuration.

- In CI (``CI=true``) hypothesis runs derandomized, so a run is reproducible and a property failure is
  never a matter of luck; locally it explores fresh examples each run.
- The cache of parsed catalogues (``gpusizer._cache``) lives in a fresh temporary folder for the
  session (subprocesses inherit it), so tests neither read nor leave entries in the user's cache.
"""

import os
import tempfile

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

_CACHE = tempfile.TemporaryDirectory(prefix="gpusizer-cache-")
os.environ["GPUSIZER_CACHE_DIR"] = _CACHE.name
