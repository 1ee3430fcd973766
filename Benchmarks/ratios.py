#!/usr/bin/env python3
"""Ratios of medians against baselines measured in the same run, with a verdict per target.

Usage: ratios.py RESULTS.md PROBE.txt [INTERLEAVED.txt ...]   (run.sh calls it; see README.md)

RESULTS.md is package-benchmark's markdown export: every shape, one after another.
PROBE.txt has Probe's "label: value | note" lines (idle memory, latency).
Each INTERLEAVED.txt is one `Probe ratios` process: "sample<TAB>shape<TAB>nanoseconds" lines,
with the two sides of every ratio taking turns. Each process gives a ratio of medians; a
target's verdict uses the median of those, over several processes because where a process's
threads and memory land moves some ratios (see Sources/Probe/Interleaved.swift). Samples are
not pooled across processes: their speeds differ, and pooled medians would compare one
process's numerator with another's denominator. Sequential medians are shown but not judged:
package-benchmark measures one shape after another, so the two sides of a ratio can fall in
different phases of this machine's speed drift.
"""
import re
import statistics
import sys

SCALE = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}

# (label, numerator shape, denominator shape, comparison, target); both reports use these names.
RATIOS = [
    ("Steady: Mailroom / AsyncStream", "Steady/Mailroom", "Steady/AsyncStream", "<=", 1.15),
    ("Paced: Mailroom / AsyncStream", "Paced/Mailroom", "Paced/AsyncStream", None, None),
    ("Paced: messages(of:for:) / Mailroom", "Paced/messages(of:for:)", "Paced/Mailroom", ">=", 1.5),
    ("Post beside 10k other types / alone", "PostCost/10k other types", "PostCost/alone", "<=", 1.1),
    ("Post beside 10k other value senders / alone", "PostCost/10k other value senders", "PostCost/pinned alone", "<=", 1.1),
    ("Post beside 10k other object senders / alone", "PostCost/10k other object senders", "PostCost/object alone", "<=", 1.1),
    ("Fan-out per delivery: x1000 / x10", "FanOut/Mailroom x1000", "FanOut/Mailroom x10", "<=", 1.2),
]


def benchmark_medians(path):
    """{benchmark: {metric: p50}} from package-benchmark's markdown, unit prefixes (K, M) applied."""
    text = open(path).read()
    results = {}
    for match in re.finditer(r"^### (.+?)\n(.*?)(?=^### |\Z)", text, re.S | re.M):
        name, body = match.group(1).strip(), match.group(2)
        metrics = {}
        for line in body.splitlines():
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            try:
                value = float(cells[3])
            except (IndexError, ValueError):
                continue
            unit = re.search(r"\((K|M|G)\)", cells[0])
            key = re.sub(r"\s*\(.*$", "", cells[0]).strip(" *")
            metrics[key] = value * SCALE[unit.group(1) if unit else ""]
        results[name] = metrics
    return results


def interleaved_samples(paths):
    """[{shape: [nanoseconds, ...]}] with one dictionary per process."""
    processes = []
    for path in paths:
        samples = {}
        for line in open(path):
            fields = line.rstrip("\n").split("\t")
            if len(fields) == 3 and fields[0] == "sample":
                samples.setdefault(fields[1], []).append(int(fields[2]))
        processes.append(samples)
    return processes


def verdict(value, comparison, target):
    if comparison is None:
        return ""
    met = value <= target if comparison == "<=" else value >= target
    return ("meets" if met else "MISSES") + f" {comparison} {target}"


def main():
    sequential = benchmark_medians(sys.argv[1])
    processes = interleaved_samples(sys.argv[3:])
    wall = lambda name: sequential[name]["Time"]
    rows = []

    for label, numerator, denominator, comparison, target in RATIOS:
        one_after_another = wall(numerator) / wall(denominator)
        interleaved = spread = ""
        value = one_after_another
        if processes:
            per_process = [
                statistics.median(p[numerator]) / statistics.median(p[denominator]) for p in processes
            ]
            value = statistics.median(per_process)
            interleaved = f"{value:.2f}x"
            spread = f"{min(per_process):.2f}-{max(per_process):.2f}x"
        rows.append((label, f"{one_after_another:.2f}x", interleaved, spread, verdict(value, comparison, target)))

    def sequential_row(label, value, note=""):
        rows.append((label, value, "", "", note))

    steady = wall("Steady/Mailroom")
    sequential_row("Steady: messages(of:for:) / Mailroom", f"{wall('Steady/messages(of:for:)') / steady:.2f}x")
    delivered = sequential["Steady/messages(of:for:)"].get("Delivered")
    if delivered is not None:
        sequential_row("Steady: mail messages(of:for:) delivered", f"{delivered:,.0f} / 10,000", "the rest dropped silently")
    sequential_row("Steady: NotificationCenter / Mailroom", f"{wall('Steady/NotificationCenter') / steady:.2f}x")
    sequential_row("Steady: AsyncChannel / Mailroom", f"{wall('Steady/AsyncChannel') / steady:.2f}x")
    sequential_row("Burst: Mailroom / AsyncStream", f"{wall('Burst/Mailroom') / wall('Burst/AsyncStream'):.2f}x")
    sequential_row("Single posts / post(contentsOf:)", f"{wall('PostCost/alone') / wall('PostCost/contentsOf'):.2f}x")

    churn = sequential["Churn/subscribe+drop"]["Throughput"]
    sequential_row("Subscribe + drop, pairs per second", f"{churn:,.0f}", verdict(churn, ">=", 300_000))
    iterate = sequential["Churn/subscribe+iterate+cancel"]["Throughput"]
    sequential_row("Subscribe + iterate + cancel, per second", f"{iterate:,.0f}")
    mallocs = lambda name: sequential[name].get("Malloc", float("nan"))
    extra = (mallocs("Steady/Mailroom") - mallocs("Steady/AsyncStream")) / 10_000
    sequential_row("Mallocs per post beyond AsyncStream's", f"{extra:+.2f}", verdict(extra, "<=", 1))
    for shape in ("PostCost/alone", "PostCost/pinned alone", "PostCost/object alone"):
        sequential_row(f"Mallocs per post, {shape}", f"{mallocs(shape) / 10_000:.2f}")

    for line in open(sys.argv[2]):
        label, _, value = line.strip().partition(": ")
        if label and value:
            value, _, note = value.partition(" | ")
            sequential_row(label, value, note)

    headers = ("Measure", "One after another", f"Interleaved, median of {len(processes)}", "Per process", "Verdict")
    widths = [max(len(str(row[column])) for row in rows + [headers]) for column in range(len(headers))]
    print("  ".join(header.ljust(width) for header, width in zip(headers, widths)))
    for row in rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)))


if __name__ == "__main__":
    main()
