"""The course's CUDA sources, one kernel per ``.cu`` file, shipped with the package.

``load("sgemm_tiled")`` returns the source text, ready for ``tl.SourceModule``:

- ``sgemm_naive``: ``sgemmNaive(int N, const float* A, const float* B, float* C)``,
  one thread per element of C (lesson 02);
- ``sgemm_tiled``: ``sgemmTiled``, same parameters, TILE x TILE shared-memory tiles;
  ``-DTILE=..`` (default 32) and ``-DPAD=1`` (row padding, default 0); needs N % TILE == 0
  (lesson 03);
- ``sgemm_tiled_db``: ``sgemmTiledDB``, same parameters, the tiled kernel with two shared
  buffers so the next tile loads while this one is used (``-DTILE=..``; lesson 06);
- ``sgemm_coarse``: ``sgemmCoarse(int M, int N, int K, const float* A, const float* B,
  float* C)``, any M, N, K: thread coarsening, each thread TM outputs down a column
  (1-D register blocking); ``-DBM= -DBN= -DBK= -DTM=`` (defaults 64, 64, 8, 8; lesson 07);
- ``sgemm_regtile2d``: ``sgemmRegtile2d``, same parameters: 2-D register blocking, each
  thread a TM x TN block of C from registers; ``-DBM= -DBN= -DBK= -DTM= -DTN=`` (defaults
  128, 128, 8, 8, 8; lesson 07). `tilinglib.ladder` has the launches and valid shapes;
- ``sgemm_vec4``: ``sgemmVec4``, same parameters: 2-D register blocking with float4 global
  loads and the A tile stored transposed so both tiles are read as float4 (``-DBM= -DBN=
  -DBK= -DTM= -DTN=``, defaults 64, 128, 16, 8, 4; lesson 08);
- ``sgemm_warptile``: ``sgemmWarptile``, same parameters: warp tiling, each warp a WM x WN
  sub-tile in WMITER x WNITER steps, each lane TM x TN per step (``-DBM -DBN -DBK -DWM -DWN
  -DWMITER -DWNITER -DTM -DTN -DAPAD``, defaults 128, 128, 8, 64, 32, 1, 4, 4, 4, 4; lesson 08);
- ``sgemm_warptile_db``: ``sgemmWarptileDB``, same parameters and macros: warp tiling with the
  next tile fetched into registers during the FMAs, two shared buffers (defaults 128, 256, 12,
  32, 128, 2, 2, 8, 4, 4: the fastest shape of the H200 sweep; lesson 08);
- ``sgemm_tuned``: ``sgemmTuned``, same parameters and macros, plus switches: ``-DFRAGDB=1``
  (register double buffering of the fragments, default on), ``-DSWIZZLE=1`` (an XOR-swizzled,
  unpadded A tile; APAD=0), ``-DSPLITK=s`` (K split among s blocks over blockIdx.z, added into
  a zeroed C with atomicAdd), ``-DGSWZ=g`` (grouped block order), ``-DMINB=b``
  (``__launch_bounds__(threads, b)``); lesson 08, section 8, `tilinglib.tile_choice`;
- ``transpose``: ``transposeNaive`` and ``transposeShared(int N, const float* in,
  float* out)``, the second through a shared tile read by columns (``-DPAD=1`` pads it;
  lesson 05);
- ``saxpy``: ``saxpy(int n, float a, const float* x, float* y)``, y = a·x + y (lesson 06).
"""

from __future__ import annotations

from importlib import resources

__all__ = ["load", "names"]


def names() -> list[str]:
    """The names `load` accepts, sorted: one per ``.cu`` file in this folder."""
    folder = resources.files(__name__)
    return sorted(p.name[:-3] for p in folder.iterdir() if p.name.endswith(".cu"))


def load(name: str) -> str:
    """The CUDA source of kernel file `name` (with or without ``.cu``), as a str.

    Raises KeyError listing the available names when there is no such file.
    """
    stem = name[:-3] if name.endswith(".cu") else name
    if stem not in names():
        raise KeyError(f"no kernel source {name!r}; available: {', '.join(names())}")
    return resources.files(__name__).joinpath(stem + ".cu").read_text(encoding="utf-8")
