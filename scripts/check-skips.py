#!/usr/bin/python3
"""Counts the skipped tests of a ctest run by reason, from the JUnit XML that `ctest --output-junit FILE`
writes, and prints a short summary. With --strict, fails (status 1) when a skip's reason matches no line of
the allow-list (tests/skip-allowlist.txt: machine conditions only, each with why it is acceptable).

  scripts/check-skips.py [--strict] [--allowlist FILE] [--gtest-xml DIR] JUNIT.xml [STAGE NAME]
"""
import argparse
import collections
import os
import re
import sys
import xml.etree.ElementTree as ET


def load_allowlist(path):
    """(regex, why) for each line; a line without ' # why' is an error (a skip allowed must say why)."""
    rules = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            pattern, sep, why = line.partition(" # ")
            if not sep or not why.strip() or not pattern.strip():
                sys.exit(f"{path}:{n}: a line is 'PATTERN # why it is acceptable': {line!r}")
            try:
                rules.append((re.compile(pattern.strip()), why.strip()))
            except re.error as e:
                sys.exit(f"{path}:{n}: bad pattern {pattern.strip()!r}: {e}")
    return rules


# gtest prints "FILE:LINE: Skipped" then the message on the next line(s); the ISA environment prints
# "[  SKIPPED ] reason" itself.
_SKIPPED_AT = re.compile(r"^\S+:\d+: Skipped\s*$")
_SKIPPED_LINE = re.compile(r"^\[  SKIPPED \] (.+)$")


def skip_reason(output):
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if _SKIPPED_AT.match(line.strip()):
            for nxt in lines[i + 1:]:
                if nxt.strip():
                    return "(no reason given)" if nxt.startswith("[") else nxt.strip()
            return "(no reason given)"
    for line in lines:
        m = _SKIPPED_LINE.match(line.strip())
        if m and not re.match(r"^\d+ tests?, listed below:", m.group(1)) and "ms)" not in m.group(1):
            return m.group(1).strip()
    return "(no reason given)"


def skipped_cases(junit_path):
    """(test name, reason) of each skipped test case."""
    root = ET.parse(junit_path).getroot()
    out = []
    for tc in root.iter("testcase"):
        status = tc.get("status", "")
        skipped = tc.find("skipped")
        if skipped is None and status not in ("notrun", "skipped", "disabled"):
            continue
        text = "".join(e.text or "" for e in tc.findall("system-out"))
        if skipped is not None and skipped.get("message") and not text:
            text = skipped.get("message")
        out.append((tc.get("name", "?"), skip_reason(text)))
    return out


def gtest_skipped_cases(xml_dir):
    """(test name, reason) of each skipped test in the XML reports gtest wrote (--gtest_output=xml) into xml_dir:
    what a shard-mode run (LCTX_TEST_SHARDS, one ctest per group of tests) leaves, whose ctest JUnit names the
    shards only. gtest's <skipped message> holds "FILE:LINE" then the reason, or the reason alone."""
    out = []
    for name in sorted(os.listdir(xml_dir)):
        if not name.endswith(".xml"):
            continue
        root = ET.parse(os.path.join(xml_dir, name)).getroot()
        for tc in root.iter("testcase"):
            skipped = tc.find("skipped")
            if skipped is None and tc.get("result") != "skipped":
                continue
            message = (skipped.get("message") if skipped is not None else None) or (
                skipped.text if skipped is not None else "") or ""
            lines = [l.strip() for l in message.splitlines() if l.strip()]
            if lines and re.match(r"^\S+:\d+:?$", lines[0]):
                lines = lines[1:]
            if lines and lines[0] == "Skipped":
                lines = lines[1:]
            reason = lines[0] if lines else "(no reason given)"
            out.append((f"{tc.get('classname', '?')}.{tc.get('name', '?')}", reason))
    return out


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strict", action="store_true", help="fail on a skip the allow-list does not name")
    ap.add_argument("--allowlist", default=os.path.join(root, "tests", "skip-allowlist.txt"))
    ap.add_argument("--gtest-xml", metavar="DIR", help="also read the gtest XML reports in DIR (shard mode)")
    ap.add_argument("junit")
    ap.add_argument("stage", nargs="?", default="ctest")
    a = ap.parse_args()

    rules = load_allowlist(a.allowlist)
    cases = skipped_cases(a.junit)
    if a.gtest_xml and os.path.isdir(a.gtest_xml):
        cases += gtest_skipped_cases(a.gtest_xml)
    by_reason = collections.OrderedDict()
    for name, reason in cases:
        by_reason.setdefault(reason, []).append(name)

    print(f"check-skips: {a.stage}: {len(cases)} skipped")
    unallowed = []
    for reason, names in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        rule = next((r for r in rules if r[0].search(reason)), None)
        mark = "allowed" if rule else "NOT ALLOWED"
        print(f"  {len(names):5d}  {reason}  [{mark}]")
        if not rule:
            unallowed.append((reason, names))
    if unallowed:
        for reason, names in unallowed:
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            print(f"check-skips: not on {os.path.relpath(a.allowlist, root)}: {reason!r}: {shown}",
                  file=sys.stderr)
        if a.strict:
            print("check-skips: a skip in CI hides an untested path: install what it needs or, for a machine "
                  "condition, add it to the allow-list with why", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
