from __future__ import annotations

from collections.abc import Iterator

import pytest
import responses


@pytest.fixture(autouse=True)
def no_network() -> Iterator[None]:
    """Unit tests never reach the network: an unregistered request fails the test."""
    responses.start()
    yield
    responses.stop()
    responses.reset()
