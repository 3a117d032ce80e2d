"""A headless chromium (Debian's, /usr/bin/chromium) driven through browser_driver.mjs with
playwright-core: one Node process per test module, one JSON command a line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = HERE / "artifacts"


def missing() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (HERE / "node_modules" / "playwright-core").is_dir():
        return "playwright-core is not installed (make browser)"
    if not Path(CHROMIUM).exists():
        return "chromium is not installed (make browser)"
    return None


class BrowserError(RuntimeError):
    pass


class BrowserSession:
    def __init__(self, timeout: float = 60.0, http_credentials: tuple[str, str] | None = None) -> None:
        """http_credentials: (user, password) the browser answers an HTTP Basic challenge with."""
        self.timeout = timeout
        env = dict(os.environ)
        env.pop("BROWSER_HTTP_CREDENTIALS", None)
        if http_credentials is not None:
            env["BROWSER_HTTP_CREDENTIALS"] = f"{http_credentials[0]}:{http_credentials[1]}"
        self.process = subprocess.Popen(["node", str(HERE / "browser_driver.mjs")], cwd=HERE, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self._read()  # "ready"

    def _read(self) -> Any:
        assert self.process.stdout is not None
        result: list[str] = []
        reader = threading.Thread(target=lambda: result.append(self.process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(self.timeout)
        if not result or not result[0]:
            stderr = self.process.stderr.read() if self.process.poll() is not None and self.process.stderr else ""
            raise BrowserError(f"the browser driver did not answer within {self.timeout}s: {stderr}")
        answer = json.loads(result[0])
        if not answer["ok"]:
            raise BrowserError(answer["error"])
        return answer["value"]

    def do(self, op: str, **args: Any) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.process.stdin.flush()
        return self._read()

    def goto(self, url: str) -> int:
        return int(self.do("goto", url=url))

    def fill(self, selector: str, value: str) -> None:
        self.do("fill", selector=selector, value=value)

    def click(self, selector: str) -> str:
        return str(self.do("click", selector=selector))

    def text(self, selector: str) -> str:
        return str(self.do("text", selector=selector) or "")

    def texts(self, selector: str) -> list[str]:
        return list(self.do("texts", selector=selector))

    def wait_for_text(self, selector: str, text: str, timeout_ms: int = 15000) -> None:
        self.do("waitForText", selector=selector, text=text, timeout=timeout_ms)

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.do("screenshot", path=str(path))
        return path

    def close(self) -> None:
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps({"op": "close"}) + "\n")
            self.process.stdin.flush()
            self.process.wait(20)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
