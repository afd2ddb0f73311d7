"""The disk cache (tilinglib/toolchain/disk_cache.py): hits, misses, what changes the key,
a folder that cannot be written, a corrupted entry, and its use by the front end."""

import importlib
import os
import pickle
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tilinglib.toolchain import disk_cache

# (the modules, not the functions tilinglib.toolchain.frontend names after them)
pp_module = importlib.import_module("tilinglib.toolchain.frontend.preprocess")
program = importlib.import_module("tilinglib.toolchain.frontend.program")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILINGLIB_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def entries(folder: Path, namespace: str) -> list:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.parent.name == namespace)


def test_a_value_put_is_got_back_and_an_unknown_key_is_a_miss(cache):
    key = disk_cache.key_of("source", ("-DTILE=16",), True)
    assert disk_cache.get("ns", key) is None
    disk_cache.put("ns", key, {"a": [1, 2, 3]})
    assert disk_cache.get("ns", key) == {"a": [1, 2, 3]}
    assert disk_cache.get("ns", disk_cache.key_of("source", ("-DTILE=32",), True)) is None
    assert disk_cache.get("other", key) is None
    # one file, in the folder of this tilinglib's fingerprint
    (entry,) = entries(cache, "ns")
    assert entry.parent.parent.name == disk_cache.fingerprint()[:32]


def test_the_key_changes_with_every_part():
    base = disk_cache.key_of("text", ("-DTILE=16",), True)
    assert base == disk_cache.key_of("text", ("-DTILE=16",), True)
    assert len({base, disk_cache.key_of("text ", ("-DTILE=16",), True),
                disk_cache.key_of("text", ("-DTILE=32",), True),
                disk_cache.key_of("text", (), True),
                disk_cache.key_of("text", ("-DTILE=16",), False)}) == 5


def test_another_tilinglib_source_is_another_folder(tmp_path, cache):
    # the fingerprint is the package's source: a copy with one file edited has another
    import tilinglib

    here = Path(tilinglib.__file__).resolve().parent.parent
    code = ("from tilinglib.toolchain import disk_cache; print(disk_cache.fingerprint())")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "copy"))
    (tmp_path / "copy").mkdir()
    subprocess.run(["cp", "-r", str(here / "tilinglib"), str(tmp_path / "copy")], check=True)
    same = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                          capture_output=True, text=True, check=True).stdout.strip()
    assert same == disk_cache.fingerprint()
    with open(tmp_path / "copy" / "tilinglib" / "gpu.py", "a") as f:
        f.write("\n# edited\n")
    edited = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout.strip()
    assert edited != same and len(edited) == 64


@pytest.mark.parametrize("value", ["", "0", "off", "OFF"])
def test_it_can_be_turned_off(monkeypatch, value):
    monkeypatch.setenv("TILINGLIB_CACHE_DIR", value)
    assert disk_cache.cache_dir() is None
    disk_cache.put("ns", "k", 1)
    assert disk_cache.get("ns", "k") is None


def test_the_default_folder_is_under_the_users_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("TILINGLIB_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert disk_cache.cache_dir() == tmp_path / "tilinglib"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_an_unwritable_folder_turns_it_off(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        monkeypatch.setenv("TILINGLIB_CACHE_DIR", str(locked / "cache"))
        disk_cache.put("ns", "k", 1)
        assert disk_cache.get("ns", "k") is None
    finally:
        locked.chmod(stat.S_IRWXU)


def test_a_folder_that_is_a_file_turns_it_off(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("TILINGLIB_CACHE_DIR", str(tmp_path / "file"))
    disk_cache.put("ns", "k", 1)
    assert disk_cache.get("ns", "k") is None


def test_a_corrupted_entry_is_a_miss_and_is_replaced(cache):
    key = disk_cache.key_of("x")
    disk_cache.put("ns", key, [1, 2])
    (entry,) = entries(cache, "ns")
    entry.write_bytes(b"\x80\x05garbage")
    assert disk_cache.get("ns", key) is None
    entry.write_bytes(pickle.dumps([1, 2])[:5])          # a truncated write
    assert disk_cache.get("ns", key) is None
    disk_cache.put("ns", key, [3])
    assert disk_cache.get("ns", key) == [3]


def test_a_value_that_cannot_be_pickled_is_not_stored(cache):
    disk_cache.put("ns", "k", lambda: 1)
    assert disk_cache.get("ns", "k") is None
    assert not [p for p in cache.rglob("*") if p.is_file()]      # no temporary file left


def test_the_front_end_stores_its_results_and_finds_them(cache, monkeypatch):
    source = "__global__ void k(float* a) { a[threadIdx.x] = TILE * 2.0f; }"
    pre = pp_module.preprocess(source, ["-DTILE=7"])
    program._translate.cache_clear()
    unit = program.parse(pre)
    assert len(entries(cache, "preprocessed")) == 1
    assert len(entries(cache, "translation")) == 1

    # a later process: the memory caches empty, and neither pcpp nor clang may run
    program._translate.cache_clear()
    monkeypatch.setattr(pp_module, "_run_preprocessor", None)
    monkeypatch.setattr(program, "_run_translation", None)
    again = pp_module.preprocess(source, ["-DTILE=7"])
    assert again == pre
    unit2 = program.parse(again)
    assert unit2 is not unit and unit2.kernel_names == unit.kernel_names
    assert repr(unit2.ext) == repr(unit.ext)
    program._translate.cache_clear()


def test_the_front_end_does_not_store_errors(cache):
    from tilinglib.errors import CompileError

    program._translate.cache_clear()
    for _ in range(2):
        with pytest.raises(CompileError):
            program.parse(pp_module.preprocess("__global__ void k( { }"))
    assert not entries(cache, "translation")
    program._translate.cache_clear()


def test_the_ladder_finds_its_counts_on_disk(cache, monkeypatch):
    from tilinglib import ladder

    p = {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4}
    ladder._COUNTS.clear()
    first = ladder.count("regtile2d", 64, 64, 16, p)
    assert len(entries(cache, "ladder_counts")) == 1
    ladder._COUNTS.clear()                      # a later process: no launch may run

    def no_launch(*args, **kwargs):
        raise AssertionError("launched although the count was on disk")

    monkeypatch.setattr(ladder, "_call", no_launch)
    again = ladder.count("regtile2d", 64, 64, 16, p)
    assert again == first and again is not first
    # another shape is another key: counted
    with pytest.raises(AssertionError, match="launched"):
        ladder.count("regtile2d", 64, 64, 32, p)
    ladder._COUNTS.clear()
