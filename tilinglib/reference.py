"""Figures measured on a real GPU, shipped with the package, for readers without one.

Introduced in lesson 02 (the naive kernel). On the CPU emulator a notebook cannot time a
kernel, so the lessons show what the course team measured on an NVIDIA H200, always
labelled as such::

    from tilinglib import reference
    ref = reference.load("h200")
    ref.label                                   # 'measured on an NVIDIA H200 (2026-11-29, ...)'
    ref.run("sgemm_tiled", 4096, tile=32, pad=0).gflops          # 8837
    ref.counters("sgemm_naive", 1024)["dram__bytes_read.sum"]    # 8394240
    print(ref.table(N=4096))

The data live in ``tilinglib/data/reference_<name>.json``, one file per machine, in this
format (version 1; a benchmark command will write new files in the same format):

- ``format``: the string ``"tilinglib-reference"``; ``format_version``: ``1``;
- ``description``: one sentence; ``date``: ISO date of the measurement;
- ``device``: ``name`` (as the driver reports it), ``compute_capability``, ``sms``,
  ``shared_memory_per_sm_bytes``;
- ``software``: versions as strings (``driver``, ``cuda``, ``pycuda``, ...);
- ``settings``: how the figures were taken, in words or numbers (compiler options,
  inputs, timing method, ``warmup``, ``repeat``, ``statistic``, validation, counters);
- ``source``: where the figures come from (a document or the command that produced them);
- ``runs``: one entry per timed launch: ``kernel`` (a name from ``tilinglib.kernels``, or
  ``"cublas"``), ``N`` (square size), ``block`` (3 ints or null), ``tile`` and ``pad``
  (ints, or null for kernels without them), ``static_shared_bytes`` (int or null),
  ``gflops`` (2 N^3 / median time, in 1e9 FLOP/s; 0 or null for kernels that are not
  SGEMM). A run may carry more keys (``median_ms``, ``q1_ms``, ``q3_ms``, ``registers``,
  ``gbps``, ``max_relative_error``, ...): they are kept, unread, in `Run.extra`;
- ``counters``: one entry per profiled launch: ``kernel``, ``N``, ``block``, ``tile``,
  ``pad`` as above, and ``metrics``: Nsight Compute metric name -> value.

The SGEMM ladder of lessons 07-08 (`tilinglib.ladder`) is measured in a run of its own,
beside cuBLAS, and kept apart under an optional top-level ``ladder``: its ``description``,
``device``, ``software``, ``date``, ``settings``, ``source``, and its own ``runs`` and
``counters`` in the format above with two more keys each: ``step`` (a ladder step's name, or
``"cublas"`` for the cuBLAS run beside them) and ``params`` (the tile shape, macro name ->
value). `Reference.step` and `Reference.step_counters` find them (`ladder_runs`,
`ladder_counter_sets`); `runs`, `counter_sets`, `run`, `counters` and `table` are the
earlier figures only, so the lessons that read them are unchanged::

    ref.step("warptile_db", 4096).gflops                       # the ladder's best kernel
    ref.step("cublas", 4096).gflops                            # cuBLAS, same run
    ref.step_counters("vec4", 1024)["dram__bytes_read.sum"]
    ref.ladder_label                                           # 'measured on an NVIDIA H200 (...)'
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping

__all__ = ["FORMAT", "FORMAT_VERSION", "Run", "CounterSet", "Reference", "names", "load",
           "from_dict"]

FORMAT = "tilinglib-reference"
FORMAT_VERSION = 1
_PREFIX, _SUFFIX = "reference_", ".json"
_TOP_KEYS = ("description", "device", "software", "date", "settings", "source", "runs",
             "counters")
_RUN_KEYS = ("kernel", "N", "block", "tile", "pad", "static_shared_bytes", "gflops")
_COUNTER_KEYS = ("kernel", "N", "block", "tile", "pad", "metrics")


def _block(value) -> tuple | None:
    return None if value is None else tuple(int(v) for v in value)


@dataclass(frozen=True)
class Run:
    """One timed launch: `kernel` at size `N` with `block`, `tile`, `pad`, and its `gflops`.

    `extra`: any further keys of the file's entry (e.g. ``median_ms``, ``gbps``)."""

    kernel: str
    N: int
    block: tuple | None
    tile: int | None
    pad: int | None
    static_shared_bytes: int | None
    gflops: float | None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def setting(self) -> str:
        """The launch in words, e.g. 'TILE=32, no pad, block 32x32' or 'block 16x16'."""
        parts = []
        if self.tile is not None:
            parts.append(f"TILE={self.tile}")
        if self.pad is not None:
            parts.append("pad" if self.pad else "no pad")
        if self.block is not None:
            parts.append(f"block {self.block[0]}x{self.block[1]}")
        return ", ".join(parts) or "-"


@dataclass(frozen=True)
class CounterSet:
    """Nsight Compute metrics of one profiled launch (`metrics`: metric name -> value).

    `extra`: any further keys of the file's entry (``step``, ``params`` for the ladder)."""

    kernel: str
    N: int
    block: tuple | None
    tile: int | None
    pad: int | None
    metrics: Mapping[str, float] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, metric: str):
        return self.metrics[metric]


