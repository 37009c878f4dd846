"""Test configuration.

- In CI (``CI=true``) hypothesis runs derandomized, so a run is reproducible and a property failure is
  never a matter of luck; locally it explores fresh examples each run.
- The cache of parsed catalogues (``gpusizer._cache``) lives in a fresh temporary folder for the
  session (subprocesses inherit it), so tests neither read nor leave entries in the user's cache.
"""

import os
import tempfile

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

_CACHE = tempfile.TemporaryDirectory(prefix="gpusizer-cache-")
os.environ["GPUSIZER_CACHE_DIR"] = _CACHE.name


#: Catalogue GPUs that ``rateless`` strips of their matrix rates.
RATELESS = ("apple-m3-max", "apple-m3-ultra")


@pytest.fixture
def rateless(monkeypatch):
    """The catalogue with the M3 Max's and M3 Ultra's rates removed: GPUs whose vendor publishes none (every
    catalogue GPU now has one, so the unknown-prefill path is exercised on these stand-ins)."""
    import gpusizer
    from gpusizer.records import DenseRates

    found = gpusizer.catalog.gpu

    def gpu(name):
        record = found(name)
        return record.model_copy(update={"dense": DenseRates()}) if record.id in RATELESS else record

    monkeypatch.setattr(gpusizer.catalog, "gpu", gpu)
