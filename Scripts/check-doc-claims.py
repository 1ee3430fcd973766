#!/usr/bin/env python3
"""Fails when a README or an article names behaviour the code no longer has.

    Scripts/check-doc-claims.py DOC.md ...

1. Every call written as a selector in inline code (`subscribe(to:from:after:)`,
   ``Mailroom/whileSubscribed(to:from:stopAfter:run:)``) whose name is a public symbol of a
   product (API/*.txt, the listings Scripts/check-api.sh keeps true) must be a call that exists:
   its labels, in order, those of one overload (defaulted ones may be left out). A renamed or
   removed call fails here. Names that are no product's (Foundation's, a dependency's) are skipped.
2. In the chat example's README, every paragraph or item that claims something about positions,
   resets or presence names, in a `<!-- scenarios: NAME, ... -->` comment, the scenarios of
   Examples/ChatServer/Tests/chat_test.py that exercise it (CI runs them all); each must exist,
   and each wire form the claim shows in inline code (a query such as `?after=oldest`, a frame
   such as `{"reset": {"missed": N}}`, a route, a setting) must appear in one of those scenarios'
   code, with the claim's placeholders (N, POSITION, <...>, {room}) standing for anything.
"""

import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
failures = []

# --- 1. Selectors against the public API ---------------------------------------------------

overloads = {}  # "name" and "Type.name" -> [labels]
for listing in (root / "API").glob("*.txt"):
    for line in listing.read_text().splitlines():
        match = re.match(r"\S+ (?:\w+:)?([\w.]+)\(([\w:]*)\):", line)
        if not match:
            continue
        qualified, labels = match.group(1), match.group(2).split(":")[:-1]
        overloads.setdefault(qualified, []).append(labels)
        overloads.setdefault(qualified.split(".")[-1], []).append(labels)


def is_subsequence(wanted, labels):
    remaining = iter(labels)
    return all(label in remaining for label in wanted)


selector = re.compile(r"`+(?:(?:\w+/)*?((?:[A-Z]\w*[./])*)(\w+))\(((?:\w+:)*)\)`+")

documents = [pathlib.Path(path) for path in sys.argv[1:]]
for document in documents:
    for number, line in enumerate(document.read_text().splitlines(), 1):
        for match in selector.finditer(line):
            owner = match.group(1).rstrip("./").split("/")[-1].split(".")[-1]
            name = match.group(2)
            labels = match.group(3).split(":")[:-1]
            key = f"{owner}.{name}" if owner else name
            if key not in overloads:
                continue  # not a product's symbol (or a member of a type that is not one)
            if not any(is_subsequence(labels, candidate) for candidate in overloads[key]):
                known = ", ".join(sorted({f"{name}({''.join(l + ':' for l in c)})" for c in overloads[key]}))
                failures.append(f"{document}:{number}: {match.group(0)} is no call of the API (there is: {known})")

# --- 2. The chat README's claims against its scenarios ---------------------------------------

chat_readme = root / "Examples/ChatServer/README.md"
chat_tests = (root / "Examples/ChatServer/Tests/chat_test.py").read_text()
scenario_table = re.search(r"SCENARIOS = \{(.*?)\n\}", chat_tests, re.S).group(1)
scenarios = dict(re.findall(r'"([\w-]+)": \((\w+),', scenario_table))


def function_source(name):
    match = re.search(rf"^(async )?def {name}\(.*?(?=^\S)", chat_tests, re.S | re.M)
    return match.group(0) if match else ""


claim_words = re.compile(r"\bpositions?\b|\?after|\breset\b|\bpresence\b", re.I)
wire_form = re.compile(r"`([^`]*(?:\?after|\{\"|/presence|CHAT_PRESENCE|CHAT_HISTORY)[^`]*)`")
placeholder = re.compile(r"\bN\b|POSITION|<[^>]*>")

if chat_readme in [document.resolve() for document in documents] or chat_readme.exists():
    text = chat_readme.read_text()
    # Paragraphs and list items outside code blocks.
    without_code = re.sub(r"```.*?```", lambda block: "\n" * block.group(0).count("\n"), text, flags=re.S)
    blocks = re.split(r"\n\s*\n|\n(?=- )", without_code)
    for block in blocks:
        if block.lstrip().startswith("#") or not claim_words.search(block):
            continue
        where = f"{chat_readme.relative_to(root)}: \"{' '.join(block.split())[:70]}…\""
        named = re.search(r"<!-- scenarios: ([\w, -]+) -->", block)
        if not named:
            failures.append(f"{where} claims something about positions or presence and names no scenario")
            continue
        names = [name.strip() for name in named.group(1).split(",")]
        unknown = [name for name in names if name not in scenarios]
        if unknown:
            failures.append(f"{where} names scenarios that do not exist: {', '.join(unknown)}")
            continue
        code = "\n".join(function_source(scenarios[name]) for name in names)
        # The helpers a scenario calls (`room_presence(...)`) are part of what it exercises.
        helpers = set(re.findall(r"\b(\w+)\(", code)) - set(scenarios.values())
        code += "\n".join(function_source(helper) for helper in helpers)
        code += "\n" + scenario_table  # a scenario's settings, and the environments they name
        code += "\n".join(re.findall(r"^[A-Z_]+ = .*$", chat_tests, re.M))
        for form in wire_form.findall(block):
            if form.startswith("{"):
                # A frame: the scenario reads or compares every key it shows.
                missing = [key for key in re.findall(r'"(\w+)":', form) if not re.search(f"[\"']{key}[\"']", code)]
            else:
                # A query, route or setting: what follows the room, with placeholders matching anything.
                literal = form.removeprefix("GET ").split("{room}")[-1]
                pattern = ".+?".join(re.escape(part) for part in placeholder.split(literal))
                # A setting `NAME=VALUE` may be written `"NAME": VALUE` or `NAME=VALUE` in Python.
                pattern = re.sub(r"^([A-Z_]+)=", r"\1[\"']?\\s*[:=]\\s*", pattern)
                missing = [] if re.search(pattern, code) else [literal]
            if missing:
                failures.append(
                    f"{where} shows `{form}`, and none of its scenarios ({', '.join(names)}) "
                    f"exercises {', '.join(missing)}"
                )

for failure in failures:
    print(failure)
if failures:
    sys.exit(f"{len(failures)} claims of the documentation are no longer true of the code")
print(f"documentation claims: {len(documents)} documents checked")
