#!/usr/bin/env python3
"""Fails when a file of the AsyncMail core names a type declared in a higher layer.

The core's folders are layers, listed below from the bottom up; a file may name types of its own
layer and of the layers below it, never of one above. Types are found by their declarations
(`class`, `struct`, `enum`, `protocol`, `actor`, `typealias`); names are matched as whole words
outside comments and string literals.
    Scripts/check-layers.py            (no arguments; run from anywhere)
"""
import pathlib
import re
import sys

LAYERS = ["Support", "Values", "Instrumentation", "Delivery", "RouteTables", "Registry", "Streams", "Mailroom"]
ROOT = pathlib.Path(__file__).resolve().parent.parent / "Sources" / "AsyncMail"
# Top-level declarations only: a nested `Element` or `State` is not a layer's type.
DECLARATION = re.compile(
    r"^(?:(?:public|package|internal|private|fileprivate|final|indirect)\s+)*"
    r"(?:class|struct|enum|protocol|actor|typealias)\s+([A-Z]\w*)",
    re.M,
)


def code_of(text):
    """The text without comments and string literals, which may name anything."""
    text = re.sub(r'"""[\s\S]*?"""', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"/\*[\s\S]*?\*/", "", text)
    return re.sub(r"//[^\n]*", "", text)


def main():
    files = {}
    for path in sorted(ROOT.rglob("*.swift")):
        layer = path.relative_to(ROOT).parts[0]
        if layer not in LAYERS:
            print(f"{path.relative_to(ROOT)}: folder {layer!r} is not a layer in {LAYERS}")
            return 1
        files[path] = (LAYERS.index(layer), code_of(path.read_text()))
    declared = {}
    for path, (level, code) in files.items():
        for name in DECLARATION.findall(code):
            # A nested type (`Registry`, `Queue`) may share a name with another: keep the lowest.
            declared[name] = min(level, declared.get(name, level))
    failures = 0
    for path, (level, code) in files.items():
        for name in sorted(set(re.findall(r"\b[A-Z]\w*\b", code))):
            if declared.get(name, -1) > level:
                print(f"{path.relative_to(ROOT.parent.parent)}: {LAYERS[level]} names {name}, "
                      f"declared in {LAYERS[declared[name]]}, a higher layer")
                failures += 1
    if failures:
        print(f"{failures} names from a higher layer; layers, bottom up: {' < '.join(LAYERS)}")
        return 1
    print(f"layers hold: {' < '.join(LAYERS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
