#!/usr/bin/env python3
"""Per-stage latency of turns from a build with bench/trace/turn-stages.patch applied.

The instrumented serve, run with SY_TRACE=FILE, appends one line per turn to FILE (absolute start in us, then
offsets in us of: claim submitted, claim answered, upstream start called, start returned, request sent,
upstream head, first client write; -1 = never) and one line per store unit to FILE.store (kind, urgent, group
size, push time, queue wait, run time). Usage: stages.py FILE [FILE...]. Scenarios of one bench run are told
apart by gaps of more than 3 s between turns.
"""
import bisect
import os
import sys

STAGES = ["claim submitted", "claim answered", "start called", "start returned", "request sent",
          "upstream head", "first client write"]


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))] if values else -1


def line(name, values):
    print("  %-20s n=%5d p50=%7d p90=%7d p99=%7d us" % (name, len(values), pct(values, .5), pct(values, .9),
                                                       pct(values, .99)))


def scenarios(turns):
    groups = [[turns[0]]]
    for a, b in zip(turns, turns[1:]):
        if b[0] - a[0] > 3_000_000:
            groups.append([])
        groups[-1].append(b)
    return groups


def main(path):
    turns = [list(map(int, l.split())) for l in open(path)]
    urgent = []
    if os.path.exists(path + ".store"):
        for kind, is_urgent, _n, push, wait, run in (l.split() for l in open(path + ".store")):
            if is_urgent == "1":
                urgent.append((int(push), int(wait), int(run)))
    urgent.sort()
    pushes = [u[0] for u in urgent]
    for group in scenarios(turns):
        print("%s: %d turns" % (path, len(group)))
        for i, name in enumerate(STAGES, start=1):
            line(name, [t[i] for t in group if t[i] >= 0])
        queue, run, back = [], [], []
        for t in group:
            if t[1] < 0 or t[2] < 0:
                continue
            submitted, answered = t[0] + t[1], t[0] + t[2]
            k = bisect.bisect_left(pushes, submitted)
            if k < len(pushes) and pushes[k] - submitted < 100:  # the store saw this claim's push
                push, wait, ran = urgent[k]
                queue.append(wait)
                run.append(ran)
                back.append(answered - (push + wait + ran))
        if queue:
            print("  claim, split by the store trace:")
            line("store queue", queue)
            line("store unit", run)
            line("back to proxy", back)


if __name__ == "__main__":
    for f in sys.argv[1:]:
        main(f)
