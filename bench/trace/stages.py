#!/usr/bin/env python3
"""Per-stage latency of turns from a build with bench/trace/turn-stages.patch applied.

The instrumented serve, run with SY_TRACE=FILE, appends one line per turn to FILE: the turn's absolute start in
us, then offsets from it in us of: claim submitted, claim answered, upstream start called, start returned,
request sent, upstream head, first client write, first event handled, its data read, recordSuccess done,
stream committed, sink done (-1 = never), then the request's first byte and its last byte (negative: before
the turn started). One line per store unit goes to FILE.store: kind (W write, R read, G one job of a group, H a
warm-up), urgent, group size, push time, queue wait, run time, thread CPU time of the unit.
Usage: stages.py FILE [FILE...]. Scenarios of one bench run are told apart by gaps of more than 3 s between
turns.
"""
import bisect
import os
import sys

STAGES = ["claim submitted", "claim answered", "start called", "start returned", "request sent",
          "upstream head", "first client write"]
# Consecutive steps of one turn, as (label, column): medians of the differences say where the time goes.
STEPS = [("request first byte", 13), ("request complete", 14), ("turn start", 0), ("claim submitted", 1),
         ("claim answered", 2), ("start called", 3), ("start returned", 4), ("request sent", 5),
         ("upstream head", 6), ("first event handled", 8), ("stream committed", 11), ("first client write", 7)]


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


def column(turn, c):
    return 0 if c == 0 else turn[c] if c < len(turn) else None


def steps(group):
    print("  step by step (median and p90 of each turn's own difference):")
    for (a_name, a), (b_name, b) in zip(STEPS, STEPS[1:]):
        diffs = [column(t, b) - column(t, a) for t in group
                 if column(t, a) is not None and column(t, b) is not None and
                 (a in (0, 13, 14) or t[a] >= 0) and (b in (0, 13, 14) or t[b] >= 0)]
        if diffs:
            print("    %-20s -> %-20s p50=%6d p90=%6d us" % (a_name, b_name, pct(diffs, .5), pct(diffs, .9)))


def main(path):
    turns = [list(map(int, l.split())) for l in open(path)]
    urgent, warm = [], []
    if os.path.exists(path + ".store"):
        for fields in (l.split() for l in open(path + ".store")):
            kind, is_urgent, push, wait, run = fields[0], fields[1], int(fields[3]), int(fields[4]), int(fields[5])
            cpu = int(fields[6]) if len(fields) > 6 else -1
            if is_urgent == "1":
                urgent.append((push, wait, run, cpu))
            if kind == "H":
                warm.append(push + wait)
    urgent.sort()
    warm.sort()
    pushes = [u[0] for u in urgent]
    for group in scenarios(turns):
        print("%s: %d turns" % (path, len(group)))
        for i, name in enumerate(STAGES, start=1):
            line(name, [t[i] for t in group if t[i] >= 0])
        if len(group[0]) > 14:
            steps(group)
        queue, run, cpu, back, warmed, cold = [], [], [], [], [], []
        for t in group:
            if t[1] < 0 or t[2] < 0:
                continue
            submitted, answered = t[0] + t[1], t[0] + t[2]
            k = bisect.bisect_left(pushes, submitted)
            if k < len(pushes) and pushes[k] - submitted < 100:  # the store saw this claim's push
                push, wait, ran, used = urgent[k]
                queue.append(wait)
                run.append(ran)
                cpu.append(used)
                back.append(answered - (push + wait + ran))
                # A warm-up that started in the millisecond before the claim started.
                w = bisect.bisect_left(warm, push + wait)
                (warmed if w > 0 and push + wait - warm[w - 1] < 1000 else cold).append(ran)
        if queue:
            print("  claim, split by the store trace:")
            line("store queue", queue)
            line("store unit", run)
            if cpu and cpu[0] >= 0:
                line("  its thread CPU", cpu)
            line("back to proxy", back)
            if warm:
                line("unit after warm-up", warmed)
                line("unit, no warm-up", cold)


if __name__ == "__main__":
    for f in sys.argv[1:]:
        main(f)
