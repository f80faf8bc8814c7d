#!/usr/bin/python3
"""scripts/check-skips.py on the reports the test stages leave: a skip whose reason the allow-list does not name
fails --strict whether ctest's JUnit names it (one process per test) or only a shard's gtest XML does (the
sanitizer stages' LCTX_TEST_SHARDS), and an allowed one passes."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-skips.py")
JUNIT_SHARDS = '<testsuites><testsuite><testcase name="kernels.shard.0" status="run"/></testsuite></testsuites>'


def gtest_xml(reason):
    return ('<testsuites><testsuite name="A"><testcase name="T" status="run" result="skipped" classname="A">'
            f'<skipped message="tests/x.cpp:3&#x0A;{reason}"/></testcase>'
            '<testcase name="U" status="run" result="completed" classname="A"/></testsuite></testsuites>')


class CheckSkips(unittest.TestCase):
    def run_check(self, reason):
        with tempfile.TemporaryDirectory() as d:
            xml_dir = os.path.join(d, "gtest-xml")
            os.mkdir(xml_dir)
            with open(os.path.join(xml_dir, "kernels.shard.0.xml"), "w") as f:
                f.write(gtest_xml(reason))
            junit = os.path.join(d, "junit.xml")
            with open(junit, "w") as f:
                f.write(JUNIT_SHARDS)
            return subprocess.run([sys.executable, SCRIPT, "--strict", "--gtest-xml", xml_dir, junit, "test"],
                                  capture_output=True, text=True)

    def test_a_shards_unallowed_skip_fails(self):
        r = self.run_check("the thing this test needs is missing")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("A.T", r.stderr)

    def test_a_shards_allowed_skip_passes(self):
        r = self.run_check("no AVX2 on this CPU")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("1 skipped", r.stdout)


if __name__ == "__main__":
    unittest.main()
