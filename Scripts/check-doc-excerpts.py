#!/usr/bin/env python3
"""Checks that every Swift code block of the given Markdown files is an excerpt of code that CI
builds and runs: its lines, with runs of spaces made one, appear in that order, consecutively, in one
of the Swift files under the given folders (ignoring `// snippet.hide` markers), or in a code block
of a Markdown file given there (one that CI builds and runs as a whole, like Getting Started).

    Scripts/check-doc-excerpts.py ARTICLE.md ... -- FOLDER|BUILT.md ...
"""

import pathlib
import re
import sys

separator = sys.argv.index("--")
articles = [pathlib.Path(path) for path in sys.argv[1:separator]]
folders = [pathlib.Path(path) for path in sys.argv[separator + 1 :]]


def normalised(lines):
    # Spacing is the formatter's business (it aligns comments its own way), not the reader's.
    return [
        " ".join(line.split())
        for line in lines
        if line.strip() and "snippet.hide" not in line and "snippet.show" not in line
    ]


sources = {}
for folder in folders:
    if folder.suffix == ".md":
        for number, match in enumerate(re.finditer(r"```swift\n(.*?)```", folder.read_text(), re.S)):
            sources[f"{folder} block {number + 1}"] = normalised(match.group(1).splitlines())
        continue
    for path in folder.rglob("*.swift"):
        if ".build" in path.parts or "CompileFailures" in path.parts:  # those must not compile
            continue
        sources[path] = normalised(path.read_text().splitlines())


def found_in(block):
    for path, lines in sources.items():
        for start in range(len(lines) - len(block) + 1):
            if lines[start : start + len(block)] == block:
                return path
    return None


failures = 0
for article in articles:
    text = article.read_text()
    for match in re.finditer(r"```swift\n(.*?)```", text, re.S):
        block = normalised(match.group(1).splitlines())
        line = text[: match.start()].count("\n") + 1
        path = found_in(block)
        if path is None:
            failures += 1
            print(f"{article}:{line}: this code block is not an excerpt of any built and run source", file=sys.stderr)
        else:
            print(f"{article}:{line}: from {path}")
sys.exit(1 if failures else 0)
