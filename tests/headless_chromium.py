"""Open a local HTML file in real headless Chromium and report what the browser rendered.

Tests of generated pages (reports, the docs site) want the browser's verdict, not a parser's guess: whether each
image decoded, which table headers a reader sees, what the page fetched and what it complained about. This drives
Chromium through the Chrome DevTools Protocol over `--remote-debugging-pipe`: Chromium reads NUL-terminated JSON
messages on its fd 3 and writes them on its fd 4, so the standard library is enough (no websockets, no Playwright,
no port to pick). Each `render` starts its own Chromium with a fresh profile, so tests can run side by side.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

DEBIAN_CHROMIUM = "/usr/bin/chromium"

# --disable-background-networking, --disable-component-update and --disable-sync stop Chromium from calling
# Google at start-up, which this machine refuses; --disable-dev-shm-usage because /dev/shm is small in containers.
CHROMIUM_FLAGS = (
    "--headless=new",
    "--remote-debugging-pipe",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--mute-audio",
)

VIEWPORT_HEIGHT = 900
SHUTDOWN_GRACE_S = 5.0
STDERR_TAIL_CHARS = 2000

# Everything a test checks, read in the page once it has loaded. Headers are the table's own (not a nested table's).
COLLECT_PAGE = """(() => ({
  title: document.title,
  images: Array.from(document.images, (img) => ({
    alt: img.alt,
    naturalWidth: img.naturalWidth,
    naturalHeight: img.naturalHeight,
    complete: img.complete,
    src: img.currentSrc || img.src,
  })),
  tables: Array.from(document.querySelectorAll("table"), (table) =>
    Array.from(table.querySelectorAll("th"))
      .filter((th) => th.closest("table") === table)
      .map((th) => th.innerText.trim())),
  text: document.body ? document.body.innerText : "",
}))()"""


@dataclass(frozen=True)
class RenderedImage:
    """One <img> as the browser decoded it: a natural width of 0 means it did not load."""

    alt: str
    natural_width: int
    natural_height: int
    complete: bool
    src_scheme: str


@dataclass(frozen=True)
class RenderedPage:
    """What Chromium showed and did for one page, read after its load event."""

    title: str
    images: list[RenderedImage]
    tables: list[list[str]]
    text: str
    requested_urls: list[str]
    console_errors: list[str]


def chromium_path() -> str | None:
    """Debian's Chromium, or a `chromium` on PATH; None when neither is installed."""
    if os.access(DEBIAN_CHROMIUM, os.X_OK):
        return DEBIAN_CHROMIUM
    return shutil.which("chromium")


def render(html: Path, screenshot: Path | None = None, width: int = 1400, timeout_s: float = 60) -> RenderedPage:
    """Load `html` in a fresh headless Chromium `width` CSS pixels wide and report what it rendered.

    With `screenshot`, also write a PNG of the whole page there. Raises RuntimeError naming what failed: Chromium
    missing or exiting early (with its stderr tail), a DevTools error response, or `timeout_s` running out.
    """
    executable = chromium_path()
    if executable is None:
        raise RuntimeError("Chromium is not installed (looked for /usr/bin/chromium and chromium on PATH)")
    deadline = time.monotonic() + timeout_s
    with (
        tempfile.TemporaryDirectory(prefix="headless-chromium-") as scratch,
        _Chromium(executable, Path(scratch)) as browser,
    ):
        return _render_page(browser, html.resolve().as_uri(), screenshot, width, deadline)


