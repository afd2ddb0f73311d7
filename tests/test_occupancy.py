"""Tests of tilinglib.occupancy against Nsight Compute's figures on an H200.

docs/h200-measurements.md: launch__occupancy_limit_shared_mem = 8 (naive 32x32),
3 (tiled 32, with and without padding), 21 (tiled 16), 20 (tiled 16 padded); 31 registers
for the tiled kernel at TILE=32.
"""

import pytest

from tilinglib.errors import LaunchError
from tilinglib.launch import DeviceLimits
from tilinglib.occupancy import SHARED_CONFIGS_CC90, occupancy

KIB = 1024


@pytest.mark.parametrize("threads, static_shared, config, ncu_limit", [
    (1024, 0, 8 * KIB, 8),          # naive 32x32
    (1024, 8192, 32 * KIB, 3),      # tiled TILE=32
    (1024, 8448, 32 * KIB, 3),      # tiled TILE=32, +1 padding
    (256, 2048, 64 * KIB, 21),      # tiled TILE=16
    (256, 2176, 64 * KIB, 20),      # tiled TILE=16, +1 padding
])
def test_shared_memory_limit_matches_nsight_compute(threads, static_shared, config, ncu_limit):
    occ = occupancy(threads, static_shared=static_shared, registers_per_thread=31,
                    shared_config=config)
    assert occ.blocks_by_shared == ncu_limit
    # The driver's configuration never binds: warps do, and every warp slot is used.
    assert occ.active_blocks == occ.blocks_by_warps == 2048 // threads
    assert occ.limited_by == ("warps", "registers")     # 31 registers allow the same count
    assert occ.percent == 100.0


@pytest.mark.parametrize("threads, static_shared, ncu_limit", [
    (1024, 0, 8), (1024, 8192, 3), (1024, 8448, 3), (256, 2048, 21), (256, 2176, 20)])
def test_measured_limits_imply_one_configuration_each(threads, static_shared, ncu_limit):
    configs = [c for c in SHARED_CONFIGS_CC90
               if occupancy(threads, static_shared=static_shared,
                            shared_config=c).blocks_by_shared == ncu_limit]
    assert len(configs) == 1


def test_calculator_default_uses_all_228_kib():
    occ = occupancy(1024, static_shared=8192)
    assert occ.shared_config == 233_472
    assert occ.shared_per_block == 8192 + 1024
    assert occ.blocks_by_shared == 25                   # 233,472 // 9,216
    assert occ.blocks_by_warps == 2
    assert occ.active_blocks == 2 and occ.active_warps == 64


def test_reserved_kilobyte_and_128_byte_granularity():
    occ = occupancy(256, static_shared=2176)
    assert occ.shared_per_block == 3200                 # 2,176 + 1,024, already a multiple of 128
    occ = occupancy(256, static_shared=100)
    assert occ.shared_per_block == 1152                 # 1,124 rounded up to 128


def test_register_limit():
    # 31 registers -> 992 per warp, allocated 1,024; 16,384 per sub-partition -> 16 warps
    # each, 64 per SM.
    assert occupancy(256, registers_per_thread=31).blocks_by_registers == 8
    # 64 registers: 2,048 per warp -> 8 warps per sub-partition, 32 per SM: 4 blocks of 8 warps.
    occ = occupancy(256, registers_per_thread=64)
    assert occ.blocks_by_registers == 4
    assert occ.limited_by == ("registers",)
    assert occ.percent == 50.0
    # 124 registers, 256 threads (the register-tiled kernel): 3,968 per warp -> 4 warps per
    # sub-partition, 16 per SM: 2 blocks.
    assert occupancy(256, registers_per_thread=124).blocks_by_registers == 2


def test_block_slot_limit_binds_small_blocks():
    occ = occupancy(32)
    assert occ.blocks_by_warps == 64
    assert occ.blocks_by_slots == 32
    assert occ.active_blocks == 32
    assert occ.limited_by == ("blocks",)
    assert occ.percent == 50.0


def test_shared_memory_can_bind():
    occ = occupancy(128, dynamic_shared=48 * KIB)
    assert occ.shared_per_block == 49 * KIB             # 48 KiB + the reserved 1 KiB
    assert occ.blocks_by_shared == 4                    # 228 KiB // 49 KiB
    assert occ.limited_by == ("shared memory",)
    assert occ.percent == pytest.approx(100 * 16 / 64)


def test_impossible_blocks_raise():
    with pytest.raises(LaunchError):
        occupancy(2048)
    with pytest.raises(LaunchError, match="registers per block"):
        occupancy(1024, registers_per_thread=128)
    with pytest.raises(LaunchError):
        occupancy(256, dynamic_shared=300 * KIB)


def test_other_limits_are_respected():
    ampere_consumer = DeviceLimits(max_blocks_per_sm=16, max_threads_per_sm=1536,
                                   max_shared_per_sm=100 * KIB)
    occ = occupancy(512, limits=ampere_consumer)
    assert occ.blocks_by_warps == 3
    assert occ.max_warps == 48
    assert "warps" in str(occ) and "3 blocks/SM" in str(occ)
