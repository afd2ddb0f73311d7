"""The C++ constructs the conformance corpus relies on (issue 11), one kernel each.

bench/conformance_corpus.json lists real kernels from public repositories; their code stays
out of this repository. These are kernels of our own, written in the same styles, one per
construct those kernels need (templates and lookup by instantiation, `uint`, cooperative
groups, namespaces, default arguments and NULL, SharedMemory<T>-style class templates,
nvcc's predefined macros, streaming loads), each run on the emulator and checked against
NumPy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tilinglib import emulator
from tilinglib.errors import OutputNotWrittenWarning

HERE = Path(__file__).parent / "kernels" / "conformance"


def module(stem: str, **kw):
    return emulator.SourceModule((HERE / f"{stem}.cu").read_text(), no_extern_c=True, **kw)


def rng():
    return np.random.default_rng(2024)


@pytest.mark.parametrize("tile", [16, 8])
def test_function_template_looked_up_by_instantiation(tile):
    n = 32
    g = rng()
    A = g.standard_normal((n, n)).astype(np.float32)
    B = g.standard_normal((n, n)).astype(np.float32)
    C = np.zeros((n, n), np.float32)
    f = module("cxx_template_gemm").get_function(f"tiledGemm<{tile}, float>")
    f(np.int32(n), emulator.In(A), emulator.In(B), emulator.Out(C),
      block=(tile * tile, 1, 1), grid=(n // tile, n // tile), hazards="raise")
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)
    # nvcc counts one shared load of As and one of Bs per k: the counters see the template's
    # own TILE, not a default.
    assert f.last_report.shared_load_instructions == (n // tile) * tile * (2 * (tile * tile // 32)) \
        * (n // tile) ** 2


def test_template_lookup_accepts_spacing_of_the_instantiation():
    mod = module("cxx_template_gemm")
    assert mod.get_function("tiledGemm<16,float>").name == mod.get_function(
        "tiledGemm<16, float>").name


def test_uint_wraps_as_32_bit_unsigned():
    n = 100
    keys = rng().integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(n, np.uint32)
    f = emulator.SourceModule((HERE / "cxx_uint.cu").read_text()).get_function("hashIndices")
    f(emulator.In(keys), emulator.Out(out), np.int32(n), block=(64, 1, 1), grid=(2, 1))
    h = keys * np.uint32(2654435761)
    h ^= h >> np.uint32(13)
    np.testing.assert_array_equal(out, h + np.arange(n, dtype=np.uint32))


def test_cooperative_groups_thread_block():
    bs, nb = 64, 3
    x = rng().standard_normal(bs * nb).astype(np.float32)
    out = np.zeros_like(x)
    sizes = np.zeros(nb, np.int32)
    f = module("cxx_cg_block").get_function("reverseEachBlock")
    f(emulator.In(x), emulator.Out(out), emulator.Out(sizes), block=(bs, 1, 1), grid=(nb, 1),
      shared=bs * 4, hazards="raise")
    np.testing.assert_array_equal(out, x.reshape(nb, bs)[:, ::-1].reshape(-1))
    np.testing.assert_array_equal(sizes, [bs] * nb)


def test_cooperative_groups_warp_tile_shuffles():
    bs, nb = 128, 2
    x = rng().integers(-9, 10, bs * nb).astype(np.float32)
    per_warp = np.zeros(nb * bs // 32, np.float32)
    count = np.zeros(nb, np.int32)
    f = module("cxx_cg_tile").get_function("warpSums")
    f(emulator.In(x), emulator.Out(per_warp), emulator.Out(count), block=(bs, 1, 1),
      grid=(nb, 1))
    np.testing.assert_array_equal(per_warp, x.reshape(-1, 32).sum(axis=1))
    np.testing.assert_array_equal(count, [bs // 32] * nb)


def test_cooperative_groups_reduce():
    rows, cols = 7, 70
    x = rng().standard_normal((rows, cols)).astype(np.float32)
    sums = np.zeros(rows, np.float32)
    f = module("cxx_cg_reduce").get_function("rowSums")
    f(emulator.In(x), emulator.Out(sums), np.int32(rows), np.int32(cols), block=(128, 1, 1),
      grid=(2, 1))
    np.testing.assert_allclose(sums, x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_cooperative_groups_coalesced_threads():
    n = 1000
    src = rng().integers(-100, 100, n).astype(np.int32)
    dst = np.zeros(n, np.int32)
    count = np.zeros(1, np.int32)
    f = module("cxx_cg_coalesced").get_function("keepNegatives")
    # dst is filled only up to the count: the emulator says so for the rest.
    with pytest.warns(OutputNotWrittenWarning, match="elements were never written"):
        f(emulator.In(src), emulator.Out(dst), emulator.InOut(count), np.int32(n),
          block=(128, 1, 1), grid=(4, 1))
    negatives = np.sort(src[src < 0])
    assert count[0] == negatives.size
    np.testing.assert_array_equal(np.sort(dst[:negatives.size]), negatives)


def test_namespaced_device_templates():
    threads = 64
    tiles = rng().standard_normal(threads * 12).astype(np.float32)
    out = np.zeros(threads * 3, np.float32)
    f = module("cxx_namespace_templates").get_function("rowSumsOfTiles")
    f(emulator.In(tiles), emulator.Out(out), block=(32, 1, 1), grid=(2, 1))
    want = 2 * tiles.astype(np.float64).reshape(threads, 3, 4).sum(axis=2)
    np.testing.assert_allclose(out, want.reshape(-1), rtol=1e-6, atol=1e-6)


def test_default_arguments_and_null():
    n, bs = 128, 64
    x = rng().integers(-1000, 1000, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    first = np.zeros(n // bs, np.int32)
    f = module("cxx_default_null").get_function("laneRotate")
    f(emulator.In(x), emulator.Out(out), np.int32(n), emulator.Out(first), block=(bs, 1, 1),
      grid=(n // bs, 1))
    np.testing.assert_array_equal(out, np.roll(x.reshape(-1, 32), -1, axis=1).reshape(-1))
    np.testing.assert_array_equal(first, x[::bs])


@pytest.mark.parametrize("ctype, dtype", [("float", np.float32), ("double", np.float64)])
def test_class_template_over_dynamic_shared_memory(ctype, dtype):
    bs, nb = 32, 2
    x = rng().standard_normal(bs * nb).astype(dtype)
    out = np.zeros_like(x)
    f = module("cxx_shared_memory_class").get_function(f"neighbourSum<{ctype}>")
    f(emulator.In(x), emulator.Out(out), block=(bs, 1, 1), grid=(nb, 1),
      shared=bs * np.dtype(dtype).itemsize, hazards="raise")
    blocks = x.reshape(nb, bs)
    np.testing.assert_array_equal(out, (blocks + np.roll(blocks, -1, axis=1)).reshape(-1))


def test_nvcc_predefined_macros_and_explicit_specialisation():
    n = 32
    x = rng().integers(-100, 100, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    flags = np.zeros(2, np.int32)
    f = module("cxx_cuda_arch").get_function("archProbe")
    f(emulator.In(x), emulator.Out(out), emulator.Out(flags), block=(n, 1, 1), grid=(1, 1))
    # The emulated device is the course's H200 (sm_90): nvcc there defines __CUDA_ARCH__ 900,
    # so the int specialisation (x3) is the one compiled.
    np.testing.assert_array_equal(flags, [1, 900])
    np.testing.assert_array_equal(out, 3 * x)


def test_streaming_loads_and_stores():
    n = 300
    x = rng().standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    f = module("cxx_streaming").get_function("scaleStreaming")
    f(emulator.Out(out), emulator.In(x), np.float32(0.5), np.int32(n), block=(128, 1, 1),
      grid=(3, 1))
    np.testing.assert_array_equal(out, np.float32(0.5) * x)
    assert f.last_report.global_load_requests == 3 * 4 - 2   # 10 warps hold an i < n


def test_file_scope_const_bounds_and_device_assert():
    w = 64
    x = rng().standard_normal((w, w)).astype(np.float32)
    out = np.zeros_like(x)
    f = emulator.SourceModule((HERE / "cxx_file_scope_const.cu").read_text()).get_function(
        "transposePadded")
    f(emulator.Out(out), emulator.In(x), block=(32, 8, 1), grid=(2, 2), hazards="raise")
    np.testing.assert_array_equal(out, x.T)
    # +1 padding: the column read of the tile is conflict-free (32 distinct banks).
    assert f.last_report.shared_load_bank_conflicts == 0


def test_warp_reduce_builtins():
    n = 128
    x = rng().integers(-500, 500, n).astype(np.int32)
    sums = np.zeros(n // 32, np.int32)
    mins = np.zeros(n // 32, np.uint32)
    maxs = np.zeros(n // 32, np.uint32)
    f = emulator.SourceModule((HERE / "cxx_warp_reduce_builtins.cu").read_text()).get_function(
        "warpReductions")
    f(emulator.In(x), emulator.Out(sums), emulator.Out(mins), emulator.Out(maxs),
      block=(64, 1, 1), grid=(2, 1))
    warps = x.reshape(-1, 32)
    np.testing.assert_array_equal(sums, warps.sum(axis=1))
    np.testing.assert_array_equal(mins, warps.min(axis=1) + 1000)
    np.testing.assert_array_equal(maxs, warps.max(axis=1) + 1000)


def test_legacy_shuffle_is_a_compile_error_at_its_line():
    from tilinglib.errors import CompileError

    with pytest.raises(CompileError) as info:
        emulator.SourceModule((HERE / "cxx_legacy_shfl.cu").read_text())
    assert info.value.line == 6
    assert "__shfl_down" in str(info.value)


def test_kernel_in_anonymous_namespace_keeps_its_name():
    x = rng().standard_normal((5, 8)).astype(np.float32)
    want = x[:, ::-1] + np.arange(5, dtype=np.float32)[:, None]
    f = emulator.SourceModule((HERE / "cxx_anonymous_namespace.cu").read_text()).get_function(
        "addRowNumbers")
    f(emulator.InOut(x), block=(8, 1, 1), grid=(5, 1), hazards="raise")
    np.testing.assert_array_equal(x, want)


def _run_anonymous(backend):
    x = rng().standard_normal(50).astype(np.float32)
    want = x * np.float32(3) + np.float32(-1)
    m = backend.SourceModule((HERE / "cxx_anonymous_nested.cu").read_text(), no_extern_c=True)
    m.get_function("scaleBy")(backend.InOut(x), np.float32(3), np.int32(50), block=(32, 1, 1),
                              grid=(2, 1))
    m.get_function("shiftBy")(backend.InOut(x), np.float32(-1), np.int32(50), block=(32, 1, 1),
                              grid=(2, 1))
    np.testing.assert_array_equal(x, want)


def test_kernels_in_anonymous_namespaces_looked_up_by_name_on_the_emulator():
    _run_anonymous(emulator)


@pytest.mark.gpu
def test_kernels_in_anonymous_namespaces_looked_up_by_name_on_pycuda():
    # nvcc names an anonymous namespace differently at every compile; the backend reads
    # the name back from the module's own cubin.
    from tilinglib.backend import get_backend

    _run_anonymous(get_backend())


def test_the_anonymous_namespace_name_is_matched_component_by_component(monkeypatch):
    # Without a GPU: PyCUDA's compile stands in as a function returning a cubin's bytes, and
    # the loaded module as an object whose get_function knows the names in that cubin.
    import sys
    import types

    from tilinglib.toolchain.backends import pycuda as _pycuda

    nvcc_name = "_ZN5outer45_GLOBAL__N__488c2b5e_9_kernel_cu_f9058338_5076addTwoEPfi"
    decoys = ["_ZN5outer6addTwoEPfi",                                   # a named one
              "_ZN5outer45_GLOBAL__N__488c2b5e_9_kernel_cu_f9058338_5076addTwoEPfj",
              "_ZN5other45_GLOBAL__N__488c2b5e_9_kernel_cu_f9058338_5076addTwoEPfi"]
    cubin = b"\x7fELF\0" + b"\0".join(n.encode() for n in decoys + [nvcc_name]) + b"\0"
    compiler = types.ModuleType("pycuda.compiler")
    compiler.compile = lambda source, **kw: cubin
    pycuda = types.ModuleType("pycuda")
    pycuda.compiler = compiler
    monkeypatch.setitem(sys.modules, "pycuda", pycuda)
    monkeypatch.setitem(sys.modules, "pycuda.compiler", compiler)

    class Loaded:
        def get_function(self, name):
            if name.encode() not in cubin:
                raise RuntimeError("cuModuleGetFunction failed: named symbol not found")
            return name

    class Session:
        def guard(self, what):
            import contextlib
            return contextlib.nullcontext()

    m = object.__new__(_pycuda.SourceModule)
    m.source, m.no_extern_c, m._compile_args = "", True, {}
    m._pycuda_module, m._session = Loaded(), Session()
    assert m._anonymous_symbol("_ZN5outer12_GLOBAL__N_16addTwoEPfi") == nvcc_name
    assert m._anonymous_symbol("_ZN5outer12_GLOBAL__N_16addTwoEPKf") is None
    assert m._anonymous_symbol("_ZN5outer6addTwoEPfi") is None


def coalesced_reference(keys, values):
    """What each thread with an odd key gets from cxx_cg_coalesced_api's describe(), worked
    out lane by lane from the definition: the group is the warp's lanes with odd keys, a
    member's rank its position among them in lane order."""
    n = keys.size
    want = np.full((n, 9), -1, np.int64)
    masks = np.zeros(n, np.uint32)
    for w0 in range(0, n, 32):
        lanes = [lane for lane in range(32) if keys[w0 + lane] & 1]
        vals = [int(values[w0 + lane]) for lane in lanes]
        size = len(lanes)
        ballot = sum(1 << r for r, v in enumerate(vals) if v % 3 == 0)
        for r, lane in enumerate(lanes):
            masks[w0 + lane] = sum(1 << x for x in lanes)
            want[w0 + lane] = [r, size, vals[2], vals[r + 1] if r + 1 < size else vals[r],
                               vals[r - 3] if r >= 3 else vals[r], ballot,
                               int(any(v > 90 for v in vals)), 1, 1]
    return want, masks


