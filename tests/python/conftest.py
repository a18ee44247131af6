import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import spire  # noqa: E402

# SPIRE_TEST_DEVICES=cuda:0,vulkan:0 picks the devices (a name not present makes its tests fail); default: all present.
DEVICES = [d for d in os.environ.get("SPIRE_TEST_DEVICES", "").split(",") if d] or [d.id for d in spire.devices()]


def pytest_generate_tests(metafunc):
    # Every test taking `device` runs once per device present (here lavapipe; on a GPU machine cuda:0 and vulkan:0).
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", DEVICES)
