from __future__ import annotations

from collections.abc import Iterator

import pytest
import responses


@pytest.fixture(autouse=True)
def no_network() -> Iterator[None]:
    """Unit tests never reach the network: an unregistered request fails the test."""
    with responses.RequestsMock(assert_all_requests_are_fired=False):
        yield
