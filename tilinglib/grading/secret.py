"""The instructor's secret, and the inputs drawn from it that no kernel can know.

The course's grading rules, shapes and data seed are public (they are in this package and
in every student's notebook), so a kernel could carry the answers for them: a ``__constant__``
table of C for each public shape, or tiled code only when (M, N, K) is one of them. The
grade to trust (``python -m tilinglib.grading``) therefore also grades on inputs drawn from
a secret only the instructor holds:

- `Secret`: 32 random bytes in a file made at the first grading run, by default
  ``tilinglib-grading.secret`` beside the graded folder (nbgrader's course folder, next to
  ``submitted/`` and ``gradebook.db``, which nbgrader never releases), mode 0600. It is
  never inside a student's folder, never in a notebook, never sent to a grading process.
- `Draw`: what one submission is graded on, derived from the secret and the submitted
  notebook's bytes (HMAC-SHA256): a data seed (every shape's A and B, public shapes included, are
  seeded float32 randoms from it) and, per kind of shape, extra shapes (`drawn_shapes`)
  from ranges that reach every edge: partial tiles in M, N and K, interior blocks that
  meet a partial K tile, tall, wide and long-K shapes, a grid of more than 4,096 blocks and,
  where the emulator runs it in about two seconds, more than 65,535 blocks along x. The
  same secret and the same notebook give the same draw, so the same grade; another
  submission (a resubmission too) gets other shapes.
- `drawing(draw)`: the context in which the graders (`check_sgemm`, `check_coarsened`) use
  the draw instead of the public inputs alone; it records the shapes they ran, which the
  command writes into ``grades.json`` (the shapes and the seed, never the secret).

Outside `drawing` (a student's notebook, nbgrader's test cells) the graders use the public
shapes and data only: their points are the command's for every kernel that is right on
every shape.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import hmac
import json
import os
import random
import secrets as _secrets
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GradingError

__all__ = ["SECRET_FILE_NAME", "Secret", "Draw", "default_secret_path", "load_or_create_secret",
           "draw_for", "draw_for_file", "drawn_shapes", "drawing", "active_draw",
           "results_settings", "BIG_GRID_BLOCKS",
           "WIDE_GRID_BLOCKS_X", "WIDE_GRID_WORK"]

SECRET_FILE_NAME = "tilinglib-grading.secret"
_FORMAT = "tilinglib grading secret 1"

BIG_GRID_BLOCKS = 4096
"""Every drawn set has a shape whose grid has more blocks than this."""
WIDE_GRID_BLOCKS_X = 65535
"""The most blocks gridDim.y (and z) may have; x may have 2^31 - 1. A drawn set has a shape
with more blocks than this along x where the launch's work is at most `WIDE_GRID_WORK`."""
WIDE_GRID_WORK = 40_000_000
"""Thread-iterations (blocks x threads per block x TILE steps along K) of the widest grid
drawn: about 2 s on the emulator (65,537 blocks of 8 x 8 threads, K < 8, took 1.9 s here:
bench/grade_class.py prints the class's figures)."""


@dataclass(frozen=True)
class Secret:
    """The instructor's grading secret: the `key` (32 bytes) read from `path`; `created`
    says whether this run made the file."""

    path: Path
    key: bytes = field(repr=False)
    created: bool = False

    @property
    def id(self) -> str:
        """16 hex digits that name the secret (HMAC of a fixed text), safe to print and to
        record: the same id means the same secret; the key cannot be recovered from it."""
        return hmac.new(self.key, b"tilinglib secret id", hashlib.sha256).hexdigest()[:16]


def default_secret_path(directory) -> Path:
    """Where the command keeps the secret for the graded folder `directory` (nbgrader's
    ``submitted/``): ``SECRET_FILE_NAME`` in the folder above it (the course folder)."""
    return Path(directory).resolve().parent / SECRET_FILE_NAME


def _inside(path: Path, folder: Path) -> bool:
    try:
        return os.path.commonpath([str(path), str(folder)]) == str(folder)
    except ValueError:
        return False


