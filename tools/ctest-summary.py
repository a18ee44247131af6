#!/usr/bin/env python3
"""Reads the JUnit file ctest writes (ctest --output-junit FILE) and prints what ctest's own summary hides:
its "100% tests passed" counts skipped tests as passed and never shows why they were skipped. This prints
the real counts, then every test that did not run with its reason: for GoogleTest, the message given to
GTEST_SKIP() (the lines between "file:line: Skipped" and "[  SKIPPED ]"); otherwise ctest's own reason.
A ctest test "TARGET[i/n]" is one shard of a GoogleTest executable (tests/CMakeLists.txt's spire_gtest_shards): its
cases are counted and named one by one from GoogleTest's XML report, build/gtest-results/TARGET.i.xml, next to the
JUnit file's folder (or the folder given by --gtest-results DIR).
    ctest-summary.py JUNIT.xml [--report REGEX] [--gtest-results DIR]
With --report, the tests whose name matches REGEX also have their results printed: the lines of their output
that hold a measurement (the ONNX node-test pass counts, the cross-device table, gradient errors).
Exit status: 0, whatever the tests did (ctest's status is the one to act on); 2 if the file cannot be read.
Standard library only."""
import argparse
import os
import re
import sys
import xml.etree.ElementTree as ET


def gtest_skip_reason(output):
    """The GTEST_SKIP() message in a test's output, '' if it gave none, None if the output has no skip."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if re.search(r":\d+: Skipped$", line) or line.strip() == "Skipped":
            reason = []
            for following in lines[i + 1:]:
                if following.startswith("[  SKIPPED ]"):
                    break
                reason.append(following)
            return "\n".join(reason).strip()
    return None


SHARD = re.compile(r"^(?P<target>.+)\[(?P<number>\d+)/(?P<count>\d+)\]$")


def gtest_report_cases(path):
    """(name, 'passed' | 'failed' | 'skipped', skip reason) for each case of a GoogleTest XML report."""
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '?')}.{case.get('name', '?')}"
        skip = case.find("skipped")
        if case.find("failure") is not None:
            yield name, "failed", ""
        elif skip is not None or case.get("result") == "skipped" or case.get("status") == "notrun":
            text = (skip.text or skip.get("message", "")) if skip is not None else "(disabled)"
            lines = text.splitlines()
            if lines and re.search(r":\d+$", lines[0]):  # GoogleTest's "file:line" before the message
                lines = lines[1:]
            yield name, "skipped", "\n".join(lines).strip()
        else:
            yield name, "passed", ""


def measurement_lines(output):
    """What a report test measured: its lines with numbers in them, without GoogleTest's framing."""
    keep = []
    for line in output.splitlines():
        if line.startswith("[") or line.startswith("Running main()") or line.startswith("Note: Google Test"):
            continue
        if re.search(r"\d", line) and line.strip():
            keep.append(line.rstrip())
    return keep


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], usage=__doc__.split("\n    ")[1].split("\n")[0])
    parser.add_argument("junit")
    parser.add_argument("--report", type=re.compile)
    parser.add_argument("--gtest-results")
    args = parser.parse_args(argv[1:])
    report, results = args.report, args.gtest_results
    try:
        suite = ET.parse(args.junit).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"ctest-summary: cannot read {args.junit}: {e}", file=sys.stderr)
        return 2
    if results is None:
        results = os.path.join(os.path.dirname(os.path.abspath(args.junit)), "gtest-results")
    passed, failed, skipped, reports = [], [], [], []
    for case in suite.iter("testcase"):
        name = case.get("name", "?")
        status = case.get("status", "")
        shard = SHARD.match(name)
        shard_failed = status == "fail" or case.find("failure") is not None
        report_file = shard and os.path.join(results, f"{shard['target']}.{shard['number']}.xml")
        if report_file and os.path.exists(report_file):
            failed_before = len(failed)
            for case_name, result, reason in gtest_report_cases(report_file):
                full = f"{shard['target']}: {case_name}"
                if result == "skipped":
                    skipped.append((full, reason or "(GTEST_SKIP() gave no message)"))
                else:
                    (failed if result == "failed" else passed).append(full)
            if shard_failed and len(failed) == failed_before:  # no case failed, yet the process did (after its cases)
                failed.append(f"{name} (its cases passed; run `ctest -R '^{re.escape(name)}$' -V` for its output)")
            continue
        if report is not None and report.search(name):
            reports.append((name, measurement_lines(case.findtext("system-out") or "")))
        if status == "notrun" or case.find("skipped") is not None:
            out = case.findtext("system-out") or ""
            reason = gtest_skip_reason(out)
            if reason is None:  # not a GoogleTest skip: disabled, missing executable, output cut short, ...
                why = case.find("skipped")
                reason = f"(ctest: {why.get('message') if why is not None else status}; " \
                         f"run `ctest -R '^{re.escape(name)}$' -V` for its output)"
            skipped.append((name, reason or "(GTEST_SKIP() gave no message)"))
        elif status == "fail" or case.find("failure") is not None:
            failed.append(name)
        else:
            passed.append(name)

    if reports:
        print("\nMeasured by the report tests:")
        for name, lines in reports:
            print(f"  {name}")
            for line in lines[-12:]:
                print(f"    {line}")
    total = len(passed) + len(failed) + len(skipped)
    print(f"\n{total} tests: {len(passed)} passed, {len(skipped)} skipped (not counted as passed), "
          f"{len(failed)} failed")
    if skipped:
        # Grouped by reason, in order of first appearance: a missing GPU skips dozens of tests with one reason.
        by_reason = {}
        for name, reason in skipped:
            by_reason.setdefault(reason, []).append(name)
        print(f"\nSkipped tests and their reasons ({len(skipped)}):")
        for reason, names in by_reason.items():
            for name in names:
                print(f"  SKIPPED {name}")
            for i, line in enumerate(reason.splitlines()):
                print(f"    {'because: ' if i == 0 else ' ' * 9}{line}")
    if failed:
        print(f"\nFailed tests ({len(failed)}): " + ", ".join(failed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
