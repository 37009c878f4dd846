"""The cache of parsed data files: same answers, rebuilt when the bytes change, never needed."""

import pickle

import pytest

from gpusizer import _cache, catalog


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSIZER_CACHE_DIR", str(tmp_path))
    return tmp_path


def counting():
    calls = []

    def build(data):
        calls.append(data)
        return {"parsed": data.decode(), "calls": len(calls)}

    return build, calls


def test_second_read_of_the_same_bytes_is_unpickled_not_rebuilt(folder):
    build, calls = counting()
    first = _cache.parsed("x.toml", b"a = 1", build)
    again = _cache.parsed("x.toml", b"a = 1", build)
    assert first == again == {"parsed": "a = 1", "calls": 1}
    assert len(calls) == 1
    assert len(list(folder.glob("x.toml-*.pickle"))) == 1


def test_new_bytes_rebuild_and_replace_the_old_entry(folder):
    build, calls = counting()
    _cache.parsed("x.toml", b"a = 1", build)
    assert _cache.parsed("x.toml", b"a = 2", build)["parsed"] == "a = 2"
    assert len(calls) == 2
    assert len(list(folder.glob("x.toml-*.pickle"))) == 1  # the stale entry is gone


def test_a_damaged_entry_is_rebuilt(folder):
    build, _ = counting()
    _cache.parsed("x.toml", b"a = 1", build)
    (entry,) = folder.glob("x.toml-*.pickle")
    entry.write_bytes(b"not a pickle")
    assert _cache.parsed("x.toml", b"a = 1", build)["calls"] == 2
    assert pickle.loads(entry.read_bytes())["calls"] == 2  # and rewritten


def test_an_empty_setting_turns_the_cache_off(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUSIZER_CACHE_DIR", "")
    monkeypatch.chdir(tmp_path)
    build, calls = counting()
    _cache.parsed("x.toml", b"a = 1", build)
    _cache.parsed("x.toml", b"a = 1", build)
    assert len(calls) == 2
    assert not list(tmp_path.iterdir())


def test_an_unwritable_folder_only_costs_the_parse(monkeypatch, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("GPUSIZER_CACHE_DIR", str(blocked / "gpusizer"))
    build, _ = counting()
    assert _cache.parsed("x.toml", b"a = 1", build)["parsed"] == "a = 1"
    assert _cache.parsed("x.toml", b"a = 1", build)["calls"] == 2


def test_cached_catalogue_records_equal_freshly_parsed_ones(folder):
    fresh_gpus, fresh_systems = catalog.load_gpus()
    for _ in range(2):  # the first call writes the entry, the second reads it
        gpus, systems = catalog._parsed("gpus.toml", catalog.load_gpus)
        assert gpus == fresh_gpus and systems == fresh_systems
        models = catalog._parsed("models.toml", catalog.load_models)
        assert models == catalog.load_models()
    assert {p.name.split("-")[0] for p in folder.glob("*.pickle")} == {"gpus.toml", "models.toml"}
    assert models["llama-3.1-70b"].num_layers == 80  # a record unpickled from the entry is usable
