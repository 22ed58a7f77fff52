#!/usr/bin/python3
"""The numpy side of tests/bench/compare_runs: the same group statistics as model/groupstats.cpp's group_curve,
computed from the raw points, timed inside Python (time.perf_counter around the numpy work only; reading the file
and starting numpy are outside the clock).

    compare_runs_peer.py INPUT OUTPUT

INPUT (little-endian, written by compare_runs): int64 groups, buckets, from_step, to_step, band (0 std_dev,
1 std_error, 2 min_max), repetitions; then per group int64 runs, and per run int64 count, int64 steps[count],
float64 values[count].

The bench drives it over stdin so that both sides alternate in one run: each line "round" computes every group
`repetitions` times and answers one line {"type":"round","seconds":[...]} on stdout; the first round also writes
OUTPUT: per group int64 count, float64 x[count], mean[count], low[count], high[count], int64 n[count]. "quit" ends.
Run with Debian's /usr/bin/python3 (python3-numpy).
"""
import json
import sys
import time

import numpy as np


def read_input(path):
    raw = np.fromfile(path, dtype=np.uint8)
    header = np.frombuffer(raw, dtype="<i8", count=6)
    groups, buckets, from_step, to_step, band, repetitions = (int(v) for v in header)
    offset = 6 * 8
    runs_of_groups = []
    for _ in range(groups):
        run_count = int(np.frombuffer(raw, dtype="<i8", count=1, offset=offset)[0])
        offset += 8
        runs = []
        for _ in range(run_count):
            count = int(np.frombuffer(raw, dtype="<i8", count=1, offset=offset)[0])
            offset += 8
            steps = np.frombuffer(raw, dtype="<i8", count=count, offset=offset)
            offset += 8 * count
            values = np.frombuffer(raw, dtype="<f8", count=count, offset=offset)
            offset += 8 * count
            runs.append((steps, values))
        runs_of_groups.append(runs)
    return runs_of_groups, buckets, from_step, to_step, band, repetitions


def group_curve(runs, buckets, from_step, to_step, band):
    """Per bucket: each run's mean over its finite points in the bucket, then mean, band and N over the runs.
    Bucket of step s: (s - from_step) * buckets // span, as group_curve defines it (int64 is enough for the
    bench's steps; more buckets than steps only adds empty ones, so their count is clamped as there)."""
    span = to_step - from_step + 1
    count = min(buckets, span)
    sums = np.zeros((len(runs), count))
    points = np.zeros((len(runs), count), dtype=np.int64)
    for r, (steps, values) in enumerate(runs):
        keep = (steps >= from_step) & (steps <= to_step) & np.isfinite(values)
        bucket = (steps[keep] - from_step) * count // span
        sums[r] = np.bincount(bucket, weights=values[keep], minlength=count)
        points[r] = np.bincount(bucket, minlength=count)
    has = points > 0
    run_values = np.where(has, sums / np.maximum(points, 1), 0.0)
    n = has.sum(axis=0)
    present = n > 0
    has, run_values, n = has[:, present], run_values[:, present], n[present]
    mean = run_values.sum(axis=0) / n
    if band == 2:
        low = np.where(has, run_values, np.inf).min(axis=0)
        high = np.where(has, run_values, -np.inf).max(axis=0)
    else:
        deviations = np.where(has, run_values - mean, 0.0)
        std = np.where(n > 1, np.sqrt((deviations * deviations).sum(axis=0) / np.maximum(n - 1, 1)), 0.0)
        half = std if band == 0 else std / np.sqrt(n)
        low, high = mean - half, mean + half
    index = np.nonzero(present)[0].astype(np.int64)
    lowest = from_step + (index * span + count - 1) // count
    highest = from_step + ((index + 1) * span + count - 1) // count - 1
    x = 0.5 * (lowest.astype(np.float64) + highest.astype(np.float64))
    return x, mean, low, high, n.astype(np.int64)


def write_output(path, curves):
    with open(path, "wb") as out:
        for x, mean, low, high, n in curves:
            out.write(np.array([len(x)], dtype="<i8").tobytes())
            for column in (x, mean, low, high):
                out.write(np.ascontiguousarray(column, dtype="<f8").tobytes())
            out.write(np.ascontiguousarray(n, dtype="<i8").tobytes())


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: compare_runs_peer.py INPUT OUTPUT (see the header)")
    groups, buckets, from_step, to_step, band, repetitions = read_input(sys.argv[1])
    print(json.dumps({"type": "ready", "numpy": np.__version__, "groups": len(groups)}), flush=True)
    written = False
    for line in sys.stdin:
        command = line.strip()
        if command == "quit":
            break
        if command != "round":
            sys.exit(f"compare_runs_peer: unknown command {command!r} (expected round or quit)")
        seconds = []
        for _ in range(repetitions):
            start = time.perf_counter()
            curves = [group_curve(runs, buckets, from_step, to_step, band) for runs in groups]
            seconds.append(time.perf_counter() - start)
        if not written:
            write_output(sys.argv[2], curves)
            written = True
        print(json.dumps({"type": "round", "seconds": seconds}), flush=True)


if __name__ == "__main__":
    main()
