"""The exercises of lesson 08: every starter is "todo", every reference answer "correct", and
the usual wrong answers are "wrong" with a message that says why, in the course's terms
(the emulator's counters, the H200's Nsight Compute readings, the roofline's peaks)."""

from __future__ import annotations

import pytest

from exercise_harness import exercise_cells, run_cell

import tilinglib as tl

LESSON = "08_to_cublas"
SHAPES = "shapes = [(32, 16, 1, 1, 4, 4), (64, 32, 2, 2, 4, 4), (32, 64, 1, 4, 4, 4), (64, 32, 2, 1, 8, 4)]\n"
AREAS = "((16, 128), (8, 128), (64, 32))"


def _lane(body):
    return (f"def shared_bytes(WM, WN, WMITER, WNITER, TM, TN):\n    return {body}\n" + SHAPES
            + "tl.exercises.check('08.2', {s: shared_bytes(*s) for s in shapes})")


def _warp(body):
    return (f"def warp_bytes(WM, WN):\n    return {body}\n"
            f"tl.exercises.check('08.3', {{a: warp_bytes(*a) for a in {AREAS}}})")


def _limit(limit, tile):
    return ("h200 = tl.roofline.GPUS['H200 SXM']\n"
            f"tl.exercises.check('08.4', ({limit}, {tile}))")


def _wave(blocks, per_wave, busy, winner):
    return ("from tilinglib.exercises.lesson08 import wave_shapes\n"
            "shapes = wave_shapes()\nSMS = 132\n"
            "def wave(N, tile, blocks_per_sm):\n    BM, BN = tile\n"
            f"    blocks = {blocks}\n    per_wave = {per_wave}\n"
            "    waves = -(-blocks // per_wave)\n"
            f"    busy = {busy}\n    return blocks, per_wave, busy\n"
            f"tl.exercises.check('08.5', ({{n: wave(1024, *s) for n, s in shapes.items()}}, "
            f"{winner!r}))")


RIGHT_WAVE = ("(N // BM) * (N // BN)", "SMS * blocks_per_sm", "blocks / (waves * per_wave)")


def _issue(body):
    return ("from tilinglib import tile_choice\nprofiles = tile_choice.load_issue_profiles()\n"
            f"def predicted_ratio(q, ref):\n    return {body}\n"
            "tl.exercises.check('08.6', {n: predicted_ratio(profiles[n], profiles['cuBLAS']) "
            "for n in ('base', 'fast', 'best4096')})")


