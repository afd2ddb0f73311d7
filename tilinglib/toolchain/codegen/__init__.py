"""Code generation: a kernel's pycparser c_ast (from `toolchain.frontend`) compiled into Python
closures over lane arrays. `compiler` is the entry point (`compile_program`); `expressions`,
`statements`, `builtins` (CUDA's device functions), `async_copy` (cp.async / memcpy_async)
and `closures` (the shared helpers) hold the rules per construct.
"""
