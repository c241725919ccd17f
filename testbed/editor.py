"""n8n's editor in a real browser: sign in, open a workflow, measure what its canvas shows.

Browser downloads are not reachable on the test machines, so Playwright drives Debian's
`chromium` (installed with apt-get when missing). Measured on n8n 2.41.1, the canvas is:
- one `.vue-flow__node` (attribute `data-id`: the node's id) per node *and* per sticky note;
- inside it, an element with `data-node-name` and `data-node-type` (`n8n-nodes-base.stickyNote`
  for a note). A node's also has `data-test-id="canvas-node"`, a sticky note's has none;
- inside that, the drawn box: the element with `data-canvas-node-render-type` (`default` and
  `data-test-id` `canvas-default-node` / `canvas-trigger-node` for a node, the note's type and
  `data-test-id="sticky"` for a sticky note); node labels hang below that box;
- `.vue-flow__transformationpane` holds the viewport as `translate(x, y) scale(zoom)`.
The editor snaps positions to its 16 px grid and draws nodes 96 × 96, so its boxes differ
from the JSON's by a few pixels.

Example:
    with Editor(n8n.base_url) as editor:
        view = editor.open(workflow_id, tmp_path / "canvas.png")
        print(view.zoom, view.boxes())
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from playwright.sync_api import Browser, Page, Playwright, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from n8n_lockkit.rewrite.canvas.geometry import STICKY_NOTE, Box

from .apt import apt_install
from .client import OWNER
from .errors import SetupFailed
from .polling import WaitTimeout, wait_for
from .progress import Progress, stderr_progress

CHROMIUM_PACKAGE = "chromium"
VIEWPORT = (1600, 1000)  # the window of the measurements in shared notes (canvas.md)
TIMEOUT_MS = 60_000
ZOOM_TO_FIT_KEY = "1"

NODE_SELECTOR = ".vue-flow__node"
LABEL_SELECTOR = "[data-node-name][data-node-type]"
BOX_SELECTOR = "[data-canvas-node-render-type]"
VIEWPORT_SELECTOR = ".vue-flow__transformationpane"
_SCALE = re.compile(r"scale\(\s*([0-9.eE+-]+)")
_MATRIX = re.compile(r"matrix\(\s*([0-9.eE+-]+)")

# Runs in the page: every canvas node and sticky note with the rectangle of its drawn box.
_MEASURE_JS = """
([nodeSelector, labelSelector, boxSelector]) =>
  Array.from(document.querySelectorAll(nodeSelector)).map((el) => {
    const label = el.querySelector(labelSelector) || el;
    const box = el.querySelector(boxSelector) || label;
    const r = box.getBoundingClientRect();
    return {
      id: el.getAttribute("data-id") || "",
      name: label.getAttribute("data-node-name") || "",
      type: label.getAttribute("data-node-type") || "",
      x: r.x, y: r.y, width: r.width, height: r.height,
    };
  })
"""


def chromium_binary(progress: Progress = stderr_progress) -> str:
    """Path of Debian's chromium, installing the package when it is missing."""
    found = shutil.which(CHROMIUM_PACKAGE)
    if found:
        return found
    progress(f"{CHROMIUM_PACKAGE} not on PATH: installing the Debian package {CHROMIUM_PACKAGE}")
    apt_install(CHROMIUM_PACKAGE, hint="then run the canvas tests again")
    found = shutil.which(CHROMIUM_PACKAGE)
    if not found:
        raise SetupFailed(f"apt-get installed {CHROMIUM_PACKAGE} but it is still not on PATH")
    return found


@dataclass(frozen=True)
class CanvasNode:
    """One node or sticky note as the editor draws it; `box` is in page pixels."""

    id: str
    name: str
    type: str
    box: Box

    @property
    def sticky(self) -> bool:
        return self.type == STICKY_NOTE


@dataclass(frozen=True)
class CanvasView:
    """What the editor showed for one workflow after zoom to fit."""

    workflow_id: str
    nodes: tuple[CanvasNode, ...]
    zoom: float | None  # the viewport's scale; None if the transform could not be read
    screenshot: Path

    def boxes(self) -> dict[str, Box]:
        """The drawn box of every node that is not a sticky note, by name."""
        return {n.name: n.box for n in self.nodes if not n.sticky}

    def notes(self) -> dict[str, Box]:
        """The drawn rectangle of every sticky note, by name."""
        return {n.name: n.box for n in self.nodes if n.sticky}