def test_coalesced_group_members_on_a_divergent_warp():
    n = 256
    keys = rng().integers(0, 100, n).astype(np.int32)
    values = rng().integers(-100, 100, n).astype(np.int32)
    out = np.full(9 * n, -1, np.int32)
    masks = np.zeros(n, np.uint32)
    f = module("cxx_cg_coalesced_api").get_function("oddKeysGroup")
    f(emulator.In(keys), emulator.In(values), emulator.InOut(out), emulator.Out(masks),
      block=(64, 1, 1), grid=(4, 1))
    want, want_masks = coalesced_reference(keys, values)
    odd = (keys & 1) == 1
    assert 3 <= odd.reshape(-1, 32).sum(axis=1).min() < 32      # divergent warps, 3+ members
    np.testing.assert_array_equal(masks, want_masks)             # __activemask()
    got = out.reshape(n, 9).astype(np.int64)
    got[:, 5] &= 0xFFFFFFFF                                      # the ballot is unsigned
    want[:, 5] &= 0xFFFFFFFF
    np.testing.assert_array_equal(got[odd], want[odd])
    assert (out.reshape(n, 9)[~odd] == -1).all()                 # even keys: not in a group


@pytest.mark.parametrize("block, tile", [(128, 64), (256, 128), (1024, 1024), (512, 32)])
def test_multi_warp_tiles_reduce_rank_and_sync(block, tile):
    nb = 3
    x = rng().standard_normal(block * nb).astype(np.float32)
    ntiles = nb * block // tile
    sums, maxima = np.zeros(ntiles, np.float32), np.zeros(ntiles, np.float32)
    block_sums, ranks = np.zeros(nb, np.float32), np.zeros(block * nb, np.uint32)
    f = module("cxx_cg_multi_warp").get_function(f"tileSumsAndMax<{block}, {tile}>")
    f(emulator.In(x), emulator.Out(sums), emulator.Out(maxima), emulator.Out(block_sums),
      emulator.Out(ranks), block=(block, 1, 1), grid=(nb, 1), hazards="raise")
    tiles = x.reshape(ntiles, tile)
    np.testing.assert_allclose(sums, tiles.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(maxima, tiles.max(axis=1))
    np.testing.assert_allclose(block_sums, x.reshape(nb, block).astype(np.float64).sum(axis=1),
                               rtol=1e-5, atol=1e-4)
    tib = np.arange(block * nb) % block
    np.testing.assert_array_equal(ranks, tib % tile + 10000 * (tib // tile)
                                  + 1000000 * (block // tile))


def test_multi_warp_tile_sync_by_part_of_a_tile_is_an_error_at_its_line():
    from tilinglib.errors import BarrierError
    src = ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
           "__global__ void k(float *x) {\n"
           "    auto tile = cg::tiled_partition<64>(cg::this_thread_block());\n"
           "    if (tile.thread_rank() < 40) {\n"
           "        x[threadIdx.x] = cg::reduce(tile, x[threadIdx.x], cg::plus<float>());\n"
           "    }\n}\n")
    f = emulator.SourceModule(src, no_extern_c=True).get_function("k")
    with pytest.raises(BarrierError, match=r"cg::reduce of a thread_block_tile<64> at "
                                           r"kernel.cu:6 in k was reached by 40 of the 64 "
                                           r"threads of its tile in block \(0, 0, 0\) "
                                           r"\(thread \(0, 0, 0\) is there, thread "
                                           r"\(40, 0, 0\) is not\)") as info:
        f(emulator.InOut(np.zeros(128, np.float32)), block=(128, 1, 1), grid=(1, 1))
    assert info.value.line == 6          # the student's call, though the collective is
    #                                      inside the cooperative-groups prelude


def test_references_to_locals_scalars_structs_groups_and_aliases():
    n = 128
    x = rng().integers(-5, 6, n).astype(np.float32)
    y = rng().integers(-5, 6, n).astype(np.float32)
    out_x, out_y = np.zeros(n, np.float32), np.zeros(n, np.float32)
    ranges, warp_sums = np.zeros(2 * n, np.float32), np.zeros(n // 32, np.float32)
    counts, aliased = np.zeros(n, np.int32), np.zeros(3 * n, np.int32)
    f = module("cxx_reference_params").get_function("referenceParams")
    f(emulator.In(x), emulator.In(y), np.int32(n), emulator.Out(out_x), emulator.Out(out_y),
      emulator.Out(ranges), emulator.Out(warp_sums), emulator.Out(counts),
      emulator.Out(aliased), block=(64, 1, 1), grid=(2, 1), hazards="raise")
    lo, hi = np.minimum(x, y), np.maximum(x, y)
    np.testing.assert_array_equal(out_x, lo)                     # swapValues(a, b)
    np.testing.assert_array_equal(out_y, hi)
    np.testing.assert_array_equal(ranges[0::2], np.minimum(lo, lo * 0.5))   # widen(m, v)
    np.testing.assert_array_equal(ranges[1::2], np.maximum(hi, lo * 0.5))
    np.testing.assert_array_equal(counts, np.full(n, (x > 0).sum() + 1000))  # inc(count)
    np.testing.assert_array_equal(warp_sums, (lo + hi).reshape(-1, 32).sum(axis=1))
    # writeBoth(one, one) returns 2 (a and b alias), writeBoth(one, two) 1; then one=1, two=2
    np.testing.assert_array_equal(aliased.reshape(n, 3), np.tile([2, 1, 12], (n, 1)))
    report = f.last_report
    # References live in local memory, which (registers on a GPU) is not counted: only
    # x[i], y[i] and the loop's x[(i + k) % n] load, one request per warp each.
    assert report.global_load_requests == 4 * (2 + n)


def test_both_backends_find_a_kernel_by_the_same_rule():
    # The PyCUDA backend looks kernels up through find_kernel, the rule the emulator's
    # get_function uses: 'shiftBy' is vec::(anonymous)::shiftBy, mangled as the Itanium ABI
    # writes it (nested name: 3vec, the anonymous namespace 12_GLOBAL__N_1, 7shiftBy;
    # parameters float*, float, int).
    from tilinglib.toolchain.frontend.program import find_kernel

    src = (HERE / "cxx_anonymous_nested.cu").read_text()
    assert find_kernel(src, None, "shiftBy") == ("vec::::shiftBy",
                                                 "_ZN3vec12_GLOBAL__N_17shiftByEPffi")
    assert find_kernel(src, None, "scaleBy")[1] == "_ZN12_GLOBAL__N_17scaleByEPffi"
    assert find_kernel(src, None, "_ZN12_GLOBAL__N_17scaleByEPffi")[1] == \
        "_ZN12_GLOBAL__N_17scaleByEPffi"
    assert find_kernel(src, None, "nope") is None


def test_labeled_and_binary_partition_of_a_coalesced_group():
    n = 100
    t = np.arange(n)
    bucket = (t * 7 % 3).astype(np.int32)
    value = ((t * 37) % 101).astype(np.int32)
    counts = np.zeros(4, np.int32)
    gmax, gsize = np.full(n, -1, np.int32), np.full(n, -1, np.int32)
    module("cxx_cg_labeled_partition").get_function("bucketCounts")(
        emulator.In(bucket), emulator.In(value), emulator.InOut(counts), emulator.InOut(gmax),
        emulator.InOut(gsize), np.int32(n), block=(64, 1, 1), grid=(2, 1))
    live = (t % 5 != 4)
    for i in range(n):
        if not live[i]:
            assert gmax[i] == gsize[i] == -1
            continue
        warp = t[(t // 32 == i // 32) & live]
        members = warp[bucket[warp] == bucket[i]]
        assert gsize[i] == members.size and gmax[i] == value[members].max()
    assert counts[:3].tolist() == [int(np.sum(live & (bucket == b))) for b in range(3)]
    assert counts[3] == int(np.sum(live & (value % 2 == 1)))


def test_grid_group_ranks_and_sizes_and_its_sync_refused():
    src = ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
           "__global__ void k(unsigned long long *rank, unsigned long long *size) {\n"
           "    cg::grid_group grid = cg::this_grid();\n"
           "    for (unsigned long long i = grid.thread_rank(); i < 200; i += grid.size()) {\n"
           "        rank[i] = grid.thread_rank() * 1000 + grid.block_rank();\n"
           "        size[i] = grid.size() * 100 + grid.num_blocks();\n"
           "    }\n}\n")
    rank, size = np.zeros(200, np.uint64), np.zeros(200, np.uint64)
    emulator.SourceModule(src, no_extern_c=True).get_function("k")(
        emulator.Out(rank), emulator.Out(size), block=(32, 2, 1), grid=(2, 1))
    tid = np.arange(200) % 128
    assert rank.tolist() == (tid * 1000 + tid // 64).tolist()
    assert set(size.tolist()) == {128 * 100 + 2}
    from tilinglib.errors import CompileError
    with pytest.raises(CompileError, match="cooperative launch") as info:
        emulator.SourceModule(src.replace("    for (", "    grid.sync();\n    for ("),
                              no_extern_c=True)
    assert info.value.line == 5
