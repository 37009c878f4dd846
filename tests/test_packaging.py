"""The wheel ships every data file the library reads (pyproject force-include covers data/)."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_data_file_is_in_the_wheel():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    included = config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    for source, target in included.items():
        assert target == "gpusizer/" + source, (source, target)
        assert (ROOT / source).exists(), source
    files = [p.relative_to(ROOT).as_posix() for p in (ROOT / "data").rglob("*") if p.is_file()]
    missing = [f for f in files if not any(f == s or f.startswith(s.rstrip("/") + "/") for s in included)]
    assert not missing, f"data files not shipped in the wheel: {missing}"