def _matches(item, kernel, N, tile, pad, block) -> bool:
    return (item.kernel == kernel and item.N == N
            and (tile is None or item.tile == tile)
            and (pad is None or item.pad == pad)
            and (block is None or item.block == _block(block)))


def _pick_step(items, what, name, N, params):
    found = [it for it in items if it.extra.get("step") == name and it.N == N
             and all(it.extra.get("params", {}).get(k) == v for k, v in dict(params or {}).items())]
    if len(found) == 1:
        return found[0]
    asked = f"step={name!r}, N={N}, params={dict(params or {})}"
    if not found:
        have = sorted({(str(it.extra.get("step")), it.N) for it in items})
        raise KeyError(f"no {what} for {asked}; the file has (step, N): {have}")
    raise KeyError(f"{len(found)} {what}s match {asked}: narrow it down with params= ("
                   + "; ".join(str(dict(it.extra.get("params", {}))) for it in found) + ")")


def _pick(items, what, kernel, N, tile, pad, block):
    found = [it for it in items if _matches(it, kernel, N, tile, pad, block)]
    if len(found) == 1:
        return found[0]
    asked = f"kernel={kernel!r}, N={N}, tile={tile}, pad={pad}, block={block}"
    if not found:
        have = sorted({(it.kernel, it.N) for it in items})
        raise KeyError(f"no {what} for {asked}; the file has (kernel, N): {have}")
    raise KeyError(f"{len(found)} {what}s match {asked}: narrow it down with tile=, pad= or "
                   f"block= ({'; '.join(it.setting if hasattr(it, 'setting') else str(it.block) for it in found)})")


@dataclass(frozen=True)
class Reference:
    """The figures of one machine (see the module docstring for the fields)."""

    name: str
    description: str
    device: Mapping[str, Any]
    software: Mapping[str, str]
    date: str
    settings: Mapping[str, Any]
    source: str
    runs: tuple
    counter_sets: tuple
    ladder: Mapping[str, Any] = field(default_factory=dict)
    ladder_runs: tuple = ()
    ladder_counter_sets: tuple = ()

    @property
    def label(self) -> str:
        """Where the figures come from, for a caption: device, date, driver, CUDA."""
        sw = self.software
        shown = (("driver", "driver"), ("cuda", "CUDA"), ("pycuda", "PyCUDA"))
        extra = ", ".join(f"{label} {sw[k]}" for k, label in shown if k in sw)
        return f"measured on an {self.device['name']} ({self.date}; {extra})"

    @property
    def ladder_label(self) -> str:
        """Where the ladder's figures come from (its own run when the file says so)."""
        if not self.ladder:
            return self.label
        sw = self.ladder.get("software", {})
        shown = (("driver", "driver"), ("cuda_toolkit", "CUDA"), ("pycuda", "PyCUDA"))
        extra = ", ".join(f"{label} {sw[k]}" for k, label in shown if k in sw)
        return (f"measured on an {self.ladder['device']['name']} ({self.ladder['date']}; "
                f"{extra})")

    def step(self, name: str, N: int, params: Mapping[str, int] | None = None) -> Run:
        """The one ladder `Run` of step `name` (or ``"cublas"``) at N x N x N, narrowed by
        `params` (the entries whose tile shape has these values).

        Raises KeyError when none or several match, listing what there is."""
        return _pick_step(self.ladder_runs, "ladder run", name, N, params)

    def step_counters(self, name: str, N: int,
                      params: Mapping[str, int] | None = None) -> CounterSet:
        """The one ladder `CounterSet` of step `name` at N (narrowed as for `step`)."""
        return _pick_step(self.ladder_counter_sets, "ladder counter set", name, N, params)

    def run(self, kernel: str, N: int, *, tile: int | None = None, pad: int | None = None,
            block=None) -> Run:
        """The one `Run` of `kernel` at `N` (narrowed by `tile`, `pad`, `block`).

        Raises KeyError when none or several match, listing what there is."""
        return _pick(self.runs, "run", kernel, N, tile, pad, block)

    def counters(self, kernel: str, N: int, *, tile: int | None = None,
                 pad: int | None = None, block=None) -> CounterSet:
        """The one `CounterSet` of `kernel` at `N` (narrowed as for `run`)."""
        return _pick(self.counter_sets, "counter set", kernel, N, tile, pad, block)

    def table(self, N: int | None = None) -> str:
        """The runs (all, or those at size `N`) as a text table headed by `label`."""
        rows = [r for r in self.runs if (N is None or r.N == N) and r.gflops]
        width = max([len("kernel")] + [len(r.kernel) for r in rows])
        head = f"SGEMM, {self.label}"
        lines = [head, f"{'kernel':<{width}} {'N':>5}  {'setting':<30} {'GFLOP/s':>8}"]
        lines += [f"{r.kernel:<{width}} {r.N:>5}  {r.setting:<30} {r.gflops:>8,.0f}"
                  for r in rows]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """The data in the file format (what `from_dict` reads back)."""
        def plain(item):
            is_run = isinstance(item, Run)
            d = {k: getattr(item, k) for k in (_RUN_KEYS if is_run else _COUNTER_KEYS)}
            d.update(item.extra)
            d["block"] = list(d["block"]) if d["block"] is not None else None
            if "metrics" in d:
                d["metrics"] = dict(d["metrics"])
            return d
        out = {"format": FORMAT, "format_version": FORMAT_VERSION,
               "description": self.description, "device": dict(self.device),
               "software": dict(self.software), "date": self.date,
               "settings": dict(self.settings), "source": self.source,
               "runs": [plain(r) for r in self.runs],
               "counters": [plain(c) for c in self.counter_sets]}
        if self.ladder:
            out["ladder"] = dict(self.ladder, runs=[plain(r) for r in self.ladder_runs],
                                 counters=[plain(c) for c in self.ladder_counter_sets])
        return out


