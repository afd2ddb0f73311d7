"""The Nsight Compute metric names: one table (tilinglib/toolchain/measure/metrics.py).

Every metric name written as a string anywhere in tilinglib/ or bench/ is one the table
holds (the standalone GPU scripts, which run without tilinglib, keep their own lists, and
those must agree with it), and every LaunchReport counter the table names is a field.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from tilinglib.toolchain.measure import metrics
from tilinglib.toolchain.measure.report import LaunchReport

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"""["']((?:l1tex|smsp|sm|lts|dram|gpu|launch)__[a-z0-9_.]+)["']""")


def table_names() -> set[str]:
    names = set(metrics.REPORT_METRICS.values())
    names |= {v for k, v in vars(metrics).items() if k.isupper() and isinstance(v, str)}
    return names


def test_every_metric_name_in_the_code_is_in_the_table():
    known = table_names()
    unknown = []
    for path in sorted([*ROOT.glob("tilinglib/**/*.py"), *ROOT.glob("bench/*.py")]):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            unknown += [f"{path.relative_to(ROOT)}:{n}: {m}" for m in NAME.findall(line)
                        if m not in known]
    assert not unknown, "metric names outside tilinglib/toolchain/measure/metrics.py:\n" + \
        "\n".join(unknown)


def test_the_table_names_launch_report_fields():
    fields = {f.name for f in dataclasses.fields(LaunchReport)}
    assert set(metrics.REPORT_METRICS) <= fields
    assert len(set(metrics.REPORT_METRICS.values())) == len(metrics.REPORT_METRICS)
