import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import spire  # noqa: E402

DEVICES = [d.id for d in spire.devices()]


def pytest_generate_tests(metafunc):
    # Every test taking `device` runs once per device present (here lavapipe; on a GPU machine cuda:0 and vulkan:0).
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", DEVICES)
