#!/usr/bin/env python3
"""Per-file table of runtest-cluster logs (tests/redis-suite/cluster.sh's output), one column pair
per log: checks printed OK and tests FAILED in each of the 30 files, then the totals. A file
whose run stopped at an error counts what ran before.

Usage: tests/redis-suite/cluster_table.py NAME=LOG [NAME=LOG ...]
"""
import re
import sys


def parse(path):
    counts, unit = {}, None
    for raw in open(path, errors="replace"):
        line = re.sub(r"\x1b\[[0-9;]*m", "", raw)
        m = re.match(r"Testing unit: (\S+)\.tcl", line)
        if m:
            unit = m.group(1)
            counts.setdefault(unit, [0, 0])
        elif unit and re.match(r"\d\d:\d\d:\d\d> .*: OK", line):
            counts[unit][0] += 1
        elif unit and re.match(r"\d\d:\d\d:\d\d> .*FAILED", line):
            counts[unit][1] += 1
    return counts


def main():
    runs = [(a.split("=", 1)[0], parse(a.split("=", 1)[1])) for a in sys.argv[1:]]
    units = sorted({u for _, c in runs for u in c})
    print("| file | " + " | ".join(f"{n} OK | {n} failed" for n, _ in runs) + " |")
    print("|---|" + "---|---|" * len(runs))
    for unit in units:
        cells = []
        for _, c in runs:
            ok, failed = c.get(unit, ["-", "-"])
            cells += [str(ok), str(failed)]
        print(f"| {unit} | " + " | ".join(cells) + " |")
    totals = []
    for _, c in runs:
        totals += [str(sum(v[0] for v in c.values())), str(sum(v[1] for v in c.values()))]
    print("| **total** | " + " | ".join(f"**{t}**" for t in totals) + " |")


if __name__ == "__main__":
    main()
