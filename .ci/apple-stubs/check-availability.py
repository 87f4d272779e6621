#!/usr/bin/env python3
"""Checks the Apple stubs against their availability record (`availability.tsv` beside this file).

Run by `.ci/apple-typecheck` after it has built the stub modules once per platform with symbol
graphs (argument: its work folder, holding <PLATFORM>/modules/*.symbols.json). For every platform:

1. Every symbol a stub declares has a row in the record, and every row names a declared symbol.
2. A probe per symbol compiles where the record gives a version and fails where it gives `-`:
   one file of probes that must all compile, and one of probes that must each fail.
3. The stub's `@available` (with what it inherits) introduces, and deprecates, the symbol at the
   record's versions: `8.0`, or `9.0..18.0` for introduced in 9.0 and deprecated in 18.0.
4. No symbol is introduced after the package's deployment target (Package.swift `platforms`): a
   use of a newer one needs an `#available` guard, which only an Apple compiler checks.

Exits 1 with one line per disagreement.
"""
import json, os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PLATFORMS = {"IOS": "iOS", "MACOS": "macOS", "VISIONOS": "visionOS", "WATCHOS": "watchOS", "TVOS": "tvOS"}
COLUMNS = ["iOS", "macOS", "visionOS", "watchOS", "tvOS"]
STUBS = ["AppleStubBase", "LocalAuthentication", "Security", "CryptoKit", "DeviceCheck", "CryptoTokenKit"]


def version(text):
    return tuple(int(part) for part in text.split("."))


def normal(parts):
    parts = list(parts)
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def graph_version(entry):
    return normal((entry.get("major", 0), entry.get("minor", 0), entry.get("patch", 0)))


def read_record():
    record = {}
    with open(os.path.join(HERE, "availability.tsv")) as f:
        for number, line in enumerate(f, 1):
            if line.startswith("#") or not line.strip():
                continue
            cells = line.rstrip("\n").split("\t")
            if len(cells) != 8:
                sys.exit(f"availability.tsv:{number}: expected 8 tab-separated cells, found {len(cells)}")
            symbol, *versions, basis, source = cells
            if basis not in ("page", "header", "parent", "unread") or not source.startswith("https://"):
                sys.exit(f"availability.tsv:{number}: basis must be page, header, parent or unread, and source a page")
            record[symbol] = (dict(zip(COLUMNS, versions)), basis, source)
    return record


def deployment_targets():
    text = open(os.path.join(ROOT, "Package.swift")).read()
    targets = {}
    for name, major in re.findall(r"\.(macOS|iOS|tvOS|watchOS|visionOS)\(\.v(\d+)\)", text):
        targets[name] = (int(major),)
    return targets


def declared(work, platform):
    """The symbols each stub declares for `platform`: path -> (kind, availability, file, line)."""
    symbols = {}
    for stub in STUBS:
        graph = json.load(open(os.path.join(work, platform, "modules", f"{stub}.symbols.json")))
        for symbol in graph["symbols"]:
            location = symbol.get("location", {})
            if not location.get("uri", "").endswith(f"/{stub}.swift"):
                continue  # re-exported Foundation and Glibc, synthesized members
            path = stub + "." + ".".join(symbol["pathComponents"])
            symbols[path] = (symbol["kind"]["identifier"], symbol.get("availability", []),
                             location["uri"].replace("file://", ""), location["position"]["line"] + 1)
    return symbols


def probe(path, kind):
    """A statement that uses the symbol, so that it compiles only where the symbol exists."""
    module, *rest = path.split(".")
    name = rest[-1]
    owner = ".".join(rest[:-1])
    if kind in ("swift.class", "swift.struct", "swift.enum", "swift.typealias"):
        return f"_ = {'.'.join(rest)}.self"
    if kind == "swift.init":
        return f"_ = {owner}()" if name == "init()" else f"_ = {owner}.{name}"
    if kind in ("swift.property",):
        return f"_ = \\{owner}.{name}"
    if kind in ("swift.method", "swift.type.method", "swift.enum.case", "swift.type.property"):
        return f"_ = {owner}.{name.replace('()', '')}" if name.endswith("()") else f"_ = {owner}.{name}"
    if kind in ("swift.var", "swift.func"):
        return f"_ = {name}"
    raise SystemExit(f"check-availability: no probe for {path} ({kind})")


