"""Exercises of lesson 05 (bank conflicts and padding): banks, wavefronts, padding, swizzling.

Each check runs the access on the emulator (`tilinglib.toolchain.backends.emulator`, always the CPU, so the
counts are the same on every machine) and explains a wrong answer with what the emulator
counted: wavefronts per request, and the words that share the busiest bank.
"""

from __future__ import annotations

import warnings

from functools import lru_cache

import numpy as np

from ..banks import BANKS, bank_of
from . import Wrong, exercise
from .common import as_tuple, require_number, require_whole


def _busiest(words) -> str:
    """'bank b holds n distinct words (w0, w1, ...)' for the bank with the most words."""
    per_bank: dict[int, list[int]] = {}
    for w in words:
        ws = per_bank.setdefault(int(w) % BANKS, [])
        if int(w) not in ws:
            ws.append(int(w))
    bank, ws = max(per_bank.items(), key=lambda kv: (len(kv[1]), -kv[0]))
    shown = ", ".join(map(str, ws[:4])) + (", ..." if len(ws) > 4 else "")
    return (f"bank {bank} holds {len(ws)} distinct word{'s' if len(ws) != 1 else ''} "
            f"({shown}); the warp uses {len(per_bank)} of the 32 banks")


# --- 05.1 ------------------------------------------------------------------------------------

@exercise("05.1", "The bank of an element of a 2-D shared array")
def _bank(answer):
    if not isinstance(answer, dict):
        raise Wrong("the answer is the dict the cell builds: {(row, col, row_words): bank(...)}.")
    cases = sorted(answer)
    if len(cases) < 8:
        raise Wrong("keep the cell's last line as it is: it tries many rows, columns and row "
                    "lengths.")
    got = {case: require_number(answer[case], f"bank{case}") for case in cases}
    wrong = [(r, c, n) for r, c, n in cases if got[r, c, n] != bank_of(4 * (r * n + c))]
    if not wrong:
        return ("word = row x row_words + col, bank = word % 32. With 32-word rows a column "
                "stays in one bank; with 33-word rows each row moves one bank on.")
    # Name the mistake when one wrong model explains every answer, else show the first case.
    models = (
        (lambda r, c, n: r * n + c,
         "There are 32 banks (0 to 31): the word index wraps around (% 32)."),
        (lambda r, c, n: c % BANKS,
         "The row matters: each row moves the start by row_words words, which is what "
         "padding changes."),
        (lambda r, c, n: 4 * (r * n + c) % BANKS,
         "That is the byte address mod 32; a bank is one 4-byte word wide, so count words, "
         "not bytes."),
    )
    r, c, n = wrong[0]
    word = r * n + c
    where = (f"bank({r}, {c}, {n}) gives {got[r, c, n]:g}: element [{r}][{c}] of rows of {n} "
             f"floats is word {r} x {n} + {c} = {word}, in bank {word} % 32 = {word % BANKS}")
    for model, why in models:
        if all(got[case] == model(*case) for case in cases):
            raise Wrong(f"{where}. {why}")
    raise Wrong(f"{where}.")


# --- 05.2 ------------------------------------------------------------------------------------

_PROBE = r'''
__global__ void probe(float* out)
{
    __shared__ float s[1024];
    for (int i = threadIdx.x; i < 1024; i += 32) s[i] = i;
    __syncthreads();
    out[threadIdx.x] = s[%s];
}
'''

PATTERNS = ("2 * threadIdx.x", "threadIdx.x / 2", "16 * threadIdx.x", "32 * (threadIdx.x % 8)")


@lru_cache(maxsize=None)
def probe_read(index: str):
    """(wavefronts, words) of one warp reading ``s[index]`` from ``float s[1024]`` (emulator)."""
    from ..toolchain.backends.emulator import Out, SourceModule

    out = np.zeros(32, dtype=np.float32)
    f = SourceModule(_PROBE % index).get_function("probe")
    f(Out(out), block=(32, 1, 1), grid=(1, 1), trace=True)
    read = [a for a in f.last_trace if a.space == "shared" and a.kind == "load"][0]
    return f.last_report.shared_load_wavefronts, read.words


@exercise("05.2", "Predict the wavefronts of four reads")
def _predict(answer):
    if not isinstance(answer, dict) or set(answer) != set(PATTERNS):
        raise Wrong(f"keep the four patterns of the cell as keys: {', '.join(PATTERNS)}.")
    for index in PATTERNS:
        got = require_number(answer[index], f"the prediction for s[{index}]")
        counted, words = probe_read(index)
        if got != counted:
            raise Wrong(f"s[{index}]: you predicted {got:g}; the emulator counts {counted} "
                        f"wavefront{'s' if counted != 1 else ''} for the warp: {_busiest(words)}. "
                        f"Lanes that read the same word share it (broadcast); different words "
                        f"in one bank take one wavefront each.")
    return ("2, 1, 16 and 8: count the distinct words in the busiest bank. A broadcast is free; "
            "a stride of 2 words already costs 2 wavefronts.")


