"""CUDA C++ on the CPU, in pipeline order; the student's library (one folder up) never needs
to open it, and nothing here imports the library above except `tilinglib.errors`,
`tilinglib.gpu` (the hardware's numbers) and `tilinglib.launch` (the launch checks both
backends share).

    frontend/   source -> pycparser c_ast: preprocess -> clang -> lower; program.py the entry
    model/      what a value is: C types (c_types), lane values (values), memory and its counters
    codegen/    c_ast -> Python closures: compiler, expressions, statements, builtins, async copies
    runtime/    a launch: module (SourceModule), execute, warps, access, barriers, atomics,
                the schedule and the race search
    measure/    what a launch reports: races, diagnostics, the access trace, LaunchReport
    backends/   the two SourceModule surfaces: emulator (this pipeline) and pycuda (the GPU's)

`docs/architecture.md` gives the import rules between these folders (a test keeps them).
"""
