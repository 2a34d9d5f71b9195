#!/usr/bin/env python3
"""Where a GPU step's time goes, kernel by kernel: sums Nsight Compute's gpu__time_duration per
kernel name over the kernels it profiled (tools/gpu/profile_kernels.sh) and prints the largest.

  bench/gpu/kernel_table.py ncu.csv [--top 25]
"""
import argparse
import collections
import csv
import sys

UNIT_NS = {"nsecond": 1, "ns": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}


def read(path):
    """(kernel name, grid, block, ns) per profiled kernel."""
    lines = open(path, errors="replace").read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        sys.exit(f"{path}: no ncu CSV header (\"ID\",...) found")
    rows = []
    for r in csv.DictReader(lines[start:]):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = UNIT_NS.get(r["Metric Unit"])
        if unit is None:
            sys.exit(f"{path}: unknown unit '{r['Metric Unit']}' for kernel {r['ID']}")
        rows.append((r["Kernel Name"], r.get("Grid Size", ""), r.get("Block Size", ""),
                     float(r["Metric Value"].replace(",", "")) * unit))
    if not rows:
        sys.exit(f"{path}: no gpu__time_duration.sum rows")
    return rows


def short(name, width=90):
    name = name.split("(")[0] if name.startswith("void ") or "<" in name else name
    return name if len(name) <= width else name[: width - 3] + "..."


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    rows = read(a.csv)
    total = sum(ns for *_, ns in rows)
    by = collections.defaultdict(lambda: [0, 0.0])
    for name, _, _, ns in rows:
        by[short(name)][0] += 1
        by[short(name)][1] += ns
    print(f"{len(rows)} kernels, {total / 1e6:.2f} ms on the GPU\n")
    print("| kernel | launches | ms | share | us per launch |\n|---|---|---|---|---|")
    for name, (n, ns) in sorted(by.items(), key=lambda kv: -kv[1][1])[: a.top]:
        print(f"| `{name}` | {n} | {ns / 1e6:.2f} | {ns / total:.1%} | {ns / n / 1e3:.1f} |")


if __name__ == "__main__":
    main()