def _render_page(browser: _Chromium, url: str, screenshot: Path | None, width: int, deadline: float) -> RenderedPage:
    target = browser.call("Target.createTarget", {"url": "about:blank"}, deadline=deadline)
    attached = browser.call(
        "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, deadline=deadline
    )
    session = attached["sessionId"]
    for domain in ("Page", "Network", "Runtime", "Log"):
        browser.call(f"{domain}.enable", session=session, deadline=deadline)
    metrics = {"width": width, "height": VIEWPORT_HEIGHT, "deviceScaleFactor": 1, "mobile": False}
    browser.call("Emulation.setDeviceMetricsOverride", metrics, session=session, deadline=deadline)
    # New headless draws a 15px scrollbar on a page taller than the viewport, which would narrow the layout.
    browser.call("Emulation.setScrollbarsHidden", {"hidden": True}, session=session, deadline=deadline)
    navigation = browser.call("Page.navigate", {"url": url}, session=session, deadline=deadline)
    if navigation.get("errorText"):
        raise RuntimeError(f"Chromium could not open {url}: {navigation['errorText']}")
    browser.wait_for_event("Page.loadEventFired", session, since=navigation["_received_at"], deadline=deadline)
    evaluated = browser.call(
        "Runtime.evaluate", {"expression": COLLECT_PAGE, "returnByValue": True}, session=session, deadline=deadline
    )
    if "exceptionDetails" in evaluated:
        raise RuntimeError(f"reading the rendered page failed: {_exception_text(evaluated['exceptionDetails'])}")
    if screenshot is not None:
        screenshot.write_bytes(_capture_full_page(browser, session, deadline))
    page = evaluated["result"]["value"]
    events = browser.events_of(session)
    return RenderedPage(
        title=page["title"],
        images=[
            RenderedImage(
                alt=image["alt"],
                natural_width=image["naturalWidth"],
                natural_height=image["naturalHeight"],
                complete=image["complete"],
                src_scheme=urlsplit(image["src"]).scheme,
            )
            for image in page["images"]
        ],
        tables=page["tables"],
        text=page["text"],
        requested_urls=[
            event["params"]["request"]["url"] for event in events if event["method"] == "Network.requestWillBeSent"
        ],
        console_errors=[error for event in events if (error := _console_error(event)) is not None],
    )


def _capture_full_page(browser: _Chromium, session: str, deadline: float) -> bytes:
    """The whole page as a PNG, not just the viewport: clipped to the content size the layout reports."""
    layout = browser.call("Page.getLayoutMetrics", session=session, deadline=deadline)
    content = layout["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": content["width"], "height": content["height"], "scale": 1}
    shot = browser.call(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": True, "clip": clip},
        session=session,
        deadline=deadline,
    )
    return base64.b64decode(shot["data"])


def _console_error(event: dict[str, Any]) -> str | None:
    """The message of an uncaught exception, a console.error call or an error log entry; None for other events."""
    params = event.get("params", {})
    if event["method"] == "Runtime.exceptionThrown":
        return _exception_text(params["exceptionDetails"])
    if event["method"] == "Runtime.consoleAPICalled" and params.get("type") == "error":
        return " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", []))
    if event["method"] == "Log.entryAdded" and params["entry"].get("level") == "error":
        entry = params["entry"]
        return f"{entry['text']} ({entry['url']})" if entry.get("url") else entry["text"]
    return None


def _exception_text(details: dict[str, Any]) -> str:
    exception = details.get("exception", {})
    return str(exception.get("description") or details.get("text", "unknown exception"))


