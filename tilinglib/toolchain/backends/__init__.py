"""The two backends behind `tilinglib.SourceModule` (chosen by `tilinglib.backend`):
`emulator` (this toolchain, no GPU needed) and `pycuda` (PyCUDA's own, with the same
argument checks and launch report fields).
"""
