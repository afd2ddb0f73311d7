"""Small helpers shared by the emulator's tests: compile a source and launch one kernel."""

from __future__ import annotations

import numpy as np

from tilinglib.emulator import In, InOut, Out, SourceModule


def launch(source, kernel, *args, block=(32, 1, 1), grid=(1, 1), options=None,
           no_extern_c=False, **kw):
    """Compile `source` (with PyCUDA's `no_extern_c`), run `kernel` with `args` (NumPy
    arrays are passed InOut, anything else as is) and return the Function (its
    `last_report` holds the counters)."""
    f = SourceModule(source, options=options, no_extern_c=no_extern_c).get_function(kernel)
    wrapped = [InOut(a) if isinstance(a, np.ndarray) else a for a in args]
    f(*wrapped, block=block, grid=grid, **kw)
    return f


def run_body(body, out_dtype=np.int32, n_out=8, threads=32, prelude="", **kw):
    """Run `body` inside ``__global__ void k(T* out)`` with one block of `threads`;
    returns `out` (n_out elements per thread when n_out > 0, zero-initialised)."""
    ctype = {np.int32: "int", np.float32: "float", np.float64: "double",
             np.uint32: "unsigned int", np.int64: "long long", np.uint64: "unsigned long long",
             np.int16: "short", np.int8: "signed char", np.uint8: "unsigned char"}[out_dtype]
    src = f"{prelude}\n__global__ void k({ctype}* out)\n{{\n{body}\n}}\n"
    out = np.zeros(n_out * threads, dtype=out_dtype)
    launch(src, "k", out, block=(threads, 1, 1), **kw)
    return out.reshape(threads, n_out)


__all__ = ["launch", "run_body", "In", "Out", "InOut", "SourceModule"]
