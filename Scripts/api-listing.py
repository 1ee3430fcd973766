#!/usr/bin/env python3
"""Writes the public API of one module as sorted text, one declaration per line.

    Scripts/api-listing.py SYMBOL_GRAPH_DIR MODULE > API/MODULE.txt

Reads the symbol graphs that `swift symbolgraph-extract` wrote for MODULE (its own file and one
per extended module, `MODULE@Other.symbols.json`) and prints, for every public declaration: its
kind, its path, its declaration, and its availability where that is part of the contract (an
`unavailable` overload's message is what a wrong call shows). Conformances follow, one per line.
The listing is sorted and free of source locations, so it changes exactly when the surface does.
"""

import json
import pathlib
import sys


def availability(symbol):
    notes = []
    for entry in symbol.get("availability", []):
        domain = entry.get("domain", "*")
        if entry.get("isUnconditionallyUnavailable"):
            notes.append(f"unavailable({domain})")
        if entry.get("isUnconditionallyDeprecated"):
            notes.append(f"deprecated({domain})")
        for key in ("introduced", "deprecated", "obsoleted"):
            if key in entry:
                version = ".".join(str(entry[key].get(part, 0)) for part in ("major", "minor", "patch"))
                notes.append(f"{key}({domain} {version})")
        if "renamed" in entry:
            notes.append(f"renamed: {entry['renamed']}")
        if "message" in entry:
            notes.append(f"message: {entry['message']}")
    return notes


def main():
    directory, module = pathlib.Path(sys.argv[1]), sys.argv[2]
    graphs = [directory / f"{module}.symbols.json"] + sorted(directory.glob(f"{module}@*.symbols.json"))
    lines = set()
    names = {}
    symbols = []
    for graph in graphs:
        if not graph.exists():
            continue
        data = json.loads(graph.read_text())
        extended = graph.name[len(module) + 1 : -len(".symbols.json")] if "@" in graph.name else None
        for symbol in data["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open"):
                continue
            path = ".".join(symbol["pathComponents"])
            if extended:
                path = f"{extended}:{path}"
            names[symbol["identifier"]["precise"]] = path
            symbols.append((symbol, path))
        for relation in data.get("relationships", []):
            if relation["kind"] == "conformsTo":
                lines.add(("conformance", relation["source"], relation.get("targetFallback") or relation["target"]))
    out = []
    for symbol, path in symbols:
        declaration = "".join(fragment["spelling"] for fragment in symbol.get("declarationFragments", []))
        declaration = " ".join(declaration.split())
        notes = availability(symbol)
        suffix = f"  [{'; '.join(notes)}]" if notes else ""
        out.append(f"{symbol['kind']['identifier']} {path}: {declaration}{suffix}")
    for _, source, target in lines:
        if source in names:
            # A target in another module is named by its fallback; one in this module by its path.
            out.append(f"conformance {names[source]}: {names.get(target, target)}")
    for line in sorted(set(out)):
        print(line)


if __name__ == "__main__":
    main()
