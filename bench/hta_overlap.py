#!/usr/bin/env python3
"""HTA's communication/computation overlap on the traces of one folder, timed as a user runs it:
TraceAnalysis(trace_dir=...) (which reads and parses every trace) then get_comm_comp_overlap.
Prints one JSON line: wall seconds (with and without importing HTA), peak RSS (MB) and, per rank,
HTA's overlap % and its merged communication time, taken the way its overlap function takes
it (HTA's own filter, classification and merge), so that its exposed communication, merged
communication x (1 - overlap), can be held against cmax's.
  PYTHONPATH=<HTA checkout> /usr/bin/python3 bench/hta_overlap.py DIR
HTA is not part of cmax: check it out from github.com/facebookresearch/HolisticTraceAnalysis
outside the repository; it runs on Debian's python3-pandas, -plotly, -networkx, -pydot, -psutil."""
import json
import resource
import sys
import time

start = time.monotonic()
from hta.trace_analysis import TraceAnalysis  # noqa: E402  (import counted: a user pays it)
from hta.utils.utils import KernelType, get_kernel_type, merge_kernel_intervals  # noqa: E402

imported = time.monotonic()
analysis = TraceAnalysis(trace_dir=sys.argv[1])
overlap = analysis.get_comm_comp_overlap(visualize=False)
wall = time.monotonic() - start
analysis_s = time.monotonic() - imported
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

ranks = {}
symbols = analysis.t.symbol_table.get_sym_table()
for rank, pct in zip(overlap["rank"], overlap["comp_comm_overlap_pctg"]):
    df = analysis.t.get_trace(int(rank))
    gpu = df[df["stream"].ne(-1)].copy()
    kinds = gpu["name"].apply(lambda n: get_kernel_type(symbols[n]))
    comm = merge_kernel_intervals(gpu[kinds.eq(KernelType.COMMUNICATION.name)].copy())
    comm_us = float((comm["end"] - comm["ts"]).sum())
    ranks[str(int(rank))] = {
        "overlap_pct": float(pct),
        "communication_s": comm_us / 1e6,
        "exposed_communication_s": comm_us / 1e6 * (1 - float(pct) / 100),
    }
print(json.dumps({"tool": "hta", "wall_s": wall, "analysis_s": analysis_s,
                  "peak_rss_mb": peak_mb, "ranks": ranks}))
