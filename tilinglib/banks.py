"""Shared-memory banks: which lane of a warp hits which bank, and how many passes that costs.

Introduced in lesson 05 (bank conflicts and padding). The model, for compute capability 5.0
and later: shared memory is 32 banks, each 4 bytes wide; the 4-byte word at byte address
``a`` lives in bank ``(a // 4) % 32``. One warp-wide access is served in *wavefronts*: in
each one, every bank delivers at most one word, and a word that several lanes want is sent
to all of them at once (a *broadcast*). So the access needs as many wavefronts as the
largest number of **distinct** words that any one bank holds among the lanes' addresses:
1 is conflict-free, 32 is the worst (every lane wants a different word of one bank).

Nsight Compute counts the same thing (``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld``,
and ``..._bank_conflicts_...`` = wavefronts beyond the ideal), and so does the emulator's
`LaunchReport`: one rule, ``tilinglib.toolchain.model.memory.shared_wavefronts``, which also
serves 8- and 16-byte accesses (float2, float4) in half and quarter warps. The pictures here draw one `WarpAccess` from the emulator's trace
(``f(..., trace=True)``; ``f.last_trace``) or any object with the same fields (`lanes`,
`words`, `banks`, `wavefronts`, `line`, `kind`, `array`)::

    from tilinglib import banks
    access = banks.find(f.last_trace, "Bs", kind="load")
    print(banks.describe(access))
    banks.plot_banks(access)
"""

from __future__ import annotations

from typing import Iterable, Sequence

from .gpu import BANK_BYTES, BANKS, WARP_SIZE, ceil_div
from .figure_cache import cached

__all__ = ["BANKS", "BANK_BYTES", "bank_of", "wavefronts", "bank_layout", "find", "describe",
           "plot_banks"]