def load_or_create_secret(path, *, not_inside=()) -> Secret:
    """The secret at `path`, made there (32 bytes from `secrets.token_bytes`, mode 0600) if
    no file is there yet. `not_inside`: folders the secret must not be in (the graded
    folder: students' files live there).

    Raises `GradingError` (saying what to change) for a path inside one of `not_inside`, a
    symbolic link, a file that is not a secret this function wrote, or a folder it cannot
    write."""
    path = Path(path).absolute()
    for folder in not_inside:
        if _inside(Path(os.path.realpath(path)), Path(os.path.realpath(folder))):
            raise GradingError(f"--secret {path} is inside {folder}, where the students' "
                               f"files are: keep the grading secret outside it (the default "
                               f"is the folder above)")
    if os.path.islink(path):
        raise GradingError(f"--secret {path} is a symbolic link: give the file itself")
    created = False
    if not os.path.lexists(path):
        key = _secrets.token_bytes(32)
        text = f"{_FORMAT}\n{key.hex()}\n"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                         0o600)
        except FileExistsError:
            pass                      # another run made it first: read theirs below
        except OSError as exc:
            raise GradingError(f"cannot make the grading secret {path} ({exc.strerror}): give "
                               f"a writable place with --secret PATH (outside the graded "
                               f"folder)") from None
        else:
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            created = True
    try:
        with open(path, "rb") as fh:
            lines = fh.read(4096).decode("ascii").split()
    except (OSError, UnicodeDecodeError) as exc:
        raise GradingError(f"cannot read the grading secret {path}: {exc}") from None
    if len(lines) != 5 or " ".join(lines[:4]) != _FORMAT or len(lines[4]) != 64:
        raise GradingError(f"{path} is not a grading secret this command wrote: give another "
                           f"--secret PATH (a missing file is made), or restore the file")
    try:
        key = bytes.fromhex(lines[4])
    except ValueError:
        raise GradingError(f"{path} is not a grading secret this command wrote") from None
    return Secret(path, key, created)


@dataclass(frozen=True)
class Draw:
    """What one submission is graded on beyond the public inputs: `seed` (a 63-bit int) seeds
    every shape's data and the extra shapes of `drawn_shapes`."""

    seed: int

    def shapes(self, tile: int, threads_per_block: int) -> dict:
        """`drawn_shapes(self.seed, tile, threads_per_block)`."""
        return drawn_shapes(self.seed, tile, threads_per_block)


def draw_for(secret: Secret, assignment: str, notebook: bytes) -> Draw:
    """The `Draw` of one submission: HMAC-SHA256, keyed with the secret, of the assignment's
    name and the SHA-256 of the submitted notebook's bytes (`notebook`; the command never
    parses a notebook outside the grading process, so the bytes are what it has). The same
    file gets the same draw; any change to it (a resubmission) another; without the key
    nothing about it can be known."""
    return _draw(secret, assignment, hashlib.sha256(bytes(notebook)).hexdigest())


def draw_for_file(secret: Secret, assignment: str, fd: int) -> Draw:
    """`draw_for` of the file open as `fd` (read with os.pread from offset 0 in 1 MiB pieces,
    so the descriptor's own offset is left where it was)."""
    h = hashlib.sha256()
    offset = 0
    while True:
        piece = os.pread(fd, 1 << 20, offset)
        if not piece:
            break
        h.update(piece)
        offset += len(piece)
    return _draw(secret, assignment, h.hexdigest())


def _draw(secret: Secret, assignment: str, notebook_sha256: str) -> Draw:
    message = json.dumps({"assignment": str(assignment), "notebook": notebook_sha256},
                         sort_keys=True, ensure_ascii=True).encode("ascii")
    digest = hmac.new(secret.key, message, hashlib.sha256).digest()
    return Draw(int.from_bytes(digest[:8], "big") >> 1)


