"""tilinglib.devtools.pytest_start: rfc3987_syntax's import deferred, its answers unchanged."""

import importlib.util
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("rfc3987_syntax") is None
                                or importlib.util.find_spec("jsonschema") is None,
                                reason="rfc3987_syntax or jsonschema not installed")

_PROBE = r"""
import sys
{install}
import jsonschema
from jsonschema import FormatChecker
stand_in = type(sys.modules["rfc3987_syntax"]).__name__
checker = FormatChecker()
answers = [checker.conforms(v, f) for f in ("iri", "iri-reference")
           for v in ("http://example.org/a?b#c", "http://exa mple/", "../x", "a b c")]
print(stand_in, answers, type(sys.modules["rfc3987_syntax"]).__name__,
      sys.modules["rfc3987_syntax"].is_valid_syntax("iri", "urn:isbn:1"))
"""


def _probe(install: bool) -> list[str]:
    code = _PROBE.format(install="import tilinglib.devtools.pytest_start" if install else "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return out.split(" ", 1)


def test_stand_in_until_used_then_the_real_answers():
    with_plugin = _probe(install=True)
    without = _probe(install=False)
    assert with_plugin[0] == "_StandIn"             # what jsonschema's import got
    assert without[0] == "module"
    # the same answers for the draft 7 formats it serves ("../x" is a reference, not an
    # IRI), and the real module afterwards
    assert with_plugin[1] == without[1]
    assert with_plugin[1].startswith("[True, False, False, False, True, False, True, False]")
    assert with_plugin[1].strip().endswith("module True")


def test_nothing_done_when_already_imported():
    code = ("import rfc3987_syntax, sys; import tilinglib.devtools.pytest_start as p; "
            "print(p.install(), p._FINDER in sys.meta_path, type(sys.modules['rfc3987_syntax']).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False", "module"]


def test_pytest_loads_it_first():
    """pyproject.toml's addopts names it, so it is imported before nbval's plugin."""
    import tomllib
    from pathlib import Path

    addopts = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())[
        "tool"]["pytest"]["ini_options"]["addopts"]
    i = addopts.index("-p")
    assert addopts[i + 1] == "tilinglib.devtools.pytest_start"
    assert "rfc3987_syntax" in sys.modules        # this very run imported jsonschema (nbval)
