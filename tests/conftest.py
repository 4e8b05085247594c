import os

import pytest

from tests.support import room_times, schedule

# Keep TensorFlow's C++ start-up chatter out of test output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def pytest_addoption(parser: pytest.Parser) -> None:
    room_times.addoption(parser)


def pytest_configure(config: pytest.Config) -> None:
    room_times.register(config)


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by the marks added here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seconds = schedule.measured()
    schedule.mark_slow(items, seconds)
    if hasattr(config, "workerinput"):  # xdist's workers: the order in which files are handed out
        schedule.longest_files_first(items, seconds)