def drawn_shapes(seed: int, tile: int, threads_per_block: int | None = None) -> dict:
    """The extra shapes of a draw for a kernel of tile `tile` launched with
    `threads_per_block` threads per block (default TILE²) and grid (ceil(N/TILE),
    ceil(M/TILE)): {name of the correctness case they join (`sgemm_cases`): ((M, N, K),
    ...)}. Each length of an edge case is a·TILE + r with 1 <= r < TILE, so its last tile
    is partial:

    - "TILE+1 and TILE-1": M, N, K each a·TILE + r, a in 0..2;
    - "primes, M != N != K": three different lengths, a in 1..3;
    - "tall and wide": fewer rows than TILE by 6 to 12 tiles of columns and the transpose,
      and one grid of more than 4,096 blocks (4,097 to 4,352, M < TILE), or of more than
      65,535 blocks along x (65,536 to 65,791) where blocks x threads x TILE is at most
      `WIDE_GRID_WORK`;
    - "long K": K of 4 to 8 tiles plus a partial one;
    - "interior blocks, partial K tile": M and N of 2 to 3 tiles plus a partial one (a 3 x 3
      or 4 x 4 grid with interior blocks) and K partial.

    Raises ValueError for a tile below 1."""
    t = int(tile)
    if t < 1:
        raise ValueError(f"tile must be at least 1, not {tile}")
    threads = int(threads_per_block or t * t)
    rng = random.Random(f"{int(seed)}:{t}")

    def length(lo: int, hi: int) -> int:
        a = rng.randint(lo, hi)
        r = rng.randint(1, t - 1) if t > 1 else 1
        return a * t + r

    def short() -> int:               # fewer than TILE (one partial tile)
        return rng.randint(1, t - 1) if t > 1 else 1

    distinct = []
    while len(distinct) < 3:
        n = length(1, 3)
        if n not in distinct:          # t = 1 still has 1, 2 and 3
            distinct.append(n)
    wide_blocks = WIDE_GRID_BLOCKS_X + 1 + rng.randrange(256)
    if wide_blocks * threads * t <= WIDE_GRID_WORK:
        blocks_x = wide_blocks
    else:
        blocks_x = BIG_GRID_BLOCKS + 1 + rng.randrange(256)
    big_n = (blocks_x - 1) * t + (rng.randint(1, t) if t > 1 else 1)
    return {
        "TILE+1 and TILE-1": ((length(0, 2), length(0, 2), length(0, 2)),),
        "primes, M != N != K": (tuple(distinct),),
        "tall and wide": ((short(), length(6, 12), length(0, 1)),
                          (length(6, 12), short(), length(0, 1)),
                          (short(), big_n, short())),
        "long K": ((length(0, 1), length(0, 1), length(4, 8)),),
        "interior blocks, partial K tile": ((length(2, 3), length(2, 3), length(1, 3)),),
    }


def results_settings(secret: Secret) -> dict:
    """What ``grades.json``'s settings record about the inputs (under "secret"): `Secret.id`
    (never the key; not the file's path either, which differs between the machines of a
    sharded run) and how the draws are made; each result's own seed and shapes are in its
    ``outcome.inputs``."""
    return {"id": secret.id,
            "draws": "per submission: HMAC-SHA256(secret, assignment and the notebook's "
                     "SHA-256) seeds the "
                     "data of every shape and adds shapes to each correctness case "
                     "(tilinglib.grading.secret.drawn_shapes); the public shapes are graded "
                     "too",
            "big_grid_blocks_over": BIG_GRID_BLOCKS,
            "wide_grid_blocks_x_over": WIDE_GRID_BLOCKS_X,
            "wide_grid_work": WIDE_GRID_WORK}


@dataclass
class _Active:
    draw: Draw
    time_limit: float | None = None
    used: dict = field(default_factory=dict)     # kernel name -> {case name: [[M, N, K]]}


_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("tilinglib_grading_draw",
                                                         default=None)


@contextlib.contextmanager
def drawing(draw: Draw, time_limit: float | None = None):
    """Grade with `draw` inside the block: `check_sgemm` and `check_coarsened` (and so every
    assignment's grader) seed their data from ``draw.seed`` and add its shapes to each case;
    `time_limit` (seconds), when given, replaces their default of 60 (the command passes its
    own limit, less a margin, so that only the command's --timeout limits a submission). Yields a dict that fills with what they ran: {"seed": ...,
    "kernels": {kernel name: {"tile": TILE, "shapes": {case name: [[M, N, K], ...]}}}}."""
    if not isinstance(draw, Draw):
        raise TypeError(f"draw must be a Draw, not {type(draw).__name__}")
    active = _Active(draw, time_limit)
    token = _ACTIVE.set(active)
    record = {"seed": draw.seed, "kernels": active.used}
    try:
        yield record
    finally:
        _ACTIVE.reset(token)


def active_draw() -> Draw | None:
    """The `Draw` of the enclosing `drawing` block, None outside one."""
    active = _ACTIVE.get()
    return active.draw if active is not None else None


def active_time_limit() -> float | None:
    """The `time_limit` of the enclosing `drawing` block (None outside one, or if not given)."""
    active = _ACTIVE.get()
    return active.time_limit if active is not None else None


def record_shapes(kernel: str, tile: int, cases) -> None:
    """Note, in the enclosing `drawing` block's record, the shapes each case of `cases` ran
    for `kernel` (nothing outside a block)."""
    active = _ACTIVE.get()
    if active is None:
        return
    active.used[str(kernel)] = {"tile": int(tile),
                                "shapes": {c.name: [list(s) for s in c.shapes] for c in cases}}