# {exercise id: [(cell code, phrase the message must contain), ...]}
WRONG = {
    "08.1": [
        # the untransposed index: a column of As, past the end of the array
        ("tl.exercises.check('08.1', 'float4 v = *(const float4*)&As[tRow * TM + i][k];')",
         "MemoryAccessError"),
        # one float, not four
        ("tl.exercises.check('08.1', 'float4 v = As[k][tRow * TM + i];')", "one float4 load"),
        # TN where TM belongs: wrong rows (caught at TM != TN)
        ("tl.exercises.check('08.1', 'float4 v = *(const float4*)&As[k][tRow * TN + i];')",
         "does not match NumPy"),
        ("tl.exercises.check('08.1', 'a[i] = As[k][tRow * TM + i];')", "keep the form"),
    ],
    "08.2": [
        (_lane("4 * (TM + TN) / (TM * TN)"), "one warp step"),
        (_lane("4 * (WM + WN) / (WM * WN)"), "exercise 08.3"),
        (_lane("(WMITER * TM + WNITER * TN) / (WMITER * TM * WNITER * TN)"),
         "that counts floats, not bytes"),
        (_lane("4 * (WMITER + WNITER) / (WMITER * WNITER)"), "4 bytes each"),
        ("def shared_bytes(WM, WN, WMITER, WNITER, TM, TN):\n    return 1.0\n"
         "tl.exercises.check('08.2', {(1, 2): shared_bytes(1, 2, 3, 4, 5, 6)})",
         "keep the cell's last line"),
    ],
    "08.3": [
        (_warp("4 * (WM + WN)"), "divide by the WM x WN FMAs"),
        (_warp("(WM + WN) / (WM * WN)"), "Nsight Compute read"),
        (_warp("(WM + WN) / (WM * WN)"), "That counts floats, not bytes"),
        (_warp("4 * (WM + WN) / (WM * WN) / 32"), "Do not divide among the 32 lanes"),
        (_warp("4 * 2 / 8"), "on the H200 for regtile2d. Per k the warp's lanes touch WM distinct"),
    ],
    "08.4": [
        (_limit("h200.dram_bandwidth / h200.fp32_flops", 64), "bytes per FLOP"),
        (_limit("2 * h200.dram_bandwidth / h200.fp32_flops", 32), "smallest power of two"),
        (_limit("2 * h200.dram_bandwidth / h200.fp32_flops", 128), "8 / T"),
        (_limit("h200.fp32_flops / h200.dram_bandwidth", 64), "the ridge point of lesson 01, upside down"),
        (_limit("1.0", 64), "their ratio"),
        # the prose's rounded "about 0.14", typed in
        (_limit("0.14", 64), "is near the limit, rounded"),
    ],
    "08.5": [
        # one block per SM: vec4's three (72 registers x 256 threads) forgotten
        (_wave(RIGHT_WAVE[0], "SMS", RIGHT_WAVE[2], "vec4"), "the H200 holds 3 of vec4's"),
        # the busy fraction over the SMs, not over the slots
        (_wave(RIGHT_WAVE[0], RIGHT_WAVE[1], "blocks / SMS", "vec4"), "blocks / (waves x per_wave)"),
        # the N = 4096 winner
        (_wave(*RIGHT_WAVE, "warptile_db"), "the fuller grid does"),
        (_wave(*RIGHT_WAVE, "cublas"), "name one of vec4, warptile, warptile_db"),
    ],
    "08.6": [
        (_issue("(ref.instructions / ref.issue_busy_pct) / (q.instructions / q.issue_busy_pct)"),
         "put the kernel's on top"),
        (_issue("q.instructions / ref.instructions"), "divide each by its issue busy fraction"),
        (_issue("ref.issue_busy_pct / q.issue_busy_pct"), "issue rate alone"),
        (_issue("q.instructions * q.issue_busy_pct / (ref.instructions * ref.issue_busy_pct)"),
         "multiplies the rate, not the time"),
        (_issue("q.duration_ms / ref.duration_ms"), "the measured ratio of the durations"),
        ("tl.exercises.check('08.6', {'base': 1.0})", "one ratio per kernel"),
    ],
}


@pytest.fixture(scope="module")
def cells():
    return exercise_cells(LESSON)


def test_every_registered_exercise_is_in_the_notebook(cells):
    registered = [i for i in tl.exercises.exercise_ids() if i.startswith("08.")]
    assert registered == ["08.1", "08.2", "08.3", "08.4", "08.5", "08.6"]
    assert sorted(cells) == registered


def test_every_exercise_has_wrong_answers_here(cells):
    for exercise_id in cells:
        assert len(WRONG.get(exercise_id, ())) >= 2, f"{exercise_id} needs two wrong answers"


def test_starters_are_todo_and_references_correct(cells):
    for exercise_id, cell in cells.items():
        assert "..." in cell.starter, exercise_id
        todo = run_cell(cell.starter)
        assert (todo.exercise, todo.status) == (exercise_id, "todo"), (exercise_id, todo)
        assert "not done yet" in str(todo)
        right = run_cell(cell.reference)
        assert (right.exercise, right.status) == (exercise_id, "correct"), (exercise_id, right)