class _Chromium:
    """A running headless Chromium and its DevTools pipe: calls matched to responses by id, events kept in order.

    Leaving the `with` block closes the browser and ends every process it started, whatever state it is in.
    """

    def __init__(self, executable: str, scratch: Path) -> None:
        self._stderr_path = scratch / "chromium-stderr.log"
        to_chromium_read, self._to_chromium = os.pipe()
        self._from_chromium, from_chromium_write = os.pipe()
        # Chromium wants its ends as fds 3 and 4 exactly. Copies at 5 or above cannot be overwritten by the first
        # dup2 in the child, whichever numbers os.pipe happened to return.
        child_read = fcntl.fcntl(to_chromium_read, fcntl.F_DUPFD_CLOEXEC, 5)
        child_write = fcntl.fcntl(from_chromium_write, fcntl.F_DUPFD_CLOEXEC, 5)
        os.close(to_chromium_read)
        os.close(from_chromium_write)

        def wire_pipe() -> None:
            os.dup2(child_read, 3)
            os.dup2(child_write, 4)

        try:
            with open(self._stderr_path, "wb") as stderr:
                self._process = subprocess.Popen(
                    [executable, *CHROMIUM_FLAGS, f"--user-data-dir={scratch / 'profile'}"],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,  # a file, not a pipe: Chromium logs a lot and would block on a full pipe
                    pass_fds=(3, 4),
                    preexec_fn=wire_pipe,
                    start_new_session=True,  # its own process group, so the renderers can be killed with it
                )
        except BaseException:
            for fd in (self._to_chromium, self._from_chromium):
                os.close(fd)
            raise
        finally:
            os.close(child_read)
            os.close(child_write)
        self._buffer = bytearray()
        self._next_id = 0
        self._responses: dict[int, dict[str, Any]] = {}
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> _Chromium:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Ask Chromium to close, then kill whatever is left of its process group, and only then reap it.

        Chromium's helper processes can outlive the browser process and keep writing to the profile. Until the
        browser process is reaped its id cannot be reused, so killing the group cannot reach anything else.
        """
        try:
            with contextlib.suppress(RuntimeError):  # it has exited already
                self._send({"id": self._take_id(), "method": "Browser.close"})
            self._exit_status(within_s=SHUTDOWN_GRACE_S)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()
        finally:
            os.close(self._to_chromium)
            os.close(self._from_chromium)

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None, deadline: float
    ) -> dict[str, Any]:
        """Send one command and return its result.

        The result also carries `_received_at`: how many events had arrived before it, so a caller can wait for an
        event that the command caused (a load after a navigation) and not match an earlier one.
        """
        call_id = self._take_id()
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._send(message)
        while call_id not in self._responses:
            self._receive(deadline, waiting_for=method)
        response = self._responses.pop(call_id)
        if "error" in response:
            error = response["error"]
            raise RuntimeError(f"DevTools {method} failed: {error.get('message')} {error.get('data', '')}".rstrip())
        return {**response.get("result", {}), "_received_at": response["_received_at"]}

    def wait_for_event(self, method: str, session: str, *, since: int, deadline: float) -> dict[str, Any]:
        """The first `method` event on `session` received after position `since`, waiting for it if need be."""
        checked = since
        while True:
            for event in self._events[checked:]:
                if event["method"] == method and event.get("sessionId") == session:
                    return event
            checked = len(self._events)
            self._receive(deadline, waiting_for=method)

    def events_of(self, session: str) -> list[dict[str, Any]]:
        return [event for event in self._events if event.get("sessionId") == session]

    def _take_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self._to_chromium, data) :]
        except BrokenPipeError:
            status = self._exit_status(within_s=SHUTDOWN_GRACE_S) or "closed its pipe"
            raise RuntimeError(f"Chromium {status} before {message['method']}: {self._stderr_tail()}") from None

    def _exit_status(self, *, within_s: float) -> str | None:
        """How the browser process ended ("exited with status 1"), waiting up to `within_s`; None if it still runs.

        Looks without reaping (WNOWAIT), so the process group stays safe to kill in `__exit__`.
        """
        deadline = time.monotonic() + within_s
        while True:
            ended = os.waitid(os.P_PID, self._process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if ended is not None:
                if ended.si_code == os.CLD_EXITED:
                    return f"exited with status {ended.si_status}"
                return f"was killed by signal {ended.si_status}"
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)

    def _receive(self, deadline: float, *, waiting_for: str) -> None:
        """Read until at least one whole message has arrived; file each as a response or an event."""
        chunk = b""
        while b"\0" not in chunk:  # what is left in the buffer never holds a whole message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(f"timed out waiting for Chromium's {waiting_for}")
            readable, _, _ = select.select([self._from_chromium], [], [], remaining)
            if not readable:
                continue
            chunk = os.read(self._from_chromium, 1 << 20)
            if not chunk:
                status = self._exit_status(within_s=SHUTDOWN_GRACE_S) or "closed its pipe"
                raise RuntimeError(f"Chromium {status} while waiting for {waiting_for}: {self._stderr_tail()}")
            self._buffer += chunk
        *messages, rest = self._buffer.split(b"\0")
        self._buffer = bytearray(rest)
        for raw in messages:
            message = json.loads(raw)
            message["_received_at"] = len(self._events)
            if "id" in message:
                self._responses[message["id"]] = message
            else:
                self._events.append(message)

    def _stderr_tail(self) -> str:
        try:
            return self._stderr_path.read_text(errors="replace")[-STDERR_TAIL_CHARS:].strip() or "(no stderr)"
        except OSError:
            return "(no stderr)"