def zoom_of(transform: str) -> float | None:
    """The scale in a CSS transform (`translate(..) scale(s)` or `matrix(s, ..)`)."""
    match = _SCALE.search(transform) or _MATRIX.search(transform)
    return float(match.group(1)) if match else None


class Editor:
    """One signed-in Chromium tab on an n8n editor; use it as a context manager."""

    def __init__(
        self,
        base_url: str,
        *,
        email: str = OWNER["email"],
        password: str = OWNER["password"],
        viewport: tuple[int, int] = VIEWPORT,
        progress: Progress = stderr_progress,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.email = email
        self.password = password
        self.viewport = viewport
        self.progress = progress
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._page: Page | None = None

    def __enter__(self) -> Editor:
        binary = chromium_binary(self.progress)
        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(
                executable_path=binary, args=["--no-sandbox"]
            )
            width, height = self.viewport
            self._page = self._browser.new_page(viewport={"width": width, "height": height})
            self._page.set_default_timeout(TIMEOUT_MS)
            self.sign_in()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._browser is not None:
            self._browser.close()
            self._browser = None
        if self._playwright is not None:
            self._playwright.stop()
            self._playwright = None
        self._page = None

    @property
    def page(self) -> Page:
        if self._page is None:
            raise RuntimeError("Editor is not open: use it as a context manager")
        return self._page

    def sign_in(self) -> None:
        page = self.page
        page.goto(f"{self.base_url}/signin")
        # By name: n8n 1.x generates the inputs' ids, 2.x names them like the fields.
        page.fill('input[name="emailOrLdapLoginId"]', self.email)
        page.fill('input[name="password"]', self.password)
        page.click('[data-test-id="form-submit-button"]')
        try:
            page.wait_for_url(lambda url: "/signin" not in url)
        except PlaywrightError as exc:
            raise SetupFailed(f"could not sign in to {self.base_url} as {self.email}") from exc

    def open(self, workflow_id: str, screenshot: Path, *, zoom_to_fit: bool = True) -> CanvasView:
        """Open /workflow/<id>, press 1 (zoom to fit), measure the canvas, take a screenshot."""
        page = self.page
        page.goto(f"{self.base_url}/workflow/{workflow_id}")
        page.wait_for_selector(NODE_SELECTOR)
        self._wait_until_still()
        if zoom_to_fit:
            page.locator('[data-test-id="canvas"]').hover(position={"x": 5, "y": 5})
            page.keyboard.press(ZOOM_TO_FIT_KEY)
            self._wait_until_still()
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(screenshot))
        selectors = [NODE_SELECTOR, LABEL_SELECTOR, BOX_SELECTOR]
        raw: list[dict[str, Any]] = page.evaluate(_MEASURE_JS, selectors)
        nodes = tuple(
            CanvasNode(
                id=str(item["id"]),
                name=str(item["name"]),
                type=str(item["type"]),
                box=Box(item["x"], item["y"], item["width"], item["height"]),
            )
            for item in raw
        )
        return CanvasView(workflow_id, nodes, zoom_of(self._transform()), screenshot)

    def _transform(self) -> str:
        pane = self.page.query_selector(VIEWPORT_SELECTOR)
        if pane is None:
            return ""
        return str(pane.evaluate("(el) => el.style.transform || getComputedStyle(el).transform"))

    def _state(self) -> str:
        count = len(self.page.query_selector_all(NODE_SELECTOR))
        return f"{count} {self._transform()}"

    def _wait_until_still(self, timeout: float = 10.0) -> None:
        """Wait until the node count and the viewport stay the same for 0.4 s (the editor
        animates zoom to fit and adds nodes in batches)."""
        seen = [self._state()]
        still = [0]

        def settled() -> bool:
            now = self._state()
            still[0] = still[0] + 1 if now == seen[0] else 0
            seen[0] = now
            return still[0] >= 4

        try:
            wait_for(settled, timeout=timeout, interval=0.1, what="the canvas to settle")
        except WaitTimeout:
            self.progress(f"the canvas kept changing for {timeout:.0f} s; measuring it anyway")