@pytest.mark.parametrize("exercise_id, code, phrase",
                         [(i, c, p) for i, cases in sorted(WRONG.items()) for c, p in cases],
                         ids=[f"{i}-wrong{k}" for i, cases in sorted(WRONG.items())
                              for k in range(len(cases))])
def test_wrong_answers_are_explained(exercise_id, code, phrase):
    fb = run_cell(code)
    assert (fb.exercise, fb.status) == (exercise_id, "wrong"), fb
    assert phrase in fb.message, fb.message
    assert len(fb.message.splitlines()) <= 12


def test_right_answers_in_other_forms_are_accepted():
    # 08.2 with RM, RN written out; 08.3 as 4 / WN + 4 / WM; 08.4 with the numbers typed in
    fb = run_cell(_lane("4 / (WMITER * TM) + 4 / (WNITER * TN)"))
    assert fb.status == "correct", fb
    fb = run_cell(_warp("4 / WN + 4 / WM"))
    assert fb.status == "correct", fb
    fb = run_cell(_limit("4.8e12 / (67e12 / 2)", 64))
    assert fb.status == "correct", fb
    assert "0.1433" in fb.message
    assert "from lesson 07's coarse kernel (64 x 64, 0.125) to 128 x 256" in fb.message


def test_the_warp_check_quotes_the_h200s_counters():
    fb = run_cell(_warp("4 * (WM + WN) / (WM * WN)"))
    # Nsight Compute on the H200, 2026-12-01 (tilinglib/data/reference_h200.json, ladder):
    # smsp__sass_data_bytes_mem_shared_op_ld.sum / FFMA for regtile2d, vec4, warptile
    assert "regtile2d 0.2812, vec4 0.5312, warptile 0.1875" in fb.message


def test_warptile_db_global_sectors_exceed_requests_as_ncu_read_them():
    # Lesson 08, section 6: Nsight Compute's global figure for warptile_db (0.0520 B/FMA
    # against the formula's 0.0469) is whole 32-byte sectors; BK = 12 cuts A's rows into
    # 48-byte pieces that straddle sectors. The emulator counts the same sectors, and at
    # BK = 8 none are wasted. H200 figures: tilinglib/data/reference_h200.json, ladder run of
    # 2026-12-01, N = 1024: l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum 56,315,904 over
    # smsp__sass_data_bytes_mem_global_op_ld.sum 50,331,648 = 1.11890.
    from tilinglib import ladder

    db = ladder.get("warptile_db")
    ratios = {}
    for BK in (8, 12):
        p = db.resolve({"BK": BK})
        r = ladder.count(db, p["BM"], p["BN"], 4 * BK, p)
        ratios[BK] = 32 * r.global_load_sectors / r.global_load_bytes_requested
    assert ratios[8] == 1.0
    m = tl.reference.load("h200").step_counters("warptile_db", 1024).metrics
    ncu = (m["l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum"]
           / m["smsp__sass_data_bytes_mem_global_op_ld.sum"])
    assert ncu == pytest.approx(56_315_904 / 50_331_648)
    # one block, K = 48 (no partial tile) against the whole N = 1024 grid: within 0.1%
    assert ratios[12] == pytest.approx(ncu, rel=1e-3)
    assert ratios[12] == pytest.approx(1.1180556, rel=1e-6)   # 2,576 sectors for 73,728 B


def test_the_wave_check_quotes_the_h200s_timings_at_1024():
    fb = run_cell(_wave(*RIGHT_WAVE, "vec4"))
    assert fb.status == "correct", fb
    # lesson 08's three kernels at N = 1024 in the reference data's ladder run
    ref = tl.reference.load("h200")
    said = ", ".join(f"{n} {ref.step(n, 1024).gflops:,.0f}" for n in ("vec4", "warptile", "warptile_db"))
    assert "the H200 agrees" in fb.message and said in fb.message
    assert "vec4: 32% of the slots busy" in fb.message      # 128 / (1 x 132 x 3)
