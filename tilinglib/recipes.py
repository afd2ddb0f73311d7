"""One recipe per course kernel: the facts about each ``__global__`` function of
`tilinglib.kernels`, written once.

A `Recipe` says which file and function a kernel is, the ``-D`` parameters it reads (with
the defaults the course uses), the launch it needs as a function of those parameters and the
matrix sizes, the parameter values it refuses (`Recipe.valid`, with the reason) and, for the
SGEMM kernels, the bytes per FMA and the static shared memory its tile shape asks for::

    from tilinglib import recipes
    r = recipes.get("tiled")
    r.options({"TILE": 16})               # ['-DTILE=16']: the one place -D options are written
    r.launch(64, 64, 64, {"TILE": 16})    # ((16, 16, 1), (4, 4))
    r.valid({"TILE": 64})                 # the reason: 4,096 threads per block
    f = r.compile()                       # the function, on the notebook's backend

`tilinglib.ladder`'s steps are the recipes of the SGEMM ladder (``ladder.Step`` is `Recipe`).
Sizes: every recipe's launch takes (M, N, K), C = A (M x K) · B (K x N). Kernels of one size
take it as N (the square SGEMM kernels and the transposes: M = N = K, or K unused for the
transposes) or, for ``saxpy``, as M (the vector length n; N and K unused).
Units: threads, bytes, bytes per FMA.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from .errors import ArgumentError
from .gpu import MAX_THREADS_PER_BLOCK, WARP_SIZE, ceil_div

__all__ = ["Recipe", "Joint", "RECIPES", "get", "names", "options", "for_file",
           "MAX_STATIC_SHARED", "MAX_REGISTERS", "REGISTERS_PER_SM",
           "FLOAT", "WARP_LAYOUT"]

MAX_STATIC_SHARED = 48 * 1024      # static __shared__ bytes per block (more needs dynamic opt-in)
MAX_REGISTERS = 255                # registers per thread ptxas can give before spilling
REGISTERS_PER_SM = 65536           # registers one SM (compute capability 9.0) holds
FLOAT = 4                          # bytes

Params = Mapping[str, int]


def options(params: Params) -> list[str]:
    """nvcc-style ``-D`` options for `params`, in their order: ``{"TILE": 16, "PAD": 1}`` ->
    ``['-DTILE=16', '-DPAD=1']``. The one place the course formats its ``-D`` options."""
    return [f"-D{k}={v}" for k, v in params.items()]


@dataclass(frozen=True)
class Joint:
    """Parameters of a recipe that only change together, as one choice (a widget's one control).

    `name`: what the choice is called (``"warp layout"``); `parameters`: the names it sets,
    e.g. ('WM', 'WN', 'WMITER', 'WNITER', 'TM', 'TN'); `label`: a `str.format` template over
    them that reads as the field says it (``"warp {WM}x{WN}, ..."``).

    Why they go together: the recipe's rules tie them so that no one of them can change alone
    (the warp-tiled kernels need (WM/WMITER/TM) x (WN/WNITER/TN) = 32 lanes per warp step:
    doubling or halving any one of the six alone breaks it)."""

    name: str
    parameters: tuple[str, ...]
    label: str

    def describe(self, params: Params) -> str:
        """The readable label of this choice for `params` (which must hold `parameters`)."""
        return self.label.format(**{k: params[k] for k in self.parameters})


def _no_formula(what: str):
    def missing(p):
        raise ArgumentError(f"this kernel has no {what} formula")
    return missing


@dataclass(frozen=True)
class Recipe:
    """One course kernel: its file, its function, its ``-D`` parameters and what they imply.

    `name`: the short name (``"coarse"``); `title`: the technique in the field's words;
    `kernel`: the file in `tilinglib.kernels` (``"sgemm_coarse"``; also `file`); `function`:
    the ``__global__`` function's name; `defaults`: parameter name -> default value, in the
    order the macros are listed; `optional`: macros the kernel also reads that are passed only
    when given (lesson 03's ``PAD``; value: the kernel's own default); `lesson`: the lesson
    that introduces it; `square_only`: True for a kernel that takes N alone (M = N = K);
    `joint`: `Joint` groups of parameters that the rules let change only together.

    The methods take `params`, a mapping of parameter names to whole numbers; missing names
    take their defaults (`resolve`). Units: threads, bytes, bytes per FMA. The byte and
    register formulas raise ArgumentError on a recipe that has none (saxpy, the transposes).
    """

    name: str
    title: str
    kernel: str
    function: str
    defaults: Mapping[str, int]
    lesson: int
    _block: Callable[[dict], tuple] = field(repr=False)
    _grid: Callable[[int, int, int, dict], tuple] = field(repr=False)
    _global_bytes_per_fma: Callable[[dict], float] = field(
        default=_no_formula("global bytes per FMA"), repr=False)
    _shared_bytes_per_fma: Callable[[dict], float] = field(
        default=_no_formula("shared bytes per FMA"), repr=False)
    _shared_bytes: Callable[[dict], int] = field(default=lambda p: 0, repr=False)
    _registers_estimate: Callable[[dict], int] | None = field(default=None, repr=False)
    _rules: Callable[[dict], str | None] = field(default=lambda p: None, repr=False)
    square_only: bool = False
    notes: str = ""
    may_be_zero: tuple = ()          # parameters for which 0 is a valid value (padding)
    shared_load_width: int = FLOAT   # bytes per lane of each shared load (16: float4)
    also_measured: tuple = ()        # tile shapes besides the default that the bench measures
    joint: tuple = ()                # `Joint` groups of parameters that change only together
    _adds_into_c: Callable[[dict], bool] = field(default=lambda p: False, repr=False)
    optional: Mapping[str, int] = field(default_factory=dict)

    @property
    def file(self) -> str:
        """The kernel file in `tilinglib.kernels` (the same as `kernel`)."""
        return self.kernel

    @property
    def parameters(self) -> tuple[str, ...]:
        """The tile-shape parameter names, e.g. ('BM', 'BN', 'BK', 'TM') (not `optional`)."""
        return tuple(self.defaults)

    def resolve(self, params: Params | None = None) -> dict[str, int]:
        """`params` completed with the defaults, as a new dict of ints (`optional` names only
        where given).

        Raises ArgumentError for a name this recipe does not have or a value that is not a
        whole number."""
        out = dict(self.defaults)
        for key, value in dict(params or {}).items():
            if type(value) is int and key in out:       # the common case, checked cheaply
                out[key] = value
                continue
            if key not in self.defaults and key not in self.optional:
                raise ArgumentError(f"{self.name!r} has no parameter {key!r}; its parameters "
                                    f"are {', '.join(list(self.defaults) + list(self.optional))}")
            if isinstance(value, bool) or int(value) != value:
                raise ArgumentError(f"{key}={value!r}: {self.name!r} needs a whole number")
            out[key] = int(value)
        return out

    def options(self, params: Params | None = None) -> list[str]:
        """The compiler options for this parameter choice, e.g. ['-DBM=64', '-DBN=64', ...]."""
        return options(self.resolve(params))

    def defines(self, params: Params | None = None) -> list[str]:
        """`options` by its older name (the ladder's)."""
        return self.options(params)

    def block(self, params: Params | None = None) -> tuple[int, int, int]:
        """The block shape, (x, y, z). The ladder's kernels after ``tiled`` use 1-D blocks."""
        return tuple(int(b) for b in self._block(self.resolve(params)))

    def threads(self, params: Params | None = None) -> int:
        """Threads per block for this parameter choice (the product of `block`)."""
        return int(np.prod(self.block(params)))

    def grid(self, M: int, N: int, params: Params | None = None, K: int | None = None
             ) -> tuple[int, ...]:
        """The grid for an M x N result: (ceil(N / block tile width), ceil(M / height)), and
        for a recipe that splits K among blocks (``tuned`` with SPLITK > 1) a third entry, the
        number of K chunks; ``tuned`` with TAILWAVE: one entry, the whole tiles and the tail's
        chunks (sgemm_tuned.cu's launch comment). `K` (default N) matters to no course kernel's grid so far."""
        return tuple(self._grid(int(M), int(N), int(N if K is None else K),
                                self.resolve(params)))

    def blocks(self, M: int, N: int, params: Params | None = None) -> int:
        """Blocks in the grid for an M x N result (the product of `grid`'s entries)."""
        return int(np.prod(self.grid(M, N, params)))

    def launch(self, M: int, N: int, K: int, params: Params | None = None
               ) -> tuple[tuple[int, int, int], tuple[int, ...]]:
        """(block, grid) for C (M x N) = A (M x K) · B (K x N) with this parameter choice.

        Raises ArgumentError when the parameters are not `valid` or the recipe cannot take
        the sizes (the reason is in the message)."""
        p = self.checked(M, N, K, params)
        return self.block(p), self.grid(M, N, p, K)

    def checked(self, M: int, N: int, K: int, params: Params | None = None) -> dict[str, int]:
        """The resolved parameters, after `valid` and `shape_error` (ArgumentError if not)."""
        p = self.resolve(params)
        why = self.valid(p)
        if why:
            raise ArgumentError(f"{self.name} with {_shape_text(p)} cannot launch: {why}")
        why = self.shape_error(M, N, K, p)
        if why:
            raise ArgumentError(why)
        return p

    def adds_into_c(self, params: Params | None = None) -> bool:
        """True when the blocks add their results into C (split-K's atomicAdd), so C must
        hold zeros before the launch: `ladder.run` and `count` pass a zeroed C as ``InOut``."""
        return bool(self._adds_into_c(self.resolve(params)))

    def shared_bytes(self, params: Params | None = None) -> int:
        """Static ``__shared__`` bytes per block (the tiles staged in shared memory)."""
        return self._shared_bytes(self.resolve(params))

    def registers_estimate(self, params: Params | None = None) -> int:
        """A rough count of the registers per thread the tile shape needs (accumulators,
        register fragments, plus about 30 for addresses, indices and loop counters).

        Only an estimate, used by `valid` to refuse shapes that would certainly spill: ptxas
        decides the real number (PyCUDA's ``Function.num_regs`` on a GPU; the reference
        data elsewhere). Raises ArgumentError for a recipe without an estimate."""
        if self._registers_estimate is None:
            raise ArgumentError(f"{self.name!r} has no register estimate")
        return self._registers_estimate(self.resolve(params))

    def valid(self, params: Params | None = None) -> str | None:
        """None when the parameters can launch and compute correctly, else the reason.

        Checks: whole positive values, the divisibility the kernel's thread layout needs,
        threads per block a multiple of 32 and at most 1,024, static shared memory at most
        48 KiB, and (where the recipe has one) an estimated register count
        (`registers_estimate`) at most 255 per thread and 65,536 per block. Unknown
        parameter names are a reason too."""
        try:
            p = self.resolve(params)
        except ArgumentError as exc:
            return str(exc)
        zero_ok = tuple(self.may_be_zero) + tuple(k for k in self.optional if k in p)
        bad = [k for k, v in p.items() if v < (0 if k in zero_ok else 1)]
        if bad:
            least = ("at least 1" if not zero_ok else
                     f"at least 1 ({', '.join(zero_ok)}: at least 0)")
            return f"{', '.join(f'{k}={p[k]}' for k in bad)}: every parameter must be {least}"
        why = self._rules(p)
        if why:
            return why
        t = int(np.prod(self._block(p)))
        if t > MAX_THREADS_PER_BLOCK:
            return f"{t:,} threads per block: a block holds at most {MAX_THREADS_PER_BLOCK:,}"
        if t % WARP_SIZE:
            return (f"{t} threads per block is not a multiple of {WARP_SIZE}: the last warp would "
                    f"run partly empty")
        s = self._shared_bytes(p)
        if s > MAX_STATIC_SHARED:
            return (f"{s:,} bytes of static shared memory: a block may have at most "
                    f"{MAX_STATIC_SHARED:,} (48 KiB); make the tiles smaller")
        if self._registers_estimate is None:
            return None
        r = self._registers_estimate(p)
        if r > MAX_REGISTERS:
            return (f"about {r} registers per thread: a thread has at most {MAX_REGISTERS}, so "
                    f"the accumulators would spill to local memory; make TM x TN smaller")
        if r * t > REGISTERS_PER_SM:
            return (f"about {r} registers x {t} threads = {r * t:,} registers: more than an "
                    f"SM's {REGISTERS_PER_SM:,}, so the block could not launch")
        return None

    def shape_error(self, M: int, N: int, K: int, params: Params | None = None) -> str | None:
        """None when this recipe can take the sizes ((M x K) times (K x N)), else why not."""
        for what, v in (("M", M), ("N", N), ("K", K)):
            if isinstance(v, bool) or int(v) != v or v < 1:
                return f"{what}={v!r}: matrix sizes must be whole numbers >= 1"
        if self.square_only:
            tile = self.resolve(params)["TILE"]
            if not M == N == K:
                return (f"{self.name!r} is lesson {self.lesson:02d}'s kernel: it takes square "
                        f"matrices only (M = N = K), not {M}x{K} times {K}x{N}")
            if N % tile:
                return f"{self.name!r} needs N % TILE == 0; N={N}, TILE={tile}"
        return None

    def global_bytes_per_fma(self, params: Params | None = None) -> float:
        """Global-memory bytes requested per FMA (loads of A and B) at tile-multiple shapes.

        A block tile of BM x BN outputs stages BM·BK floats of A and BK·BN of B for BM·BN·BK
        FMAs: 4 (BM + BN) / (BM BN) bytes per FMA (8 / TILE for the tiled kernel)."""
        return self._global_bytes_per_fma(self.resolve(params))

    def shared_bytes_per_fma(self, params: Params | None = None) -> float:
        """Shared-memory bytes requested per FMA (loads only) at tile-multiple shapes.

        Tiled: 2 loads per FMA, 8 bytes. 1-D blocking: TM + 1 loads per TM FMAs. 2-D
        blocking (and vec4): TM + TN floats per TM·TN FMAs. Warp tiling: a lane holds
        RM = WMITER·TM rows and RN = WNITER·TN columns, RM + RN floats per RM·RN FMAs.
        4 bytes per float and lane (a float4 load is 4 floats)."""
        return self._shared_bytes_per_fma(self.resolve(params))

    def compile(self, params: Params | None = None, *, source: str | None = None,
                emulator: bool = False):
        """The compiled function: `source` (default: the recipe's file) with `options(params)`,
        on the notebook's backend, or the CPU emulator when `emulator`. Raises what compiling
        raises (`CompileError`)."""
        from . import kernels

        if emulator:
            from .toolchain.backends.emulator import SourceModule
        else:
            from .backend import get_backend
            SourceModule = get_backend().SourceModule
        src = kernels.load(self.kernel) if source is None else source
        return SourceModule(src, options=self.options(params)).get_function(self.function)


def _shape_text(p: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items())



def _block_tile_grid(M: int, N: int, K: int, p: dict) -> tuple[int, int]:
    """One block per BM x BN tile of C: (ceil(N / BN), ceil(M / BM))."""
    return ceil_div(N, p["BN"]), ceil_div(M, p["BM"])


#: What the 2-D register-blocked kernels (regtile2d, vec4) share: one thread per TM x TN
#: piece of the BM x BN tile, both tiles of BK staged once per step.
_REGISTER_BLOCKED = dict(
    _block=lambda p: ((p["BM"] // p["TM"]) * (p["BN"] // p["TN"]), 1, 1),
    _grid=_block_tile_grid,
    _global_bytes_per_fma=lambda p: FLOAT * (p["BM"] + p["BN"]) / (p["BM"] * p["BN"]),
    _shared_bytes_per_fma=lambda p: FLOAT * (p["TM"] + p["TN"]) / (p["TM"] * p["TN"]),
    _shared_bytes=lambda p: (p["BM"] * p["BK"] + p["BK"] * p["BN"]) * FLOAT,
    _registers_estimate=lambda p: p["TM"] * p["TN"] + p["TM"] + p["TN"] + _OVERHEAD_REGISTERS)


def _tile_rules(p: dict) -> str | None:
    if p["TILE"] > 32:
        return (f"TILE={p['TILE']}: the tiled kernel runs one thread per output of the tile, "
                f"TILE x TILE = {p['TILE'] ** 2:,} threads, over 1,024")
    return None


def _coarse_rules(p: dict) -> str | None:
    if p["BM"] % p["TM"]:
        return (f"TM={p['TM']} does not divide BM={p['BM']}: each thread owns TM rows of the "
                f"BM-row tile, so BM must be a multiple of TM")
    return None


def _regtile2d_rules(p: dict) -> str | None:
    if p["BM"] % p["TM"]:
        return (f"TM={p['TM']} does not divide BM={p['BM']}: each thread owns TM rows of the "
                f"BM-row tile")
    if p["BN"] % p["TN"]:
        return (f"TN={p['TN']} does not divide BN={p['BN']}: each thread owns TN columns of "
                f"the BN-column tile")
    return None


_OVERHEAD_REGISTERS = 30   # addresses, indices, loop counters (a rough allowance)

TILED = Recipe(
    name="tiled", title="shared-memory tiling (lesson 03)", kernel="sgemm_tiled",
    function="sgemmTiled", defaults={"TILE": 32}, optional={"PAD": 0}, lesson=3,
    _block=lambda p: (p["TILE"], p["TILE"], 1),
    _grid=lambda M, N, K, p: (ceil_div(N, p["TILE"]), ceil_div(M, p["TILE"])),
    _global_bytes_per_fma=lambda p: 2 * FLOAT / p["TILE"],
    _shared_bytes_per_fma=lambda p: 2.0 * FLOAT,
    _shared_bytes=lambda p: 2 * p["TILE"] * (p["TILE"] + p.get("PAD", 0)) * FLOAT,
    _registers_estimate=lambda p: 1 + _OVERHEAD_REGISTERS,
    _rules=_tile_rules, square_only=True,
    notes="lesson 03's kernel, unchanged: sgemmTiled(int N, A, B, C), square, N % TILE == 0")

COARSE = Recipe(
    name="coarse", title="thread coarsening: 1-D register blocking", kernel="sgemm_coarse",
    function="sgemmCoarse", defaults={"BM": 64, "BN": 64, "BK": 8, "TM": 8}, lesson=7,
    _block=lambda p: (p["BN"] * (p["BM"] // p["TM"]), 1, 1),
    _grid=_block_tile_grid,
    _global_bytes_per_fma=lambda p: FLOAT * (p["BM"] + p["BN"]) / (p["BM"] * p["BN"]),
    _shared_bytes_per_fma=lambda p: FLOAT * (p["TM"] + 1) / p["TM"],
    _shared_bytes=lambda p: (p["BM"] * p["BK"] + p["BK"] * p["BN"]) * FLOAT,
    _registers_estimate=lambda p: p["TM"] + 1 + _OVERHEAD_REGISTERS,
    _rules=_coarse_rules)

REGTILE2D = Recipe(
    name="regtile2d", title="2-D register blocking", kernel="sgemm_regtile2d",
    function="sgemmRegtile2d", defaults={"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8},
    lesson=7,
    **_REGISTER_BLOCKED,
    _rules=_regtile2d_rules,
    also_measured=({"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 4},
                   {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 4},
                   {"BM": 128, "BN": 128, "BK": 8, "TM": 16, "TN": 8}))

def _vec4_rules(p: dict) -> str | None:
    why = _regtile2d_rules(p)
    if why:
        return why
    for k in ("BK", "BN", "TM", "TN"):
        if p[k] % 4:
            return (f"{k}={p[k]} is not a multiple of 4: the kernel moves the tiles as float4 "
                    f"(4 floats at a time)")
    return None


def _warp_step(p: dict) -> tuple[int, int]:
    """The lanes of one warp step: (rows, columns) of TM x TN pieces."""
    return p["WM"] // p["WMITER"] // p["TM"], p["WN"] // p["WNITER"] // p["TN"]


def _warptile_rules(p: dict) -> str | None:
    for big, small in (("BM", "WM"), ("BN", "WN")):
        if p[big] % p[small]:
            return (f"{small}={p[small]} does not divide {big}={p[big]}: the block tile is "
                    f"cut into whole warp tiles")
    for w, it, t in (("WM", "WMITER", "TM"), ("WN", "WNITER", "TN")):
        if p[w] % p[it] or (p[w] // p[it]) % p[t]:
            return (f"{w}={p[w]} must be a multiple of {it} x {t} = {p[it] * p[t]}: the warp "
                    f"tile is swept in {it} steps of whole {t}-wide pieces")
    rows, cols = _warp_step(p)
    if rows * cols != WARP_SIZE:
        return (f"one warp step holds (WM/WMITER/TM) x (WN/WNITER/TN) = {rows} x {cols} = "
                f"{rows * cols} lanes, not {WARP_SIZE}: change WMITER, WNITER, TM or TN")
    for k in ("BK", "BN", "TM", "TN", "APAD"):
        if p[k] % 4:
            return (f"{k}={p[k]} is not a multiple of 4: the kernel moves the tiles as float4 "
                    f"(4 floats at a time)")
    return None


def _rm_rn(p: dict) -> tuple[int, int]:
    """Rows and columns of C one lane holds: (WMITER x TM, WNITER x TN)."""
    return p["WMITER"] * p["TM"], p["WNITER"] * p["TN"]


def _warptile_threads(p: dict) -> int:
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * WARP_SIZE


def _prefetch_registers(p: dict) -> int:
    """Registers the double-buffered kernel holds for the next tile: 4 per float4 in flight."""
    t = _warptile_threads(p)
    return 4 * (ceil_div(p["BM"] * p["BK"] // 4, t) + ceil_div(p["BK"] * p["BN"] // 4, t))


#: The warp-tiled kernels' warp layout: six parameters tied by the 32-lanes-per-step rule.
WARP_LAYOUT = Joint("warp layout", ("WM", "WN", "WMITER", "WNITER", "TM", "TN"),
                    "warp {WM}x{WN}, {WMITER}x{WNITER} iterations, thread {TM}x{TN}")

_WARPTILE_DEFAULTS = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "WMITER": 1,
                      "WNITER": 4, "TM": 4, "TN": 4, "APAD": 4}
_WARPTILE_DB_DEFAULTS = {"BM": 128, "BN": 256, "BK": 12, "WM": 32, "WN": 128, "WMITER": 2,
                         "WNITER": 2, "TM": 8, "TN": 4, "APAD": 4}

VEC4 = Recipe(
    name="vec4", title="float4 loads and a transposed A tile", kernel="sgemm_vec4",
    function="sgemmVec4", defaults={"BM": 64, "BN": 128, "BK": 16, "TM": 8, "TN": 4},
    lesson=8,
    **_REGISTER_BLOCKED,
    _rules=_vec4_rules,
    shared_load_width=16,
    notes="2-D register blocking; global loads and shared reads as float4 (LDS.128); "
          "As stored transposed, As[k][m]; the default shape is the fastest of the H200 sweep")

WARPTILE = Recipe(
    name="warptile", title="warp tiling", kernel="sgemm_warptile", function="sgemmWarptile",
    defaults=_WARPTILE_DEFAULTS, lesson=8,
    _block=lambda p: (_warptile_threads(p), 1, 1),
    _grid=_block_tile_grid,
    _global_bytes_per_fma=lambda p: FLOAT * (p["BM"] + p["BN"]) / (p["BM"] * p["BN"]),
    _shared_bytes_per_fma=lambda p: FLOAT * sum(_rm_rn(p)) / (_rm_rn(p)[0] * _rm_rn(p)[1]),
    _shared_bytes=lambda p: p["BK"] * (p["BM"] + p["APAD"] + p["BN"]) * FLOAT,
    _registers_estimate=lambda p: (_rm_rn(p)[0] * _rm_rn(p)[1] + sum(_rm_rn(p))
                                   + _OVERHEAD_REGISTERS),
    _rules=_warptile_rules, may_be_zero=("APAD",), joint=(WARP_LAYOUT,),
    shared_load_width=16,
    notes="each warp a WM x WN sub-tile swept in WMITER x WNITER steps; each lane "
          "(WMITER*TM) x (WNITER*TN) outputs; float4 and transposed A as in vec4")

WARPTILE_DB = Recipe(
    name="warptile_db", title="warp tiling with double buffering", kernel="sgemm_warptile_db",
    function="sgemmWarptileDB", defaults=_WARPTILE_DB_DEFAULTS, lesson=8,
    _block=lambda p: (_warptile_threads(p), 1, 1),
    _grid=_block_tile_grid,
    _global_bytes_per_fma=lambda p: FLOAT * (p["BM"] + p["BN"]) / (p["BM"] * p["BN"]),
    _shared_bytes_per_fma=lambda p: FLOAT * sum(_rm_rn(p)) / (_rm_rn(p)[0] * _rm_rn(p)[1]),
    _shared_bytes=lambda p: 2 * p["BK"] * (p["BM"] + p["APAD"] + p["BN"]) * FLOAT,
    _registers_estimate=lambda p: (_rm_rn(p)[0] * _rm_rn(p)[1] + sum(_rm_rn(p))
                                   + _prefetch_registers(p) + _OVERHEAD_REGISTERS),
    _rules=_warptile_rules, may_be_zero=("APAD",), joint=(WARP_LAYOUT,),
    shared_load_width=16,
    notes="sgemm_warptile with the next tile fetched into registers during the FMAs and "
          "stored into a second shared buffer (lesson 06's pipelining); the ladder's best")

_TUNED_DEFAULTS = {**_WARPTILE_DB_DEFAULTS, "SWIZZLE": 0, "FRAGDB": 1, "SPLITK": 1, "GSWZ": 1,
                   "MINB": 1, "FAST": 0, "PINGPONG": 0, "TAILWAVE": 0, "ASYNC": 0,
                   "STAGES": 2}
_SWIZZLE_BK = (4, 8, 16, 32)


def _tuned_registers(p: dict) -> int:
    rm, rn = _rm_rn(p)
    fragments = (1 + p["FRAGDB"]) * (rm + rn)
    return rm * rn + fragments + _prefetch_registers(p) + _OVERHEAD_REGISTERS


def _tuned_rules(p: dict) -> str | None:
    why = _warptile_rules(p)
    if why:
        return why
    for k in ("SWIZZLE", "FRAGDB", "FAST", "PINGPONG"):
        if p[k] not in (0, 1):
            return f"{k}={p[k]}: a switch, 0 (off) or 1 (on)"
    if p["ASYNC"] not in (0, 1, 2) or p["STAGES"] < 2 or (p["ASYNC"] < 2 and p["STAGES"] != 2):
        return (f"ASYNC={p['ASYNC']}, STAGES={p['STAGES']}: ASYNC is 0, 1 (B by cp.async) or 2 "
                f"(A and B), and STAGES is 2 unless ASYNC=2 (then 2 or more)")
    if p["TAILWAVE"] and p["SPLITK"] < 2:
        return (f"TAILWAVE={p['TAILWAVE']} with SPLITK={p['SPLITK']}: TAILWAVE is 0 (off) or "
                f"the blocks of one wave (SMs x blocks per SM), and it splits the tail's tiles "
                f"SPLITK ways: set SPLITK to 2 or more")
    if p["PINGPONG"] and p["ASYNC"]:
        return (f"PINGPONG=1 with ASYNC={p['ASYNC']}: the two-tile loop is the register-staged "
                f"one's; set ASYNC=0")
    if p["SWIZZLE"]:
        if p["APAD"]:
            return (f"APAD={p['APAD']} with SWIZZLE=1: the swizzled A tile has no padding "
                    f"(the XOR spreads the stores instead); set APAD=0")
        if p["BK"] not in _SWIZZLE_BK or p["BM"] % 32:
            return (f"SWIZZLE=1 needs BK in {{4, 8, 16, 32}} and BM a multiple of 32 "
                    f"(BK={p['BK']}, BM={p['BM']}): the XOR moves each group of BK / 4 lanes "
                    f"that copy one row of A to its own part of the 32 banks")
    t = _warptile_threads(p)
    cap = REGISTERS_PER_SM // (p["MINB"] * t)
    r = _tuned_registers(p)
    if p["MINB"] > 1 and r > cap:
        return (f"MINB={p['MINB']}: {p['MINB']} blocks of {t} threads leave ptxas "
                f"{REGISTERS_PER_SM:,} / ({p['MINB']} x {t}) = {cap} registers per thread, "
                f"and this shape needs about {r}: it would spill; lower MINB or the "
                f"accumulators (RM x RN = {_rm_rn(p)[0] * _rm_rn(p)[1]})")
    return None


def _tuned_grid(M: int, N: int, K: int, p: dict) -> tuple:
    across, down = ceil_div(N, p["BN"]), ceil_div(M, p["BM"])
    if p["TAILWAVE"]:
        tiles = across * down
        whole = tiles // p["TAILWAVE"] * p["TAILWAVE"]
        return (whole + (tiles - whole) * p["SPLITK"],)
    return (across, down) if p["SPLITK"] == 1 else (across, down, p["SPLITK"])


TUNED = Recipe(
    name="tuned", title="tuned: fragment double buffering, swizzle, split-K, launch bounds",
    kernel="sgemm_tuned", function="sgemmTuned", defaults=_TUNED_DEFAULTS, lesson=8,
    _block=lambda p: (_warptile_threads(p), 1, 1),
    _grid=_tuned_grid,
    _global_bytes_per_fma=lambda p: FLOAT * (p["BM"] + p["BN"]) / (p["BM"] * p["BN"]),
    _shared_bytes_per_fma=lambda p: FLOAT * sum(_rm_rn(p)) / (_rm_rn(p)[0] * _rm_rn(p)[1]),
    _shared_bytes=lambda p: p["STAGES"] * p["BK"] * ((p["BM"] if p["SWIZZLE"] else
                                                       p["BM"] + p["APAD"]) + p["BN"]) * FLOAT,
    _registers_estimate=_tuned_registers,
    _rules=_tuned_rules, may_be_zero=("APAD", "SWIZZLE", "FRAGDB", "FAST", "PINGPONG", "TAILWAVE", "ASYNC"), joint=(WARP_LAYOUT,),
    shared_load_width=16,
    _adds_into_c=lambda p: p["SPLITK"] > 1,
    notes="sgemm_warptile_db plus register double buffering of the fragments (FRAGDB), an "
          "XOR-swizzled unpadded A tile (SWIZZLE), split-K over blockIdx.z with atomicAdd "
          "(SPLITK), grouped block order (GSWZ), __launch_bounds__(threads, MINB) and "
          "edge tests skipped by blocks inside the matrices (FAST), the tile loop unrolled by two "
          "on constant buffers (PINGPONG), split-K for the last wave's tiles only (TAILWAVE)")



# -- the kernels outside the ladder -----------------------------------------------------------

def _square_grid(M: int, N: int, K: int, p: dict) -> tuple[int, int]:
    return (ceil_div(N, p["TILE"]), ceil_div(N, p["TILE"]))


NAIVE = Recipe(
    name="naive", title="one thread per element of C (lesson 02)", kernel="sgemm_naive",
    function="sgemmNaive", defaults={}, lesson=2,
    _block=lambda p: (16, 16, 1),
    _grid=lambda M, N, K, p: (ceil_div(N, 16), ceil_div(N, 16)),
    _global_bytes_per_fma=lambda p: 2.0 * FLOAT,
    _shared_bytes_per_fma=lambda p: 0.0,
    notes="sgemmNaive(int N, A, B, C), square, any N; any block works (the recipe's is "
          "16 x 16; `sgemm.naive_launch` takes another), the grid covers N x N")

TILED_DB = Recipe(
    name="tiled_db", title="double-buffered shared-memory tiling (lesson 06)",
    kernel="sgemm_tiled_db", function="sgemmTiledDB", defaults={"TILE": 32}, lesson=6,
    _block=lambda p: (p["TILE"], p["TILE"], 1), _grid=_square_grid,
    _global_bytes_per_fma=lambda p: 2 * FLOAT / p["TILE"],
    _shared_bytes_per_fma=lambda p: 2.0 * FLOAT,
    _shared_bytes=lambda p: 2 * 2 * p["TILE"] ** 2 * FLOAT,
    _rules=_tile_rules, square_only=True,
    notes="sgemm_tiled with two shared buffers per tile: (int N, A, B, C), N % TILE == 0")

TRANSPOSE_NAIVE = Recipe(
    name="transpose_naive", title="transpose, reading rows and writing columns (lesson 05)",
    kernel="transpose", function="transposeNaive", defaults={"TILE": 32}, optional={"PAD": 0},
    lesson=5, _block=lambda p: (p["TILE"], p["TILE"], 1), _grid=_square_grid,
    _rules=_tile_rules,
    notes="out = in^T for N x N floats: (int N, in, out); launch(N, N, N), N % TILE == 0")

TRANSPOSE_SHARED = Recipe(
    name="transpose_shared", title="transpose through a shared tile (lesson 05)",
    kernel="transpose", function="transposeShared", defaults={"TILE": 32}, optional={"PAD": 0},
    lesson=5, _block=lambda p: (p["TILE"], p["TILE"], 1), _grid=_square_grid,
    _shared_bytes=lambda p: p["TILE"] * (p["TILE"] + p.get("PAD", 0)) * FLOAT,
    _rules=_tile_rules,
    notes="out = in^T through T[TILE][TILE + PAD]: (int N, in, out); PAD=1 removes the "
          "32-way bank conflict; N % TILE == 0")

SAXPY = Recipe(
    name="saxpy", title="y = a·x + y, one thread per element (lesson 06)", kernel="saxpy",
    function="saxpy", defaults={}, lesson=6,
    _block=lambda p: (256, 1, 1), _grid=lambda M, N, K, p: (ceil_div(M, 256),),
    notes="saxpy(int n, float a, x, y): launch(n, 1, 1), block 256, grid ceil(n / 256)")

#: Every recipe, by name: the ladder's (in ladder order, the tuned kernel last) and the rest.
RECIPES: dict[str, Recipe] = {r.name: r for r in (
    TILED, COARSE, REGTILE2D, VEC4, WARPTILE, WARPTILE_DB, TUNED,
    NAIVE, TILED_DB, TRANSPOSE_NAIVE, TRANSPOSE_SHARED, SAXPY)}


def names() -> list[str]:
    """Every recipe's name, in `RECIPES`' order."""
    return list(RECIPES)


def get(name: Recipe | str) -> Recipe:
    """The `Recipe` called `name` (a Recipe is returned as it is).

    Raises ArgumentError listing the names when there is none."""
    if isinstance(name, Recipe):
        return name
    try:
        return RECIPES[name]
    except (KeyError, TypeError):
        raise ArgumentError(f"no recipe {name!r}; the recipes are {', '.join(RECIPES)}") from None


def for_file(kernel: str) -> list[Recipe]:
    """The recipes of kernel file `kernel` (``"transpose"`` has two), in `RECIPES`' order."""
    return [r for r in RECIPES.values() if r.kernel == kernel]
