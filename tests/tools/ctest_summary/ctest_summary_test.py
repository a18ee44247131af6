"""tools/ctest-summary.py counts what ctest's JUnit file and the shards' GoogleTest reports say: every case of a
sharded executable one by one (a skipped case with its reason, never as passed), plain ctest tests as themselves,
and a shard that failed without a report (a crash) as failed."""
import os
import subprocess
import sys
import tempfile
import unittest

SUMMARY = sys.argv.pop(1)

JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="ctest" tests="5">
  <testcase name="plain_passes" status="run"><system-out>ok</system-out></testcase>
  <testcase name="plain_skips" status="run"><skipped message="skipped"/>
    <system-out>x.cpp:3: Skipped
no GPU here
[  SKIPPED ] Plain.Skips</system-out></testcase>
  <testcase name="kernels[1/2]" status="run"><system-out>...</system-out></testcase>
  <testcase name="kernels[2/2]" status="fail"><failure message="Failed"/><system-out>...</system-out></testcase>
  <testcase name="crashes[1/1]" status="fail"><failure message="SEGFAULT"/><system-out>...</system-out></testcase>
</testsuite>
"""

SHARD_1 = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" name="AllTests">
  <testsuite name="AllDevices/OpOnDevice" tests="3">
    <testcase name="Matches/vulkan_0_add_0" status="run" result="completed" classname="AllDevices/OpOnDevice" />
    <testcase name="Matches/vulkan_0_add_1" status="run" result="completed" classname="AllDevices/OpOnDevice" />
    <testcase name="Matches/cuda_0_add_0" status="run" result="skipped" classname="AllDevices/OpOnDevice">
      <skipped message="a.cpp:12&#x0A;no CUDA driver"><![CDATA[a.cpp:12
no CUDA driver]]></skipped>
    </testcase>
  </testsuite>
</testsuites>
"""

SHARD_2 = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="2" name="AllTests">
  <testsuite name="MatmulKernel" tests="2">
    <testcase name="Tiles" status="run" result="completed" classname="MatmulKernel" />
    <testcase name="Pipelines" status="run" result="completed" classname="MatmulKernel">
      <failure message="expected 3, got 4" type=""/>
    </testcase>
  </testsuite>
</testsuites>
"""


class CtestSummary(unittest.TestCase):
    def test_counts_each_case_of_a_shard_and_names_skips_and_failures(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "gtest-results"))
            for name, text in [("ctest-junit.xml", JUNIT), ("gtest-results/kernels.1.xml", SHARD_1),
                               ("gtest-results/kernels.2.xml", SHARD_2)]:
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            out = subprocess.run([sys.executable, SUMMARY, os.path.join(d, "ctest-junit.xml")], capture_output=True,
                                 text=True, check=True).stdout
        # plain_passes, 2 vulkan cases, Tiles passed; plain_skips and the cuda case skipped; Pipelines (which failed
        # kernels[2/2]) and crashes[1/1] (no report) failed.
        self.assertIn("8 tests: 4 passed, 2 skipped (not counted as passed), 2 failed", out)
        self.assertIn("SKIPPED kernels: AllDevices/OpOnDevice.Matches/cuda_0_add_0", out)
        self.assertIn("because: no CUDA driver", out)
        self.assertIn("because: no GPU here", out)
        failures = out[out.index("Failed tests"):]
        self.assertIn("kernels: MatmulKernel.Pipelines", failures)
        self.assertIn("crashes[1/1]", failures)
        self.assertNotIn("Tiles", failures)
        self.assertNotIn("kernels[2/2]", failures)  # its failed case names it

    def test_without_reports_a_shard_counts_as_one_test(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "ctest-junit.xml"), "w") as f:
                f.write(JUNIT)
            out = subprocess.run([sys.executable, SUMMARY, os.path.join(d, "ctest-junit.xml")], capture_output=True,
                                 text=True, check=True).stdout
        self.assertIn("5 tests: 2 passed, 1 skipped (not counted as passed), 2 failed", out)


if __name__ == "__main__":
    unittest.main()