def bank_of(byte_address: int) -> int:
    """The bank of the 4-byte word holding `byte_address` in a block's shared memory."""
    return (int(byte_address) // BANK_BYTES) % BANKS


def wavefronts(words: Iterable[int], *, size: int = 4, lanes: Iterable[int] | None = None,
               store: bool = False) -> int:
    """Wavefronts one warp needs to read (or, with `store=True`, write) these `words`.

    `words`: the first 4-byte word of each active lane's access (as in a trace's `words`);
    `size`: bytes per lane (4, 8 for a float2, 16 for a float4); `lanes`: the lane id (0-31)
    of each word, default 0, 1, 2, ... For 4 bytes: the largest number of distinct words in
    any one bank (lanes asking for the same word share it, a broadcast; different words in
    one bank take turns). Wider accesses are served in phases of the warp (half or quarter
    warps), each costing that much. The rule is the emulator's, `memory.shared_wavefronts`,
    so this equals the `LaunchReport` and the trace. 0 for no lanes. Raises ValueError for
    a lane outside 0-31, lanes not ascending, or a count of lanes unlike that of words."""
    import numpy as np

    from .toolchain.model.memory import shared_wavefronts

    w = np.fromiter((int(x) for x in words), dtype=np.int64)
    ln = (np.arange(w.shape[0], dtype=np.int64) if lanes is None
          else np.fromiter((int(x) for x in lanes), dtype=np.int64))
    if ln.shape != w.shape:
        raise ValueError(f"banks.wavefronts: {ln.shape[0]} lanes for {w.shape[0]} words; give "
                         f"one lane id per word")
    if w.shape[0] and (ln.min() < 0 or ln.max() >= BANKS or (np.diff(ln) <= 0).any()):
        raise ValueError("banks.wavefronts: lanes must be distinct lane ids 0-31 in ascending "
                         "order (one warp)")
    if w.shape[0] > BANKS:
        raise ValueError(f"banks.wavefronts: {w.shape[0]} words, but one warp has {WARP_SIZE} lanes")
    return shared_wavefronts(np.zeros(w.shape[0], dtype=np.int64), ln, w * BANK_BYTES,
                             int(size), bool(store), False)[0]


def bank_layout(access) -> dict[tuple[int, int], tuple[int, ...]]:
    """Which lanes the access serves where: {(bank, wavefront): lanes}.

    Each distinct word of a bank gets its own wavefront number (0, 1, ...), in the order of
    the lowest lane that asks for it; the value lists every lane that reads that word
    (several lanes: a broadcast). An 8- or 16-byte access (`access.size`, default 4) covers
    2 or 4 words per lane and is served in phases (half or quarter warps, by the rule of
    `wavefronts`): the wavefronts of a phase follow those of the phase before. The number
    of rows used is the access's wavefront count.
    """
    import numpy as np

    from .toolchain.model.memory import shared_phases

    size = int(getattr(access, "size", 4))
    per_lane = max(1, ceil_div(size, BANK_BYTES))
    pairs = sorted(zip(access.lanes, access.words))
    if not pairs:
        return {}
    lanes = np.array([int(l) for l, _ in pairs], dtype=np.int64)
    first = np.array([int(w) for _, w in pairs], dtype=np.int64)
    phase, _ = shared_phases(np.zeros(lanes.shape[0], dtype=np.int64), lanes,
                             first * BANK_BYTES, size, getattr(access, "kind", "load") == "store",
                             False)
    cells: dict[tuple[int, int], list[int]] = {}
    base = 0
    for p in sorted(set(int(x) for x in phase)):
        rows: dict[int, list[int]] = {}          # bank -> its distinct words, in order
        for lane, word0, ph in zip(lanes, first, phase):
            if int(ph) != p:
                continue
            for word in range(int(word0), int(word0) + per_lane):
                bank = word % BANKS
                words = rows.setdefault(bank, [])
                if word not in words:
                    words.append(word)
                cells.setdefault((bank, base + words.index(word)), []).append(int(lane))
        base += max(len(w) for w in rows.values())
    return {key: tuple(v) for key, v in sorted(cells.items())}


def find(trace: Sequence, array: str, *, kind: str = "load", line: int | None = None,
         space: str = "shared"):
    """The one access of `array` (`kind` "load" or "store", in `space`) in a trace.

    `line` narrows it down when the array is accessed on several lines. Raises LookupError
    listing what the trace holds when none or several match."""
    found = [a for a in trace if a.array == array and a.kind == kind and a.space == space
             and (line is None or a.line == line)]
    if len(found) == 1:
        return found[0]
    have = ", ".join(f"{a.space} {a.kind} of {a.array} at line {a.line}" for a in trace)
    what = "no" if not found else f"{len(found)}"
    raise LookupError(f"{what} {space} {kind} of {array!r}"
                      f"{'' if line is None else f' at line {line}'} in this trace; it has: "
                      f"{have or 'nothing'}")


def describe(access) -> str:
    """One line in words: what the warp touched and how many wavefronts it took."""
    distinct = len(set(access.words))
    banks = len(set(access.banks))
    lanes = len(access.lanes)
    ways = access.wavefronts
    ideal = getattr(access, "ideal_wavefronts", 1)
    if ways <= max(1, ideal):
        verdict = "conflict-free"
    else:
        verdict = f"a {ceil_div(ways, max(1, ideal))}-way bank conflict"
    share = (" (one word broadcast to every lane)" if distinct == 1 and lanes > 1 else
             f" ({lanes - distinct} lanes share a word with another lane)" if distinct < lanes
             else "")
    return (f"line {access.line}, {access.kind} of {access.array}: {lanes} lanes, "
            f"{distinct} distinct word{'s' if distinct != 1 else ''}{share} in {banks} "
            f"bank{'s' if banks != 1 else ''}: {ways} wavefront{'s' if ways != 1 else ''}, "
            f"{verdict}")


def _lane_text(lanes: tuple[int, ...]) -> str:
    if len(lanes) == 1:
        return str(lanes[0])
    if list(lanes) == list(range(lanes[0], lanes[-1] + 1)):
        return f"{lanes[0]}–{lanes[-1]}"
    return f"{len(lanes)} lanes"


@cached("ax")
def plot_banks(access, ax=None, *, title: str | None = None):
    """Draw one warp access: a column per bank, a row per wavefront, lanes in the cells.

    A cell holds the lanes served by that bank in that wavefront (a range such as "0–31"
    when one word is broadcast to many lanes). A conflict-free access fills one row; an
    n-way conflict stacks n rows in some bank. The colour says why a cell is there, with a
    key under the picture: blue, one lane served its own word; green, one word broadcast to
    several lanes; red, a bank asked for several distinct words (a conflict: one wavefront
    per word). Returns the Axes; its cells are also in ``ax.bank_cells``
    ({(bank, wavefront): lanes}, the data drawn)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.transforms import ScaledTranslation

    layout = bank_layout(access)
    rows = max((r for _, r in layout), default=-1) + 1
    depth = {}
    for bank, row in layout:
        depth[bank] = max(depth.get(bank, 0), row + 1)
    kinds = {"own": ("C0", "one lane, its own word"),
             "broadcast": ("C2", "one word broadcast to several lanes"),
             "conflict": ("C3", "bank conflict: several words in one bank, one wavefront each")}
    own = ax is None
    if own:
        _, ax = plt.subplots(figsize=(10, 1.9 + 0.22 * max(rows, 1)))
    used = []
    for (bank, row), lanes in layout.items():
        kind = "conflict" if depth[bank] > 1 else ("broadcast" if len(lanes) > 1 else "own")
        if kind not in used:
            used.append(kind)
        ax.add_patch(Rectangle((bank, row), 1, 1, facecolor=kinds[kind][0], alpha=0.45,
                               edgecolor="white"))
        ax.text(bank + 0.5, row + 0.5, _lane_text(lanes), ha="center", va="center",
                fontsize=6 if len(lanes) > 1 else 7)
    ax.set_xlim(0, BANKS)
    ax.set_ylim(max(rows, 1), 0)
    ax.set_xticks([b + 0.5 for b in range(BANKS)], [str(b) for b in range(BANKS)], fontsize=7)
    # Every wavefront numbered up to 8 rows; past that 1, 4, 8, 12, ... (a tick label is
    # most of a plot's drawing time, and a 32-way conflict needs no 32 numbers to read).
    shown = range(max(rows, 1)) if rows <= 8 else [0] + list(range(3, rows, 4))
    ax.set_yticks([r + 0.5 for r in shown], [str(r + 1) for r in shown], fontsize=7)
    ax.set_xlabel("bank (the cells list the lanes it serves)")
    ax.set_ylabel("wavefront")
    ax.set_title(title or f"{access.kind} of {access.array} (line {access.line}): "
                          f"{access.wavefronts} wavefront{'s' if access.wavefronts != 1 else ''}",
                 fontsize=10)
    order = [k for k in kinds if k in used]
    ax.legend(handles=[Patch(facecolor=kinds[k][0], alpha=0.45, label=kinds[k][1]) for k in order],
              loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(order), fontsize=8,
              frameon=False,   # under the bank axis and its label, whatever the figure's height
              bbox_transform=ax.transAxes + ScaledTranslation(0, -0.42, ax.figure.dpi_scale_trans))
    ax.set_aspect("auto")
    ax.bank_cells = layout
    if own:
        from .plots import finished

        finished(ax.figure)
    return ax