# --- 05.3 and 05.5: the transpose's tile -------------------------------------------------------

_TILE_LINE = "    __shared__ float T[TILE][TILE + PAD];"


def transpose_with(declaration: str, n: int = 64):
    """Run transposeShared with `declaration` instead of its tile's; returns (report, load, ok)."""
    from .. import kernels
    from ..toolchain.backends.emulator import In, Out, SourceModule
    from ..errors import CompileError

    if not isinstance(declaration, str):
        raise Wrong(f"declaration should be one line of CUDA C as a str, such as "
                    f"\"__shared__ float T[32][32];\", not {declaration!r}.")
    if "__shared__" not in declaration:
        raise Wrong(f"{declaration.strip()!r} declares T in each thread's registers or local "
                    f"memory; the tile is shared by the block: start the line with __shared__.")
    src = kernels.load("transpose")
    assert _TILE_LINE in src, "transpose.cu changed: update tilinglib.exercises.lesson05"
    line = src[:src.index(_TILE_LINE)].count("\n") + 1
    src = src.replace(_TILE_LINE, "    " + declaration.strip())
    a = np.arange(n * n, dtype=np.float32).reshape(n, n)
    out = np.zeros_like(a)
    try:
        f = SourceModule(src).get_function("transposeShared")
    except CompileError as err:
        raise Wrong(f"your declaration is line {line} of the kernel, and the kernel does not "
                    f"compile:\n{err}") from None
    with warnings.catch_warnings():
        # (the emulator would suggest another block for a tile that is not 32 wide; the
        # exercise's launch is fixed and its check says what the declaration does)
        warnings.simplefilter("ignore")
        f(np.int32(n), In(a), Out(out), block=(32, 32, 1), grid=(n // 32, n // 32),
          trace=True, hazards="ignore")
    load = [x for x in f.last_trace if x.space == "shared" and x.kind == "load"][0]
    return f.last_report, load, bool(np.array_equal(out, a.T))


def _per_request(report) -> float:
    return report.shared_load_wavefronts / report.shared_load_instructions


@exercise("05.3", "Pad the transpose's tile")
def _transpose_pad(answer):
    report, load, ok = transpose_with(answer)
    if not ok:
        raise Wrong(f"with {answer.strip()} the kernel runs but out is not the transpose: T must "
                    f"hold the 32 x 32 tile, T[threadIdx.y][threadIdx.x] for every thread.")
    ways = _per_request(report)
    if ways > 1:
        raise Wrong(f"T[threadIdx.x][threadIdx.y] still takes {ways:g} wavefronts per request "
                    f"({report.shared_load_wavefronts:,} for {report.shared_load_instructions:,} "
                    f"warp loads): {_busiest(load.words)}. Lane i reads word "
                    f"(row length) x i + threadIdx.y: choose the row length, the last dimension, "
                    f"so that those words fall in 32 different banks.")
    extra = (f" ({report.shared_store_wavefronts - report.shared_store_instructions:,} store "
             f"conflicts remain)" if report.shared_store_wavefronts > report.shared_store_instructions
             else "")
    return (f"1 wavefront per column read ({report.shared_load_wavefronts:,} for "
            f"{report.shared_load_instructions:,} loads){extra}: rows of 33 words put lane i in "
            f"bank (i + threadIdx.y) % 32.")


@exercise("05.5", "A pad of two: [32][34]")
def _pad_two(answer):
    got = require_number(answer, "predicted")
    report, load, _ = transpose_with("__shared__ float T[32][34];")
    ways = _per_request(report)
    if got != ways:
        raise Wrong(f"you predicted {got:g}; the emulator counts {ways:g} wavefronts per column "
                    f"read: {_busiest(load.words)}. Lane i reads word 34i + threadIdx.y, in bank "
                    f"(2i + threadIdx.y) % 32: lanes i and i + 16 share a bank.")
    return ("2 wavefronts: a row of 34 words moves 2 banks, so only 16 banks are used. A pad "
            "helps when the row length is odd (33, 35, ...).")


# --- 05.4 ------------------------------------------------------------------------------------

@exercise("05.4", "Bs[k][tx] by hand, TILE = 16")
def _by_hand(answer):
    lanes = (0, 15, 16, 31)
    if not isinstance(answer, dict) or set(answer) != set(lanes):
        raise Wrong("the answer is a dict {lane: (word, bank)} for lanes 0, 15, 16 and 31.")
    k = 3
    for lane in lanes:
        pair = answer[lane]
        pair = as_tuple(pair, 2, f"lane {lane} a pair (word, bank)")
        word, bank = (require_number(v, f"lane {lane}'s {name}")
                      for v, name in zip(pair, ("word", "bank")))
        tx, ty = lane % 16, lane // 16
        want = 16 * k + tx
        if word != want and word != 256 + want:    # from the start of Bs, or of the block's memory
            hint = " ty does not appear in Bs[k][tx]." if word == want + 16 * ty else ""
            raise Wrong(f"lane {lane} is thread (tx, ty) = ({tx}, {ty}) (lane = tx + 16 ty); it "
                        f"reads Bs[{k}][{tx}], word {k} x 16 + {tx} = {want} of Bs.{hint}")
        if bank != bank_of(4 * (256 + want)):
            raise Wrong(f"lane {lane}: word {want} of Bs (Bs starts at word 256, after As's 256 "
                        f"words) is in bank {bank_of(4 * (256 + want))}, not {bank:g}.")
    return ("lanes 0 and 16 read the same word (48, bank 16), so do 15 and 31 (63, bank 31): two "
            "lanes per bank, but one word per bank, broadcast to both: 1 wavefront.")


# --- 05.6 ------------------------------------------------------------------------------------

@exercise("05.6", "The TILE = 16 store conflict, fixed")
def _pad16(answer):
    from ..sgemm import count_tiled

    got = require_whole(answer, "pad")
    if not 0 <= got <= 64:
        raise Wrong(f"pad should be a whole number of floats from 0 to 64, not {answer!r}.")
    report, error = count_tiled(64, 16, pad=int(got), hazards="ignore")
    loads = report.shared_load_wavefronts / report.shared_load_instructions
    stores = report.shared_store_wavefronts / report.shared_store_instructions
    if loads > 1 or stores > 1:
        row = 16 + int(got)
        raise Wrong(f"with PAD = {int(got)} (rows of {row} words) the emulator counts {stores:g} "
                    f"wavefronts per store and {loads:g} per load. Lanes 16-31 have ty = 1: "
                    f"they write words {row}-{row + 15}, banks {row % 32}-{(row + 15) % 32}; "
                    f"lanes 0-15 use banks 0-15. Which row length puts lanes 16-31 in banks 16-31?")
    return (f"PAD = {int(got)}: 1 wavefront per store and per load. Rows of 16 words (PAD = 0) "
            f"already put the second row in banks 16-31: the unpadded tile has no conflict, and "
            f"only a pad that is a multiple of 32 keeps it so.")


# --- 05.7 ------------------------------------------------------------------------------------

_SWIZZLED = r'''
__global__ void transposeSwizzled(int N, const float* __restrict__ in, float* __restrict__ out)
{
    __shared__ float T[32][32];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    T[threadIdx.y][(threadIdx.x + threadIdx.y) % 32] = in[y * N + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    out[y * N + x] = T[threadIdx.x][READ_COLUMN];
}
'''


@exercise("05.7", "Swizzling instead of padding")
def _swizzle(answer):
    from ..toolchain.backends.emulator import In, Out, SourceModule

    if not isinstance(answer, str):
        raise Wrong(f"read_column should be a CUDA C expression as a str, not {answer!r}.")
    n = 64
    a = np.arange(n * n, dtype=np.float32).reshape(n, n)
    out = np.zeros_like(a)
    f = SourceModule(_SWIZZLED.replace("READ_COLUMN", answer)).get_function("transposeSwizzled")
    f(np.int32(n), In(a), Out(out), block=(32, 32, 1), grid=(2, 2), trace=True, hazards="ignore")
    r = f.last_report
    if not np.array_equal(out, a.T):
        bad = np.argwhere(out != a.T)[0]
        raise Wrong(f"T[threadIdx.x][{answer}] is not the transpose: out[{bad[0]}][{bad[1]}] "
                    f"is {out[tuple(bad)]:g}, not {a.T[tuple(bad)]:g}. The thread that stored "
                    f"row r, column c of the tile wrote it at column (c + r) % 32 of row r; a "
                    f"reader of row threadIdx.x, column threadIdx.y must look there.")
    ways = r.shared_load_wavefronts / r.shared_load_instructions
    if ways > 1:
        raise Wrong(f"it transposes, but the read takes {ways:g} wavefronts per request: lanes "
                    f"differ in threadIdx.x, so the column must differ too.")
    return ("a correct transpose and 1 wavefront per read, with no memory wasted; the price is "
            "an add and a modulo in every index (cheap next to a 32-way conflict).")
