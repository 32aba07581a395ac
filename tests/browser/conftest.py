"""Browser-test fixtures: axe-core, fetched once from the npm registry and checked against its published digest."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
AXE_VERSION = "4.10.2"
AXE_URL = f"https://registry.npmjs.org/axe-core/-/axe-core-{AXE_VERSION}.tgz"
# The registry's ``dist.integrity`` of that tarball (https://registry.npmjs.org/axe-core/4.10.2).
AXE_SHA512 = "RE3mdQ7P3FRSe7eqCWoeQ/Z9QXrtniSjp1wUjt5nRC3WIpz5rSCve6o3fsZ2aCpJtrZjSZgjwXAoTO5k4tEI0w=="
AXE_CACHE = Path(os.environ.get("VARBOARD_TEST_CACHE", ROOT / "test-artifacts" / "cache"))


def axe_tarball(cache: Path = AXE_CACHE) -> bytes:
    """The axe-core tarball, from the cache or the npm registry; refused unless its sha512 is the published one."""
    path = cache / f"axe-core-{AXE_VERSION}.tgz"
    data = path.read_bytes() if path.exists() else None
    if data is None:
        with urllib.request.urlopen(AXE_URL, timeout=60) as response:  # noqa: S310 (a fixed https URL)
            data = response.read()
    digest = base64.b64encode(hashlib.sha512(data).digest()).decode()
    if digest != AXE_SHA512:
        path.unlink(missing_ok=True)
        raise RuntimeError(f"{AXE_URL}: sha512 {digest} is not the registry's published {AXE_SHA512}")
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".part")
        partial.write_bytes(data)
        partial.replace(path)
    return data


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core's ``axe.min.js``, to inject into a page (``driver.execute_script``)."""
    try:
        data = axe_tarball()
    except (urllib.error.URLError, OSError) as exc:
        skip_or_fail(f"axe-core {AXE_VERSION} is not cached and the npm registry is unreachable: {exc}")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        return archive.extractfile("package/axe.min.js").read().decode("utf-8")


@pytest.fixture
def driver(live_server, selenium_driver):
    """The session's Chromium on the live server, its viewport emulation undone and its page blanked after."""
    selenium_driver.set_script_timeout(60)
    yield selenium_driver
    selenium_driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    selenium_driver.get("about:blank")
