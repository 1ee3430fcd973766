#!/usr/bin/env python3
"""Turns a package-benchmark markdown export into ratios of medians against same-run baselines.

Usage: ratios.py RESULTS.md [PROBE.txt]   (run.sh calls it; see README.md)
"""
import re
import sys

SCALE = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}


def medians(path):
    """{benchmark: {metric: p50}} with unit prefixes (K, M) applied."""
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


def main():
    results = medians(sys.argv[1])
    wall = lambda name: results[name]["Time"]
    mallocs = lambda name: results[name].get("Malloc", float("nan"))
    rows = []

    def ratio(label, numerator, denominator, target=None, smaller_is_better=True):
        value = wall(numerator) / wall(denominator)
        verdict = ""
        if target is not None:
            met = value <= target if smaller_is_better else value >= target
            verdict = ("meets" if met else "MISSES") + f" target {'<=' if smaller_is_better else '>='} {target}"
        rows.append((label, f"{value:.2f}x", verdict))

    ratio("Steady: Mailroom / AsyncStream", "Steady/Mailroom", "Steady/AsyncStream", 1.15)
    ratio("Paced: Mailroom / AsyncStream", "Paced/Mailroom", "Paced/AsyncStream")
    ratio("Paced: messages(of:for:) / Mailroom", "Paced/messages(of:for:)", "Paced/Mailroom", 1.5, False)
    ratio("Steady: messages(of:for:) / Mailroom", "Steady/messages(of:for:)", "Steady/Mailroom")
    lost = results["Steady/messages(of:for:)"].get("Delivered")
    if lost is not None:
        rows.append(("Steady: mail messages(of:for:) delivered", f"{lost:,.0f} / 10,000", "the rest dropped silently"))
    ratio("Steady: NotificationCenter / Mailroom", "Steady/NotificationCenter", "Steady/Mailroom")
    ratio("Steady: AsyncChannel / Mailroom", "Steady/AsyncChannel", "Steady/Mailroom")
    ratio("Burst: Mailroom / AsyncStream", "Burst/Mailroom", "Burst/AsyncStream")
    ratio("Post, 10k other types / alone", "PostCost/10k other types", "PostCost/alone", 1.1)
    ratio("Post, 10k other value senders / alone", "PostCost/10k other value senders", "PostCost/pinned alone", 1.1)
    ratio("Post, 10k other object senders / alone", "PostCost/10k other object senders", "PostCost/object alone", 1.1)
    ratio("Fan-out per delivery: x1000 / x10", "FanOut/Mailroom x1000", "FanOut/Mailroom x10", 1.2)
    ratio("Single posts / post(contentsOf:)", "PostCost/alone", "PostCost/contentsOf")

    churn = results["Churn/subscribe+drop"]["Throughput"]
    rows.append(("Subscribe + drop, pairs per second", f"{churn:,.0f}", ("meets" if churn >= 300e3 else "MISSES") + " target >= 300,000"))
    rows.append(("Subscribe + iterate + cancel, per second", f"{results['Churn/subscribe+iterate+cancel']['Throughput']:,.0f}", ""))
    extra = (mallocs("Steady/Mailroom") - mallocs("Steady/AsyncStream")) / 10_000
    rows.append(("Mallocs per post beyond AsyncStream's", f"{extra:+.2f}", ("meets" if extra <= 1 else "MISSES") + " target <= 1"))

    if len(sys.argv) > 2:
        for line in open(sys.argv[2]):
            label, _, value = line.strip().partition(": ")
            if label and value:
                rows.append((label, value.split(" | ")[0], value.split(" | ")[1] if " | " in value else ""))

    width = max(len(row[0]) for row in rows)
    print(f"\n{'Measure'.ljust(width)}  {'Value':>12}  Verdict")
    for label, value, verdict in rows:
        print(f"{label.ljust(width)}  {value:>12}  {verdict}")


if __name__ == "__main__":
    main()