def _entries(data: Mapping, where: str, prefix: str) -> tuple[tuple, tuple]:
    """The `Run`s and `CounterSet`s of data['runs'] and data['counters']; ValueError naming
    the entry (``runs[3]``, ``ladder.counters[0]``) and the keys it lacks."""
    runs, counter_sets = [], []
    for i, r in enumerate(data["runs"]):
        lack = [k for k in _RUN_KEYS if k not in r]
        if lack:
            raise ValueError(f"{where}: {prefix}runs[{i}] lacks {', '.join(lack)}")
        gflops = None if r["gflops"] is None else float(r["gflops"])
        extra = MappingProxyType({k: v for k, v in r.items() if k not in _RUN_KEYS})
        runs.append(Run(str(r["kernel"]), int(r["N"]), _block(r["block"]), r["tile"],
                        r["pad"], r["static_shared_bytes"], gflops, extra))
    for i, c in enumerate(data["counters"]):
        lack = [k for k in _COUNTER_KEYS if k not in c]
        if lack:
            raise ValueError(f"{where}: {prefix}counters[{i}] lacks {', '.join(lack)}")
        extra = MappingProxyType({k: v for k, v in c.items() if k not in _COUNTER_KEYS})
        counter_sets.append(CounterSet(str(c["kernel"]), int(c["N"]), _block(c["block"]),
                                       c["tile"], c["pad"], MappingProxyType(dict(c["metrics"])),
                                       extra))
    return tuple(runs), tuple(counter_sets)


def from_dict(data: Mapping, name: str = "") -> Reference:
    """A `Reference` from the file format; ValueError naming what is missing or wrong."""
    where = f"reference {name!r}" if name else "reference data"
    if data.get("format") != FORMAT:
        raise ValueError(f"{where}: 'format' must be {FORMAT!r}, got {data.get('format')!r}")
    if data.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{where}: format_version {data.get('format_version')!r} is not "
                         f"supported (this tilinglib reads version {FORMAT_VERSION})")
    missing = [k for k in _TOP_KEYS if k not in data]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(missing)}")
    if "name" not in data["device"]:
        raise ValueError(f"{where}: device needs a 'name'")
    runs, counter_sets = _entries(data, where, "")
    ladder = dict(data.get("ladder") or {})
    ladder_runs, ladder_counter_sets = (), ()
    if ladder:
        lack = [k for k in ("device", "date", "runs", "counters") if k not in ladder]
        if lack or "name" not in ladder.get("device", {}):
            raise ValueError(f"{where}: 'ladder' needs a device with a 'name', a date, runs "
                             f"and counters")
        ladder_runs, ladder_counter_sets = _entries(ladder, where, "ladder.")
        for item in ladder_runs + ladder_counter_sets:
            if "step" not in item.extra:
                raise ValueError(f"{where}: every ladder entry needs a 'step' "
                                 f"({item.kernel} at N={item.N} has none)")
        del ladder["runs"], ladder["counters"]
    return Reference(name=name, description=str(data["description"]),
                     device=MappingProxyType(dict(data["device"])),
                     software=MappingProxyType({k: str(v) for k, v in data["software"].items()}),
                     date=str(data["date"]), settings=MappingProxyType(dict(data["settings"])),
                     source=str(data["source"]), runs=runs,
                     counter_sets=counter_sets, ladder=MappingProxyType(ladder),
                     ladder_runs=ladder_runs, ladder_counter_sets=ladder_counter_sets)


def names() -> list[str]:
    """The machines with shipped figures, e.g. ['h200'] (one per data file)."""
    folder = resources.files("tilinglib") / "data"
    return sorted(p.name[len(_PREFIX):-len(_SUFFIX)] for p in folder.iterdir()
                  if p.name.startswith(_PREFIX) and p.name.endswith(_SUFFIX))


def load(name: str = "h200") -> Reference:
    """The shipped figures of machine `name` (see `names()`), checked and frozen.

    Raises KeyError listing the available names, ValueError for a malformed file."""
    if name not in names():
        raise KeyError(f"no reference figures named {name!r}; available: {', '.join(names())}")
    path = resources.files("tilinglib") / "data" / f"{_PREFIX}{name}{_SUFFIX}"
    return from_dict(json.loads(path.read_text(encoding="utf-8")), name)
