"""Summarises scripts/bench-ab.sh's runs: per row, each jar's scores by round and its ratio to the first jar."""
import json
import statistics
import sys

out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]


def row_name(bench):
    params = ",".join(f"{k}={v}" for k, v in sorted(bench.get("params", {}).items()))
    return bench["benchmark"].rsplit(".", 2)[-2] + "." + bench["benchmark"].rsplit(".", 1)[-1] + (
        f" [{params}]" if params else "")


# scores[row][name] = [(score, bytes or None) per round]
scores = {}
unit = {}
for r in range(1, rounds + 1):
    for name in names:
        with open(f"{out}/{r}-{name}.json") as f:
            for bench in json.load(f):
                row = row_name(bench)
                alloc = bench.get("secondaryMetrics", {}).get("gc.alloc.rate.norm", {}).get("score")
                scores.setdefault(row, {}).setdefault(name, []).append((bench["primaryMetric"]["score"], alloc))
                unit[row] = bench["primaryMetric"]["scoreUnit"]

for row, by_name in scores.items():
    print(f"{row} ({unit[row]})")
    first = by_name[names[0]]
    for name in names:
        runs = by_name[name]
        line = f"  {name:>12}: " + " ".join(f"{s:,.0f}" for s, _ in runs)
        line += f"  median {statistics.median(s for s, _ in runs):,.0f}"
        allocs = [a for _, a in runs if a is not None]
        if allocs:
            line += f"; {min(allocs):,.0f}-{max(allocs):,.0f} B/op"
        if name != names[0]:
            ratios = [s / f for (s, _), (f, _) in zip(runs, first)]
            line += (f"; ÷ {names[0]} by round " + " ".join(f"{x:.2f}" for x in ratios)
                     + f", median {statistics.median(ratios):.2f}")
        print(line)