def compile_probe(work, platform, body, name):
    source = os.path.join(work, platform, f"{name}.swift")
    imports = "".join(f"import {stub}\n" for stub in STUBS)
    with open(source, "w") as f:
        f.write(imports + body)
    result = subprocess.run(["swiftc", "-typecheck", "-parse-as-library", "-swift-version", "6", "-D", f"STUB_{platform}",
                             "-I", os.path.join(work, platform, "modules"), source], capture_output=True, text=True)
    return result.returncode == 0, result.stderr


def main():
    work = sys.argv[1]
    record = read_record()
    targets = deployment_targets()
    problems = []
    seen = set()
    graphs = {platform: declared(work, platform) for platform in PLATFORMS}  # each graph is large: read once
    for platform, column in PLATFORMS.items():
        symbols = graphs[platform]
        seen.update(symbols)
        present, absent = [], []
        for path, (versions, _, _) in record.items():
            (absent if versions[column] == "-" else present).append(path)
        # 1 and 3: the stub as declared.
        for path, (kind, availability, file, line) in symbols.items():
            where = f"{os.path.relpath(file, ROOT)}:{line}"
            if path not in record:
                problems.append(f"{where}: {path} is declared but has no row in availability.tsv")
                continue
            expected = record[path][0][column]
            if expected == "-":
                problems.append(f"{where}: {path} is declared for {column}, where the record says it does not exist")
                continue
            introduced, _, deprecated = expected.partition("..")
            entry = next((a for a in availability if a.get("domain") == column), None)
            spelled = graph_version(entry["introduced"]) if entry and "introduced" in entry else None
            if spelled != normal(version(introduced)):
                problems.append(f"{where}: {path} on {column}: @available introduces it in "
                                f"{'.'.join(map(str, spelled)) if spelled else 'nothing'}, the record in {introduced}")
            spelled_deprecated = graph_version(entry["deprecated"]) if entry and "deprecated" in entry else None
            if (spelled_deprecated or None) != (normal(version(deprecated)) if deprecated else None):
                problems.append(f"{where}: {path} on {column}: deprecated in "
                                f"{'.'.join(map(str, spelled_deprecated)) if spelled_deprecated else 'nothing'}, the record says {deprecated or 'never'}")
            if column in targets and normal(version(introduced)) > normal(targets[column]):
                problems.append(f"{where}: {path} is newer ({introduced}) than the {column} deployment target: "
                                "its use needs #available, which this check cannot see")
        for path in present:
            if path not in symbols:
                problems.append(f"availability.tsv: {path} exists on {column} by the record, but no stub declares it there")
        # 2: the probes, as an app would write them.
        kinds = {path: symbols[path][0] for path in present if path in symbols}
        lines = [f"func probe{i}() {{ {probe(path, kind)} }}  // {path}" for i, (path, kind) in enumerate(sorted(kinds.items()))]
        ok, log = compile_probe(work, platform, "\n".join(lines) + "\n", "present-probes")
        if not ok:
            problems.append(f"{column}: the probes of present symbols do not compile:\n{log}")
        other = {}
        for other_platform in PLATFORMS:
            if other_platform != platform:
                other.update({p: k for p, (k, *_) in graphs[other_platform].items()})
        # One file of probes of the absent symbols; each probe's line must carry an error.
        absent_probes = [(path, probe(path, other[path])) for path in sorted(absent) if path in other]
        if absent_probes:
            imports = len(STUBS)
            body = "\n".join(f"func probe{i}() {{ {statement} }}" for i, (_, statement) in enumerate(absent_probes)) + "\n"
            _, log = compile_probe(work, platform, body, "absent-probes")
            failing = {int(n) for n in re.findall(r"absent-probes\.swift:(\d+):\d+: error", log)}
            for i, (path, _) in enumerate(absent_probes):
                if imports + i + 1 not in failing:
                    problems.append(f"{column}: a probe of {path} compiles, where the record says it does not exist")
    for path in record:
        if path not in seen:
            problems.append(f"availability.tsv: {path} is declared by no stub on any platform")
    bases = {}
    for _, basis, _ in record.values():
        bases[basis] = bases.get(basis, 0) + 1
    print(f"check-availability: {len(record)} symbols × {len(PLATFORMS)} platforms; sources: "
          + ", ".join(f"{count} {basis}" for basis, count in sorted(bases.items())))
    for problem in problems:
        print("check-availability: " + problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
