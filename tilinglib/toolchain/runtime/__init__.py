"""Running a compiled kernel: `module` (SourceModule, Function, In/Out/InOut), `execute`
(blocks in batches, threads in lockstep warps), `warps`, `access` (loads and stores with
their counters), `barriers`, `atomics`, `schedule` (the order warps run in, adversarial
included) and `race_search` (find_race_failure).
"""
