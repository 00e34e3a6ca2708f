"""The chat page at ``/``, driven in a real headless Chromium against a real server.

The browser is Debian's (``apt-get install chromium chromium-driver``; ``scripts/test.sh``
installs it), driven by Selenium through ``/usr/bin/chromedriver``: nothing is downloaded
at test time. A missing browser fails the test with the fix, rather than skipping it;
``CONVRAG_SKIP_BROWSER=1`` skips it on purpose.

The server is the one ``tests/test_server.py`` starts (uvicorn on an ephemeral port, on
the session's event loop), so Selenium, which blocks, runs in a worker thread while the
loop serves the page. Every wait is on the page's DOM state, bounded by ``WAIT_S``; no
assertion is on how long anything took. Name resolution in the browser is switched off
for every host but 127.0.0.1, so the page is also shown to work offline.

With ``CONVRAG_SCREENSHOT=docs/chat-page.png`` the scenario also saves a 1200x800
screenshot of the page (a cited answer, its sources panel open) there; otherwise the
test writes nothing.
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from convrag.api.routers.ui import STATIC_DIR
from convrag.services import Services
from convrag.stores.records import TurnStart
from convrag.stores.turns import INTERRUPTED_TURN
from convrag.testing.openai_stub import OpenAIStub, Reply
from tests.conftest import stub_llm, use_stub_llm

T = TypeVar("T")

# The real server on an ephemeral port, and a workspace holding the employee records
# (``EMPLOYEES``) with an API key: the fixtures the HTTP tests use.

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: The longest wait for a DOM state (a first answer loads the embedder): a bound, not a
#: measurement.
WAIT_S = 120.0
SKIP_BROWSER = os.environ.get("CONVRAG_SKIP_BROWSER") == "1"
SCREENSHOT = os.environ.get("CONVRAG_SCREENSHOT", "")
#: Longer than the sidebar is wide: it is shown cut with an ellipsis.
NEW_TITLE = "Salary questions: Prasad Chaudhari's total and basic salary, allowances and position"
#: How a conversation's title shows in the sidebar: its line clamp, the lines shown, whether
#: text is cut, how many characters show (those laid out within its box) and its tooltip.
SHOWN_TITLE_JS = """
const button = document.querySelector(arguments[0]), box = button.firstElementChild;
const style = getComputedStyle(box), text = box.firstChild;
const { right, bottom } = box.getBoundingClientRect();
const range = document.createRange();
let shown = 0;
for (let i = 0; i < text.length; i++) {
  range.setStart(text, i);
  range.setEnd(text, i + 1);
  const r = range.getBoundingClientRect();
  if (r.height && r.bottom <= bottom + 0.5 && r.right <= right + 0.5) shown = i + 1;
}
return {
  clamp: style.webkitLineClamp,
  lines: Math.round(box.clientHeight / parseFloat(style.lineHeight)),
  clipped: box.scrollHeight > box.clientHeight,
  shown,
  tooltip: button.title,
};
"""
#: A small document the page uploads; nothing in it answers the test's questions.
UPLOADED_MD = "# Office plants\n\nThe ficus by the window is watered on Mondays.\n"
#: A second one, uploaded together with it (the file input takes several at once).
SECOND_MD = "# Office hours\n\nThe front desk is staffed from eight to six.\n"
#: A comment typed before any rating: kept, and sent with the rating picked after it.
COMMENT = "Quoted the right record."
#: A question sent to a conversation deleted meanwhile (in another tab, say).
ORPHAN_QUESTION = "What is John Doe's salary?"

#: Records ``#send.disabled`` each time a streamed token reaches the page.
_WATCH_SEND = """
window.__sendWhileStreaming = [];
new MutationObserver(() => {
  window.__sendWhileStreaming.push(document.getElementById("send").disabled);
}).observe(document.getElementById("log"),
           {subtree: true, attributes: true, attributeFilter: ["data-tokens"]});
"""


async def _drive_answered_by(
    replies: list[tuple[str, Reply]],
    drive: Callable[[str, str], T],
    base_url: str,
    tenant: dict[str, str],
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
) -> T:
    """``drive(base_url, key)`` in a worker thread (Selenium blocks) while a stub LLM gives
    the first of ``replies`` whose text its prompt holds."""
    async with stub_llm(services, monkeypatch, *replies):
        return await asyncio.to_thread(drive, base_url, tenant["key"])


def _require_browser() -> None:
    """Fail, naming the fix, when Debian's Chromium, its driver or Selenium is missing."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package")
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} not found: run scripts/test.sh, which installs "
            "Debian's chromium and chromium-driver (apt-get) and the dev dependencies; "
            "or set CONVRAG_SKIP_BROWSER=1 to skip the browser test",
            pytrace=False,
        )


@contextmanager
def _chromium() -> Iterator[Any]:
    """Headless Chromium in a fresh profile (also its HOME: ours may be empty), able to
    resolve no host name, so only 127.0.0.1 can be reached."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="convrag-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for arg in (
            "--headless=new",
            "--no-sandbox",  # we run as root
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}",
            "--window-size=1280,1000",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        ):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        env = {
            **os.environ,
            "HOME": profile,
            "XDG_CONFIG_HOME": f"{profile}/.config",
            "XDG_CACHE_HOME": f"{profile}/.cache",
        }
        service = Service(str(CHROMEDRIVER), env=env)
        driver = webdriver.Chrome(service=service, options=options)
        try:
            yield driver
        finally:
            driver.quit()


@dataclass
class Seen:
    """What the browser showed, for the assertions that need the server's side too."""

    conversation_id: str = ""
    workspace_shown: str = ""
    deleted_id: str = ""
    gone_id: str = ""
    found_answer: str = ""
    not_found_answer: str = ""
    resources: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


def _drive(base: str, key: str) -> Seen:
    """The whole scenario in the browser (blocking: runs in a worker thread)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement
    from selenium.webdriver.support.ui import WebDriverWait

    seen = Seen()
    with _chromium() as driver:
        wait = WebDriverWait(driver, WAIT_S, poll_frequency=0.05)

        def by_id(ident: str) -> WebElement:
            return driver.find_element(By.ID, ident)

        def focused(css: str) -> bool:
            """Whether the focused element matches ``css``."""
            return bool(
                driver.execute_script("return document.activeElement.matches(arguments[0])", css)
            )

        def last_turn_finished(d: WebDriver) -> WebElement | None:
            turns = d.find_elements(By.CSS_SELECTOR, "#log > li.turn")
            if turns and turns[-1].get_attribute("data-state") in ("done", "error"):
                return turns[-1]
            return None

        driver.get(f"{base}/")
        assert driver.title == "convrag chat"
        # Labels name the inputs (accessible basics).
        for ident, label in (("api-key", "Workspace API key"), ("question", "Question")):
            assert driver.find_element(By.CSS_SELECTOR, f"label[for={ident}]").text == label

        # Before a key: which key to paste, and no workspace named yet.
        hint = by_id("key-hint")
        assert hint.is_displayed() and not by_id("workspace").is_displayed()
        assert "scripts/run.sh" in hint.text and "convrag keys create -w NAME" in hint.text
        by_id("api-key").send_keys(key)
        by_id("new-conversation").click()
        seen.conversation_id = str(
            wait.until(lambda d: d.find_element(By.ID, "conversation").get_attribute("data-id"))
        )
        # The key accepted: its workspace is named in place of the hint.
        wait.until(lambda d: d.find_element(By.ID, "workspace").is_displayed())
        seen.workspace_shown = by_id("workspace-name").text
        assert by_id("workspace").get_attribute("data-workspace") == seen.workspace_shown
        assert not hint.is_displayed()

        # A question the employee records answer, sent with Enter.
        driver.execute_script(_WATCH_SEND)
        by_id("question").send_keys("What is Prasad Chaudhari's salary?", Keys.ENTER)
        turn = wait.until(last_turn_finished)
        assert turn.get_attribute("data-state") == "done", turn.text
        assert turn.get_attribute("data-no-answer") == "false"
        _assert_confidence_shown(turn)
        body = turn.find_element(By.CSS_SELECTOR, ".answer-text")
        seen.found_answer = str(body.get_attribute("textContent"))
        assert "$120,000" in seen.found_answer
        # It streamed: several token events, each while the send button was disabled.
        assert int(body.get_attribute("data-tokens") or 0) > 1
        while_streaming = driver.execute_script("return window.__sendWhileStreaming")
        assert while_streaming and all(while_streaming), while_streaming
        assert by_id("send").is_enabled()
        # Each [n] is a link to source n, listed under the answer by number and title
        # (its passage is shown in the sources panel, below, and only there).
        cites = body.find_elements(By.CSS_SELECTOR, "a.cite")
        assert cites and cites[0].text == "[1]"
        href = str(cites[0].get_attribute("href"))
        target = href.rsplit("#", 1)[1]
        source = turn.find_element(By.CSS_SELECTOR, f".sources > li#{target}")
        assert source.find_element(By.CSS_SELECTOR, ".badge").text == "[1]"
        assert source.find_element(By.CSS_SELECTOR, ".source-title").text
        assert "Prasad Chaudhari" not in source.text
        first = turn

        # Hovering a marker previews its source (title, snippet) in a tooltip.
        ActionChains(driver).move_to_element(cites[0]).perform()
        preview = wait.until(
            lambda d: (
                d.find_element(By.ID, "cite-preview").is_displayed()
                and d.find_element(By.ID, "cite-preview")
            )
        )
        assert preview.get_attribute("role") == "tooltip"
        assert preview.find_element(By.CSS_SELECTOR, ".preview-title").text
        assert "Prasad Chaudhari" in preview.find_element(By.CSS_SELECTOR, ".preview-snippet").text
        # Enter on it opens the sources panel on that source, with its passage, and the
        # keyboard focus moves into the panel, onto that source.
        cites[0].send_keys(Keys.ENTER)
        wait.until(lambda d: d.execute_script("return location.hash") == f"#{target}")
        wait.until(lambda d: d.find_element(By.ID, "sources-panel").is_displayed())
        selected = by_id("panel-body").find_element(By.CSS_SELECTOR, ".panel-source.selected")
        assert selected.get_attribute("data-n") == "1"
        wait.until(lambda d: focused("#panel-body .panel-source.selected[data-n='1']"))
        assert "Prasad Chaudhari" in selected.find_element(By.CSS_SELECTOR, ".panel-chunk").text
        # Its document's text, fetched with the key, is shown in the panel.
        selected.find_element(By.CSS_SELECTOR, ".load-text").click()
        wait.until(
            lambda d: (
                "Prasad Chaudhari"
                in str(d.find_element(By.ID, "document-text").get_attribute("textContent"))
            )
        )
        assert by_id("document-text").get_attribute("data-document-id")
        if SCREENSHOT:
            # The window's size includes the browser's own bars: add them for an 800 px page.
            bars = driver.execute_script("return window.outerHeight - window.innerHeight")
            driver.set_window_size(1200, 800 + int(bars))
            driver.execute_script("window.scrollTo(0, 0)")
            Path(SCREENSHOT).parent.mkdir(parents=True, exist_ok=True)
            assert driver.save_screenshot(str(Path(SCREENSHOT).resolve()))
            driver.set_window_size(1280, 1000)
        # Escape closes the panel and gives the focus back to the [n] that opened it.
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait.until(lambda d: not d.find_element(By.ID, "sources-panel").is_displayed())
        assert driver.switch_to.active_element == cites[0]

        # An out-of-domain question, sent with the button: the not-found answer.
        by_id("question").send_keys("What is the capital of France?")
        by_id("send").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#log > li.turn")) == 2)
        turn = wait.until(last_turn_finished)
        assert turn.get_attribute("data-state") == "done", turn.text
        assert turn.get_attribute("data-no-answer") == "true"
        assert "Not found" in turn.find_element(By.CSS_SELECTOR, ".notice").text
        _assert_confidence_shown(turn)
        seen.not_found_answer = str(
            turn.find_element(By.CSS_SELECTOR, ".answer-text").get_attribute("textContent")
        )
        assert not turn.find_elements(By.CSS_SELECTOR, "a.cite")
        assert not by_id("status").is_displayed()

        # A comment alone is not a rating: Enter asks for one, and keeps the comment.
        comment = first.find_element(By.CSS_SELECTOR, ".feedback .feedback-comment")
        comment.send_keys(COMMENT, Keys.ENTER)
        state = first.find_element(By.CSS_SELECTOR, ".feedback .feedback-state")
        wait.until(lambda d: "Pick Good or Bad first" in state.text)
        assert first.find_element(By.CSS_SELECTOR, ".feedback").get_attribute("data-rating") is None
        assert comment.get_attribute("value") == COMMENT
        # Thumbs up on the first answer: the page shows the stored rating, with the comment.
        first.find_element(By.CSS_SELECTOR, ".feedback .thumb-up").click()
        wait.until(
            lambda d: (
                first.find_element(By.CSS_SELECTOR, ".feedback").get_attribute("data-rating")
                == "up"
            )
        )
        assert first.find_element(By.CSS_SELECTOR, ".thumb-up").get_attribute("aria-pressed") == (
            "true"
        )
        assert state.text == "Rated, with your comment. Thanks!"

        # The conversation is in the list; rename it there.
        item_css = f"#conversations > li.conversation-item[data-id='{seen.conversation_id}']"
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, item_css))
        driver.find_element(By.CSS_SELECTOR, f"{item_css} .rename").click()
        rename = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, f"{item_css} .rename-input"))
        # (Selected and typed over: WebDriver's clear() would leave the box, which saves.)
        rename.send_keys(Keys.CONTROL, "a")
        rename.send_keys(NEW_TITLE, Keys.ENTER)
        # The list is redrawn as it reloads, so its text is read in one script call.
        titles_js = "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent)"
        wait.until(
            lambda d: d.execute_script(titles_js, f"{item_css} .conversation-title") == [NEW_TITLE]
        )
        # The long title shows on two lines, cut with an ellipsis at the end, long enough
        # to tell titles apart (one line showed some 20 characters); hovering it shows all
        # of it (its tooltip).
        cut = driver.execute_script(SHOWN_TITLE_JS, f"{item_css} .conversation-title")
        assert cut["clamp"] == "2" and cut["lines"] == 2 and cut["clipped"], cut
        assert cut["shown"] >= 40 and cut["tooltip"].startswith(NEW_TITLE), cut

        # A new conversation empties the view; deleting it (confirmed) drops it from the list.
        by_id("new-conversation").click()
        wait.until(
            lambda d: (
                d.find_element(By.ID, "conversation").get_attribute("data-id")
                not in (None, seen.conversation_id)
            )
        )
        seen.deleted_id = str(by_id("conversation").get_attribute("data-id"))
        assert not driver.find_elements(By.CSS_SELECTOR, "#log > li.turn")
        deleted_css = f"#conversations > li.conversation-item[data-id='{seen.deleted_id}']"
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, deleted_css))
        driver.find_element(By.CSS_SELECTOR, f"{deleted_css} .delete").click()
        wait.until(lambda d: d.switch_to.alert).accept()
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, deleted_css))
        assert by_id("conversation").get_attribute("data-id") is None
        # The focus goes to the conversation listed next, not to the page's body.
        wait.until(lambda d: focused(f"{item_css} .conversation-title"))

        # A conversation deleted elsewhere (another tab): sending to it says it no longer
        # exists, drops it from the list, and keeps the question in the box.
        by_id("new-conversation").click()
        wait.until(
            lambda d: (
                d.find_element(By.ID, "conversation").get_attribute("data-id")
                not in (None, seen.conversation_id)
            )
        )
        seen.gone_id = str(by_id("conversation").get_attribute("data-id"))
        gone_css = f"#conversations > li.conversation-item[data-id='{seen.gone_id}']"
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, gone_css))
        httpx.delete(
            f"{base}/v1/conversations/{seen.gone_id}",
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
        ).raise_for_status()
        by_id("question").send_keys(ORPHAN_QUESTION, Keys.ENTER)
        wait.until(lambda d: d.find_element(By.ID, "status").is_displayed())
        assert "no longer exists" in by_id("status").text, by_id("status").text
        assert by_id("question").get_attribute("value") == ORPHAN_QUESTION
        assert not driver.find_elements(By.CSS_SELECTOR, gone_css)
        assert not driver.find_elements(By.CSS_SELECTOR, "#log > li.turn")
        assert by_id("conversation").get_attribute("data-id") is None
        by_id("question").clear()

        # Selecting the renamed one loads its turns, citations and rating back.
        driver.find_element(By.CSS_SELECTOR, f"{item_css} .conversation-title").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#log > li.turn")) == 2)
        assert by_id("conversation").get_attribute("data-id") == seen.conversation_id
        loaded = driver.find_elements(By.CSS_SELECTOR, "#log > li.turn")[0]
        assert loaded.find_elements(By.CSS_SELECTOR, ".answer-text a.cite")
        assert loaded.find_element(By.CSS_SELECTOR, ".feedback").get_attribute("data-rating") == (
            "up"
        )
        # The not-found answer is flagged as it was when it streamed.
        reloaded = driver.find_elements(By.CSS_SELECTOR, "#log > li.turn")[1]
        assert reloaded.get_attribute("data-no-answer") == "true"
        assert "Not found" in reloaded.find_element(By.CSS_SELECTOR, ".notice").text

        # Upload two small Markdown files at once: each one's status is polled until
        # ready, with its chunks, and the status line sums them up.
        with tempfile.TemporaryDirectory(prefix="convrag-upload-") as folder:
            paths = [Path(folder) / "office-plants.md", Path(folder) / "office-hours.md"]
            for path, text in zip(paths, (UPLOADED_MD, SECOND_MD), strict=True):
                path.write_text(text)
            by_id("upload-file").send_keys("\n".join(str(p) for p in paths))
            wait.until(
                lambda d: (
                    d.find_element(By.ID, "upload-status").get_attribute("data-status")
                    in ("ready", "failed")
                )
            )
        upload = by_id("upload-status")
        assert upload.get_attribute("data-status") == "ready", upload.text
        assert int(upload.get_attribute("data-n-chunks") or 0) >= 2
        assert upload.text == "2 files: 2 ready."
        each = driver.find_elements(By.CSS_SELECTOR, "#upload-list > li.upload-item")
        assert [i.get_attribute("data-status") for i in each] == ["ready", "ready"]
        assert [i.text.split(":")[0] for i in each] == ["Office plants", "Office hours"]

        seen.resources = list(
            driver.execute_script(
                "return performance.getEntriesByType('resource').map(e => e.name)"
            )
        )
        # The browser logs each error reply; the 404 sent to the deleted one was expected.
        seen.console_errors = [
            e["message"]
            for e in driver.get_log("browser")
            if e["level"] == "SEVERE" and f"/v1/conversations/{seen.gone_id}/" not in e["message"]
        ]

        # The key and the open conversation survive a reload (session storage, never
        # local storage): the conversation is reopened, the question box focused.
        driver.refresh()
        assert by_id("api-key").get_attribute("value") == key
        assert driver.execute_script("return localStorage.length") == 0
        assert driver.execute_script("return sessionStorage.length") == 2
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#log > li.turn")) == 2)
        assert by_id("conversation").get_attribute("data-id") == seen.conversation_id
        assert focused("#question")
        by_id("forget-key").click()
        assert driver.execute_script("return sessionStorage.length") == 0
        assert by_id("key-hint").is_displayed() and not by_id("workspace").is_displayed()
        # A refused key shows the 401, and a question sent with it stays in the box.
        by_id("api-key").send_keys("not-a-workspace-key")
        by_id("question").send_keys(ORPHAN_QUESTION, Keys.ENTER)
        wait.until(lambda d: d.find_element(By.ID, "status").is_displayed())
        status = by_id("status").text
        assert "(401)" in status and "invalid or revoked API key" in status, status
        assert by_id("conversation").get_attribute("data-id") is None
        assert by_id("question").get_attribute("value") == ORPHAN_QUESTION
        assert not driver.find_elements(By.CSS_SELECTOR, "#log > li.turn")
        # Once a working key is pasted (and the field left), the 401 line goes.
        by_id("api-key").clear()
        by_id("api-key").send_keys(key, Keys.TAB)
        wait.until(lambda d: not d.find_element(By.ID, "status").is_displayed())
    return seen


def _assert_confidence_shown(turn: Any) -> None:
    """A finished turn says how sure it is, and shows the note only for a close call."""
    from selenium.webdriver.common.by import By

    confidence = turn.get_attribute("data-confidence")
    note = turn.find_element(By.CSS_SELECTOR, ".confidence-note")
    assert confidence in ("high", "low")
    assert note.is_displayed() == (confidence == "low")


@pytest.mark.skipif(SKIP_BROWSER, reason="CONVRAG_SKIP_BROWSER=1")
async def test_the_chat_page_streams_a_cited_answer_a_not_found_answer_and_a_401(
    base_url: str, tenant: dict[str, str], services: Services
) -> None:
    _require_browser()
    seen = await asyncio.to_thread(_drive, base_url, tenant["key"])
    # The page shows the stored answers, with the [n] markers as they are stored.
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.get(
            f"{base_url}/v1/conversations/{seen.conversation_id}",
            headers={"Authorization": f"Bearer {tenant['key']}"},
        )
        listed = await client.get(
            f"{base_url}/v1/conversations",
            headers={"Authorization": f"Bearer {tenant['key']}"},
        )
    assert seen.workspace_shown == tenant["workspace"]
    turns = resp.json()["turns"]
    answers = [t["answer"] for t in turns]
    assert answers == [seen.found_answer, seen.not_found_answer]
    # The thumbs up, its comment and the new title were stored; the deleted conversations
    # are gone, and the question sent to one deleted elsewhere started nothing.
    assert turns[0]["feedback"]["rating"] == "up"
    assert turns[0]["feedback"]["comment"] == COMMENT
    titles = {c["id"]: c["title"] for c in listed.json()["conversations"]}
    assert titles[seen.conversation_id] == NEW_TITLE
    assert seen.deleted_id not in titles and seen.gone_id not in titles
    assert seen.not_found_answer == services.settings.no_answer_text
    # Everything the page loaded came from this server.
    assert seen.resources and all(r.startswith(f"{base_url}/") for r in seen.resources)
    assert not seen.console_errors, seen.console_errors


async def test_the_page_answers_head_as_uptime_checks_send_it(base_url: str) -> None:
    """``HEAD /`` was a 405 while ``GET /`` served the page."""
    async with httpx.AsyncClient(timeout=30) as client:
        head = await client.head(f"{base_url}/")
    assert head.status_code == 200 and head.headers["content-type"].startswith("text/html")
    assert head.content == b""


async def test_the_page_loads_without_a_key_and_names_no_other_host(base_url: str) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        page = await client.get(f"{base_url}/")
        script = await client.get(f"{base_url}/static/app.js")
        style = await client.get(f"{base_url}/static/app.css")
        spec = (await client.get(f"{base_url}/openapi.json")).json()
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert style.status_code == 200 and style.headers["content-type"].startswith("text/css")
    assert "/" not in spec["paths"]
    # A URL with a scheme, a scheme-relative one (//host.tld), or a CSS @import.
    external = re.compile(r"\bhttps?://|(?<![:\w])//\w[\w-]*\.\w|@import", re.IGNORECASE)
    for path in sorted(STATIC_DIR.iterdir()):
        assert not external.findall(path.read_text()), path.name


#: A question of one 3,000-character word: it must wrap, not widen the page.
LONG_WORD_QUESTION = "Whatis" + "x" * 3000 + "?"


def _drive_failures(base: str, key: str, conversation_id: str) -> None:
    """A conversation holding an interrupted turn, asked while the LLM fails (blocking)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.support.ui import WebDriverWait

    turns_css = "#log > li.turn"
    with _chromium() as driver:
        wait = WebDriverWait(driver, WAIT_S, poll_frequency=0.05)

        def finished(count: int) -> Any:
            def check(d: WebDriver) -> bool:
                turns = d.find_elements(By.CSS_SELECTOR, turns_css)
                return len(turns) == count and turns[-1].get_attribute("data-state") in (
                    "done",
                    "error",
                )

            return check

        driver.get(f"{base}/")
        driver.find_element(By.ID, "api-key").send_keys(key, Keys.TAB)
        item_css = f"#conversations > li.conversation-item[data-id='{conversation_id}']"
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, item_css))
        driver.find_element(By.CSS_SELECTOR, f"{item_css} .conversation-title").click()
        wait.until(finished(1))

        def check_interrupted() -> None:
            failed = driver.find_elements(By.CSS_SELECTOR, turns_css)[0]
            assert failed.get_attribute("data-state") == "error"
            reason = failed.find_element(By.CSS_SELECTOR, ".answer-error").text
            assert "interrupted" in reason and "restarted" in reason, reason
            # Nothing to rate: no answer was given.
            assert not failed.find_elements(By.CSS_SELECTOR, ".feedback button")

        check_interrupted()

        # The LLM fails: the streamed answer quotes the documents, and says so.
        driver.find_element(By.ID, "question").send_keys(
            "What is Prasad Chaudhari's salary?", Keys.ENTER
        )
        wait.until(finished(2))
        answered = driver.find_elements(By.CSS_SELECTOR, turns_css)[1]
        assert answered.get_attribute("data-state") == "done", answered.text
        note = answered.find_element(By.CSS_SELECTOR, ".fallback-note")
        assert note.text == "The language model failed; this answer quotes the documents."

        # A 3,000-character word wraps: the page is no wider than the window.
        driver.find_element(By.ID, "question").send_keys(LONG_WORD_QUESTION, Keys.ENTER)
        wait.until(finished(3))
        widths = driver.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth]"
        )
        assert widths[0] <= widths[1], widths
        for css in (".question", ".rewrite"):
            wrap = driver.execute_script(
                "return getComputedStyle(document.querySelector(arguments[0])).overflowWrap", css
            )
            assert wrap == "anywhere", (css, wrap)

        # Read back after a reload (the conversation reopens): the same notes.
        driver.refresh()
        wait.until(finished(3))
        check_interrupted()
        stored = driver.find_elements(By.CSS_SELECTOR, turns_css)[1]
        assert stored.find_element(By.CSS_SELECTOR, ".fallback-note").is_displayed()
        assert stored.find_elements(By.CSS_SELECTOR, ".feedback .thumb-up")


@pytest.mark.skipif(SKIP_BROWSER, reason="CONVRAG_SKIP_BROWSER=1")
async def test_the_chat_page_shows_an_interrupted_turn_an_llm_fallback_and_wraps_long_words(
    base_url: str,
    tenant: dict[str, str],
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _require_browser()
    workspace = tenant["workspace"]
    conversation_id = str(uuid.uuid4())
    turn_id = str(uuid.uuid4())
    started = await services.db.turns.start_turn(
        TurnStart(workspace, conversation_id, turn_id, "What is John Doe's position?"), limit=5
    )
    assert started is not None and started.started
    assert await services.db.turns.fail_turn(workspace, turn_id, INTERRUPTED_TURN)
    # Every LLM call fails (HTTP 500): the answer falls back to quoting the documents.
    async with OpenAIStub(default=Reply(status=500, error_message="stub down")) as stub:
        use_stub_llm(services, monkeypatch, stub.base_url)
        await asyncio.to_thread(_drive_failures, base_url, tenant["key"], conversation_id)


def _open_with_key(driver: Any, base: str, key: str) -> None:
    """Load the page and paste the key (leaving the field, as a user does)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.get(f"{base}/")
    driver.find_element(By.ID, "api-key").send_keys(key, Keys.TAB)


#: The documents the list must show besides the employee records: one whose ingest is
#: still running (it cannot be deleted yet) and one whose ingest failed, with its reason.
STILL_EMBEDDING = "Still embedding"
BROKEN_TITLE = "Broken scan"
BROKEN_ERROR = "file: the PDF has no text layer; upload a text PDF"


@dataclass
class ListedDocuments:
    """The ids the documents scenario made, for the assertions on the server's side."""

    uploaded_id: str = ""
    processing_id: str = ""
    broken_id: str = ""


def _drive_documents(base: str, key: str, made: ListedDocuments) -> None:
    """List, upload and delete documents on the page (blocking: runs in a worker thread)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def css(ident: str) -> str:
        return f"#documents > li.document-item[data-id='{ident}']"

    # The list is redrawn as it reloads, so it is read in one script call.
    read_js = (
        "return [...document.querySelectorAll('#documents > li.document-item')].map(i => ["
        "i.dataset.id, i.dataset.status, i.querySelector('.document-title').textContent,"
        "i.querySelector('.document-state').textContent,"
        "i.querySelector('button.delete-document').getAttribute('aria-label')])"
    )

    with _chromium() as driver:
        wait = WebDriverWait(driver, WAIT_S, poll_frequency=0.05)
        _open_with_key(driver, base, key)
        listed = wait.until(
            lambda d: len(d.execute_script(read_js)) == 3 and d.execute_script(read_js)
        )
        by_id = {row[0]: row[1:] for row in listed}
        # Each with its status; a failed one with its reason; each delete a real button
        # named for its document.
        assert by_id[made.processing_id][:3] == [
            "processing",
            STILL_EMBEDDING,
            "processing: 0 chunks embedded",
        ]
        assert by_id[made.broken_id][:3] == ["failed", BROKEN_TITLE, f"failed: {BROKEN_ERROR}"]
        (employees,) = [row for ident, row in by_id.items() if ident not in vars(made).values()]
        assert employees[0] == "ready" and employees[2].startswith("ready, "), employees
        assert by_id[made.broken_id][3] == f"Delete document {BROKEN_TITLE}"

        # An upload is listed, and ready once its ingest ends.
        with tempfile.TemporaryDirectory(prefix="convrag-upload-") as folder:
            path = Path(folder) / "office-plants.md"
            path.write_text(UPLOADED_MD)
            driver.find_element(By.ID, "upload-file").send_keys(str(path))
            wait.until(
                lambda d: [
                    row
                    for row in d.execute_script(read_js)
                    if row[1:3] == ["ready", "Office plants"]
                ]
            )
        made.uploaded_id = next(
            row[0] for row in driver.execute_script(read_js) if row[2] == "Office plants"
        )
        assert driver.find_element(By.ID, "upload-status").get_attribute("data-status") == "ready"

        # Deleting it (confirmed) removes it; the focus stays in the list.
        driver.find_element(By.CSS_SELECTOR, f"{css(made.uploaded_id)} .delete-document").click()
        wait.until(lambda d: d.switch_to.alert).accept()
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, css(made.uploaded_id)))
        status = driver.find_element(By.ID, "documents-status")
        wait.until(lambda d: status.text == 'Deleted "Office plants".')
        assert driver.execute_script(
            "return document.activeElement.matches('#documents .delete-document')"
        )

        # One still processing: the server's 409 is said, and it stays listed.
        driver.find_element(By.CSS_SELECTOR, f"{css(made.processing_id)} .delete-document").click()
        wait.until(lambda d: d.switch_to.alert).accept()
        wait.until(lambda d: status.get_attribute("data-kind") == "error")
        assert "(409)" in status.text and "still processing" in status.text, status.text
        assert driver.find_elements(By.CSS_SELECTOR, css(made.processing_id))

        # One deleted meanwhile (another tab): the 404 is said, and it leaves the list.
        httpx.delete(
            f"{base}/v1/documents/{made.broken_id}",
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
        ).raise_for_status()
        driver.find_element(By.CSS_SELECTOR, f"{css(made.broken_id)} .delete-document").click()
        wait.until(lambda d: d.switch_to.alert).accept()
        wait.until(lambda d: "(404)" in status.text)
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, css(made.broken_id)))
        assert not driver.find_element(By.ID, "status").is_displayed()


@pytest.mark.skipif(SKIP_BROWSER, reason="CONVRAG_SKIP_BROWSER=1")
async def test_the_documents_list_shows_each_status_and_deleting_an_upload_removes_it(
    base_url: str, tenant: dict[str, str], services: Services
) -> None:
    _require_browser()
    workspace = tenant["workspace"]
    made = ListedDocuments(processing_id=str(uuid.uuid4()), broken_id=str(uuid.uuid4()))
    await services.db.documents.upsert_document_status(
        workspace,
        made.processing_id,
        "upload:still-embedding.md",
        status="processing",
        title=STILL_EMBEDDING,
    )
    await services.db.documents.upsert_document_status(
        workspace,
        made.broken_id,
        "upload:broken-scan.pdf",
        status="failed",
        title=BROKEN_TITLE,
        error=BROKEN_ERROR,
    )
    await asyncio.to_thread(_drive_documents, base_url, tenant["key"], made)
    assert made.uploaded_id
    assert await services.db.documents.get_document(workspace, made.uploaded_id) is None
    kept = await services.db.documents.get_document(workspace, made.processing_id)
    assert kept is not None and kept["status"] == "processing"


#: An LLM's Markdown answer, with markup that must stay text.
MARKDOWN_ANSWER = (
    "Prasad Chaudhari earns **$120,000** a year [1].\n\n"
    "- Position: *Software Engineer*\n"
    "- Basic salary: `$80,000`\n\n"
    '<img src="x" onerror="window.__injected = 1"> <script>window.__injected = 2</script>'
)


def _drive_markdown(base: str, key: str) -> None:
    """A Markdown answer, streamed and then read back (blocking: runs in a worker thread)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    with _chromium() as driver:
        wait = WebDriverWait(driver, WAIT_S, poll_frequency=0.05)

        def check_answer() -> None:
            turn = driver.find_elements(By.CSS_SELECTOR, "#log > li.turn")[-1]
            assert turn.get_attribute("data-state") == "done", turn.text
            body = turn.find_element(By.CSS_SELECTOR, ".answer-text")
            first = body.find_element(By.CSS_SELECTOR, "p")
            assert first.find_element(By.CSS_SELECTOR, "strong").text == "$120,000"
            assert first.find_element(By.CSS_SELECTOR, "a.cite").text == "[1]"
            items = body.find_elements(By.CSS_SELECTOR, "ul > li")
            assert [i.text for i in items] == [
                "Position: Software Engineer",
                "Basic salary: $80,000",
            ]
            assert items[0].find_element(By.CSS_SELECTOR, "em").text == "Software Engineer"
            assert items[1].find_element(By.CSS_SELECTOR, "code").text == "$80,000"
            # No element made of the markup, and nothing of it ran: the tags never reach
            # the page (an answer's tags are removed before it is stored or returned, as
            # images to URLs no source has), and what is left is text.
            assert not body.find_elements(By.CSS_SELECTOR, "img, script, [onerror]")
            text = str(body.get_attribute("textContent"))
            assert "<img" not in text and "onerror" not in text, text
            assert "window.__injected = 2" in text, text
            assert "**" not in text and "`" not in text, text
            assert driver.execute_script("return window.__injected") is None

        _open_with_key(driver, base, key)
        driver.find_element(By.ID, "new-conversation").click()
        wait.until(lambda d: d.find_element(By.ID, "conversation").get_attribute("data-id"))
        driver.find_element(By.ID, "question").send_keys(
            "What is Prasad Chaudhari's salary?", Keys.ENTER
        )
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#log > li.turn[data-state=done]"))
        check_answer()
        # Read back from the store after a reload (the conversation reopens): the same.
        driver.refresh()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#log > li.turn[data-state=done]"))
        check_answer()


@pytest.mark.skipif(SKIP_BROWSER, reason="CONVRAG_SKIP_BROWSER=1")
async def test_a_markdown_answer_renders_bold_and_a_list_while_html_in_it_stays_text(
    base_url: str,
    tenant: dict[str, str],
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _require_browser()
    replies = [("CURRENT QUESTION", Reply(content=MARKDOWN_ANSWER))]
    await _drive_answered_by(replies, _drive_markdown, base_url, tenant, services, monkeypatch)


#: A slow answer to stop: many tokens, each a while after the last.
SLOW_QUESTION = "What is Prasad Chaudhari's basic salary?"
SLOW_ANSWER = "Prasad Chaudhari's basic salary is $80,000 [1]. " + (
    "It is paid every month, as the record shows. " * 15
)
NEXT_QUESTION = "What is John Doe's salary?"


def _drive_stop(base: str, key: str) -> str:
    """Stop a slow answer, then ask again (blocking: runs in a worker thread); returns
    the conversation's id."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    turns_css = "#log > li.turn"
    with _chromium() as driver:
        wait = WebDriverWait(driver, WAIT_S, poll_frequency=0.05)
        _open_with_key(driver, base, key)
        driver.find_element(By.ID, "new-conversation").click()
        conversation_id = str(
            wait.until(lambda d: d.find_element(By.ID, "conversation").get_attribute("data-id"))
        )
        item_css = f"#conversations > li.conversation-item[data-id='{conversation_id}']"
        title_css = f"{item_css} .conversation-title"
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, title_css))
        assert driver.find_element(By.CSS_SELECTOR, title_css).text == "Untitled conversation"
        stop = driver.find_element(By.ID, "stop")
        assert not stop.is_displayed()

        driver.find_element(By.ID, "question").send_keys(SLOW_QUESTION, Keys.ENTER)
        # The question is the sidebar's title while its answer is still being written.
        title_and_state = (
            "return [document.querySelector(arguments[0])?.textContent,"
            " document.querySelector('#log > li.turn').dataset.state]"
        )
        shown = wait.until(
            lambda d: (
                (seen := d.execute_script(title_and_state, title_css))[0] == SLOW_QUESTION and seen
            )
        )
        assert shown[1] == "streaming", shown
        wait.until(
            lambda d: (
                int(d.find_element(By.CSS_SELECTOR, ".answer-text").get_attribute("data-tokens"))
                >= 3
            )
        )
        assert stop.is_displayed() and stop.is_enabled()
        assert not driver.find_element(By.ID, "send").is_enabled()
        stop.click()

        turn = wait.until(
            lambda d: (
                d.find_element(By.CSS_SELECTOR, turns_css).get_attribute("data-state") == "stopped"
                and d.find_element(By.CSS_SELECTOR, turns_css)
            )
        )
        partial = str(
            turn.find_element(By.CSS_SELECTOR, ".answer-text").get_attribute("textContent")
        )
        assert partial and SLOW_ANSWER.startswith(partial), partial
        assert len(partial) < len(SLOW_ANSWER.strip()), partial
        assert turn.find_element(By.CSS_SELECTOR, ".stopped-note").text.startswith("Stopped.")
        assert not turn.find_elements(By.CSS_SELECTOR, ".answer-error:not([hidden])")
        # No error: neither a status line nor a dialog; the box takes the next question.
        assert not driver.find_element(By.ID, "status").is_displayed()
        assert not expected_conditions.alert_is_present()(driver)
        assert not stop.is_displayed()
        assert driver.find_element(By.ID, "send").is_enabled()

        driver.find_element(By.ID, "question").send_keys(NEXT_QUESTION, Keys.ENTER)
        # The turns' states and the status line, read together (a refused message's turn
        # is removed as the line appears).
        states_js = (
            "const s = document.getElementById('status');"
            "return [[...document.querySelectorAll(arguments[0])].map(t => t.dataset.state),"
            " s.hidden ? '' : s.textContent]"
        )
        states, status = wait.until(
            lambda d: (
                (
                    (seen := d.execute_script(states_js, turns_css))[0][1:] in (["done"], ["error"])
                    or seen[1]
                )
                and seen
            )
        )
        assert states == ["stopped", "done"] and not status, (states, status)
        answered = driver.find_elements(By.CSS_SELECTOR, turns_css)[-1]
        assert "$110,000" in answered.find_element(By.CSS_SELECTOR, ".answer-text").text

        # Read back after a reload: the stopped turn says so, with nothing to rate.
        driver.refresh()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, turns_css)) == 2)
        stored = driver.find_elements(By.CSS_SELECTOR, turns_css)[0]
        assert stored.get_attribute("data-state") == "stopped"
        assert (
            "stopped before it was finished"
            in stored.find_element(By.CSS_SELECTOR, ".stopped-note").text
        )
        assert not stored.find_elements(By.CSS_SELECTOR, ".feedback button")
    return conversation_id


@pytest.mark.skipif(SKIP_BROWSER, reason="CONVRAG_SKIP_BROWSER=1")
async def test_stop_ends_a_slow_answer_keeps_its_part_marked_stopped_and_the_next_message_works(
    base_url: str,
    tenant: dict[str, str],
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from convrag.assistant import STOPPED_TURN

    _require_browser()
    replies = [
        # Slow enough to be stopped mid-answer: a bound on the wait, not a measurement.
        (f"CURRENT QUESTION:\n{SLOW_QUESTION}", Reply(content=SLOW_ANSWER, token_delay_s=0.3)),
        ("CURRENT QUESTION", Reply(content="John Doe's salary is $110,000 [1].")),
    ]
    conversation_id = await _drive_answered_by(
        replies, _drive_stop, base_url, tenant, services, monkeypatch
    )
    turns = await services.db.transcripts.turn_details(tenant["workspace"], conversation_id)
    assert [(t.question, t.status, t.error) for t in turns] == [
        (SLOW_QUESTION, "failed", STOPPED_TURN),
        (NEXT_QUESTION, "done", None),
    ]


# ---- What an answer quoted, marked in its passage; each source shown once; links ----

SALARY_QUESTION = "What is Prasad Chaudhari's salary?"
#: The record the no-LLM answer to ``SALARY_QUESTION`` quotes word for word: its lines are
#: joined with "; " in the answer and one a line in the passage (whitespace as one space).
PRASAD_RECORD = (
    "Prasad Chaudhari Position: Software Engineer Total Salary: $120,000 "
    "Basic Salary: $80,000 Allowances: $40,000"
)
#: In the employee records' passage, and in no answer of these tests.
UNQUOTED = "Maria Lopez"
#: The text of each element ``arguments[0]`` selects, its whitespace as one space.
_TEXTS_JS = (
    "return [...document.querySelectorAll(arguments[0])]"
    ".map(e => e.textContent.split(/\\s+/).filter(Boolean).join(' '))"
)
#: The class of each element shown on the page that holds ``arguments[0]`` in its text.
_SHOWN_WITH_JS = (
    "return [...document.querySelectorAll('body *')].filter(e => e.checkVisibility()"
    " && [...e.childNodes].some(n => n.nodeType === Node.TEXT_NODE"
    " && n.textContent.includes(arguments[0]))).map(e => e.className)"
)
SELECTED_CHUNK = "#panel-body .panel-source.selected .panel-chunk"


def _ask(driver: Any, wait: Any, question: str) -> Any:
    """Send ``question`` (in a new conversation when none is open); the finished turn."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    turns_css = "#log > li.turn"
    before = len(driver.find_elements(By.CSS_SELECTOR, turns_css))
    driver.find_element(By.ID, "question").send_keys(question, Keys.ENTER)

    def finished(d: Any) -> Any:
        turns = d.find_elements(By.CSS_SELECTOR, turns_css)
        done = len(turns) == before + 1 and turns[-1].get_attribute("data-state") != "streaming"
        return done and turns[-1]

    turn = wait.until(finished)
    assert turn.get_attribute("data-state") == "done", turn.text
    return turn


def _open_cite(driver: Any, wait: Any, turn: Any) -> list[str]:
    """Hover the turn's first [n], then click it: the text marked in its preview."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    cite = turn.find_element(By.CSS_SELECTOR, ".answer-text a.cite")
    ActionChains(driver).move_to_element(cite).perform()
    wait.until(lambda d: d.find_element(By.ID, "cite-preview").is_displayed())
    previewed: list[str] = driver.execute_script(_TEXTS_JS, "#cite-preview mark")
    cite.click()
    wait.until(lambda d: d.find_element(By.ID, "sources-panel").is_displayed())
    return previewed


def _drive_quoted(base: str, key: str) -> None:
    """A no-LLM answer's quote, marked in its passage (blocking: runs in a worker thread)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    with _chromium() as driver:
        wait = WebDriverWait(driver, WAIT_S, poll_frequency=0.05)
        _open_with_key(driver, base, key)
        turn = _ask(driver, wait, SALARY_QUESTION)
        # The extractive answer quotes the record, its lines joined with "; ".
        answer = turn.find_element(By.CSS_SELECTOR, ".answer-text").text
        assert answer.startswith("Prasad Chaudhari; Position: Software Engineer;"), answer

        def check(turn: Any) -> None:
            assert _open_cite(driver, wait, turn) == [PRASAD_RECORD]
            # In the panel: the record, and only it, inside a <mark>; the rest of the
            # passage is shown unmarked around it.
            assert driver.execute_script(_TEXTS_JS, f"{SELECTED_CHUNK} mark") == [PRASAD_RECORD]
            chunk = driver.find_element(By.CSS_SELECTOR, SELECTED_CHUNK)
            assert chunk.get_attribute("data-quoted") == "true"
            assert UNQUOTED in chunk.text and "John Doe" in chunk.text
            # The document's text marks it too.
            driver.find_element(By.CSS_SELECTOR, "#panel-body .selected .load-text").click()
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#document-text mark"))
            assert driver.execute_script(_TEXTS_JS, "#document-text mark") == [PRASAD_RECORD]
            driver.switch_to.active_element.send_keys(Keys.ESCAPE)
            wait.until(lambda d: not d.find_element(By.ID, "sources-panel").is_displayed())

        check(turn)
        # Read back from the store after a reload (the conversation reopens): the same.
        driver.refresh()
        stored = wait.until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#log > li.turn[data-state=done]")
        )[0]
        check(stored)


@pytest.mark.skipif(SKIP_BROWSER, reason="CONVRAG_SKIP_BROWSER=1")
async def test_the_sentence_an_answer_quoted_is_inside_a_mark_in_its_passage(
    base_url: str, tenant: dict[str, str]
) -> None:
    _require_browser()
    await asyncio.to_thread(_drive_quoted, base_url, tenant["key"])


#: An LLM's paraphrase of the record: no sentence of the passage says it.
PARAPHRASE = "Prasad Chaudhari is paid $120,000 a year [1]."
JOHN_QUESTION = "What is John Doe's salary?"
#: An LLM's answer: a sentence of its own, then two lines of the record quoted in Markdown.
QUOTED_IN_MARKDOWN = (
    "John Doe's record lists his pay. **Total Salary: $110,000**; Basic Salary: `$75,000` [1]"
)


def _drive_paraphrase(base: str, key: str) -> None:
    """A quote in Markdown is marked; a paraphrase marks nothing (blocking)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    with _chromium() as driver:
        wait = WebDriverWait(driver, WAIT_S, poll_frequency=0.05)
        _open_with_key(driver, base, key)
        # The quoted lines are found though the answer renders them as bold and code.
        turn = _ask(driver, wait, JOHN_QUESTION)
        body = turn.find_element(By.CSS_SELECTOR, ".answer-text")
        assert body.find_element(By.CSS_SELECTOR, "strong").text == "Total Salary: $110,000"
        assert body.find_element(By.CSS_SELECTOR, "code").text == "$75,000"
        quoted = "Total Salary: $110,000 Basic Salary: $75,000"
        assert _open_cite(driver, wait, turn) == [quoted]
        assert driver.execute_script(_TEXTS_JS, f"{SELECTED_CHUNK} mark") == [quoted]
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait.until(lambda d: not d.find_element(By.ID, "sources-panel").is_displayed())

        turn = _ask(driver, wait, SALARY_QUESTION)
        assert turn.find_element(By.CSS_SELECTOR, ".answer-text").text == PARAPHRASE
        assert _open_cite(driver, wait, turn) == []
        # The passage is shown whole, and nothing in it is marked.
        chunk = driver.find_element(By.CSS_SELECTOR, SELECTED_CHUNK)
        assert "Prasad Chaudhari" in chunk.text and "$120,000" in chunk.text
        assert not driver.find_elements(By.CSS_SELECTOR, "#panel-body mark")
        assert chunk.get_attribute("data-quoted") == "false"


@pytest.mark.skipif(SKIP_BROWSER, reason="CONVRAG_SKIP_BROWSER=1")
async def test_a_quote_in_markdown_is_marked_and_a_paraphrased_sentence_marks_nothing(
    base_url: str,
    tenant: dict[str, str],
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _require_browser()
    replies = [
        (f"CURRENT QUESTION:\n{SALARY_QUESTION}", Reply(content=PARAPHRASE)),
        (f"CURRENT QUESTION:\n{JOHN_QUESTION}", Reply(content=QUOTED_IN_MARKDOWN)),
    ]
    await _drive_answered_by(replies, _drive_paraphrase, base_url, tenant, services, monkeypatch)


def _drive_listed_once(base: str, key: str) -> None:
    """A cited source under the answer opens its passage in the panel (blocking)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    with _chromium() as driver:
        wait = WebDriverWait(driver, WAIT_S, poll_frequency=0.05)
        _open_with_key(driver, base, key)
        turn = _ask(driver, wait, SALARY_QUESTION)
        # Under the answer: the source's number and title, and no passage.
        (item,) = turn.find_elements(By.CSS_SELECTOR, ".sources > li.source")
        assert item.find_element(By.CSS_SELECTOR, ".badge").text == "[1]"
        assert item.find_element(By.CSS_SELECTOR, ".source-title").text == "employee_data"
        assert UNQUOTED not in item.text
        assert not driver.execute_script(_SHOWN_WITH_JS, UNQUOTED)
        # It opens the source in the panel, which alone shows the passage.
        opener = item.find_element(By.CSS_SELECTOR, "button.source-open")
        opener.click()
        wait.until(lambda d: d.find_element(By.ID, "sources-panel").is_displayed())
        selected = driver.find_element(By.CSS_SELECTOR, "#panel-body .panel-source.selected")
        assert selected.get_attribute("data-n") == "1"
        shown = driver.execute_script(_SHOWN_WITH_JS, UNQUOTED)
        assert shown == ["panel-chunk"], shown
        # Escape closes the panel and gives the focus back to the source that opened it.
        wait.until(lambda d: d.switch_to.active_element == selected)
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait.until(lambda d: not d.find_element(By.ID, "sources-panel").is_displayed())
        assert driver.switch_to.active_element == opener


@pytest.mark.skipif(SKIP_BROWSER, reason="CONVRAG_SKIP_BROWSER=1")
async def test_a_source_is_listed_once_under_the_answer_and_its_passage_shown_only_in_the_panel(
    base_url: str, tenant: dict[str, str]
) -> None:
    _require_browser()
    await asyncio.to_thread(_drive_listed_once, base_url, tenant["key"])


LINKED_URL = "https://example.org/pay?year=2024"
#: An LLM's answer with an http(s) link, and links and an image that must stay text.
LINKS_ANSWER = (
    f"Prasad Chaudhari's salary is $120,000 [1]. The [pay policy]({LINKED_URL}) explains it; "
    "[click me](javascript:window.__clicked=1), [a page](/relative/path), "
    "[mail](mailto:hr@example.org) and ![chart](https://example.org/chart.png) stay text."
)
#: Links to URLs no source has: their text is kept, the link and the image are not (an
#: answer's links are checked before it is stored or returned).
UNLINKED = (
    "click me",
    "a page",
    "mail",
)


def _drive_links(base: str, key: str) -> None:
    """An answer's links, streamed and then read back (blocking: runs in a worker thread)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with _chromium() as driver:
        wait = WebDriverWait(driver, WAIT_S, poll_frequency=0.05)

        def check(turn: Any) -> None:
            body = turn.find_element(By.CSS_SELECTOR, ".answer-text")
            (link,) = body.find_elements(By.CSS_SELECTOR, "a:not(.cite)")
            assert link.text == "pay policy"
            assert link.get_attribute("href") == LINKED_URL
            assert link.get_attribute("rel") == "noopener noreferrer"
            assert link.get_attribute("target") == "_blank"
            assert body.find_element(By.CSS_SELECTOR, "a.cite").text == "[1]"
            text = str(body.get_attribute("textContent"))
            for written in UNLINKED:
                assert written in text, (written, text)
            assert "javascript:" not in text and "chart.png" not in text, text
            # Nowhere on the page a javascript: link or an image.
            assert not driver.find_elements(By.CSS_SELECTOR, "a[href^='javascript:' i], img")

        _open_with_key(driver, base, key)
        check(_ask(driver, wait, SALARY_QUESTION))
        driver.refresh()
        check(
            wait.until(
                lambda d: d.find_elements(By.CSS_SELECTOR, "#log > li.turn[data-state=done]")
            )[0]
        )


@pytest.mark.skipif(SKIP_BROWSER, reason="CONVRAG_SKIP_BROWSER=1")
async def test_an_answer_links_http_urls_in_a_new_tab_while_a_javascript_link_stays_text(
    base_url: str,
    tenant: dict[str, str],
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from convrag.answering import guard
    from convrag.documents.base import SourceDocument
    from convrag.ingest import ingest_documents

    _require_browser()
    # The linked URL is a source's own page (a web result's address): a link to it is kept.
    # A URL written in a document's text is not its page and would go.
    own = guard.source_urls
    monkeypatch.setattr(guard, "source_urls", lambda sources: own(sources) | {LINKED_URL.lower()})
    policy = "Pay policy. Salaries, Prasad Chaudhari's among them, are set by the board."
    await ingest_documents(
        services, tenant["workspace"], [SourceDocument("pay-policy", "Pay policy", policy)]
    )
    replies = [("CURRENT QUESTION", Reply(content=LINKS_ANSWER))]
    await _drive_answered_by(replies, _drive_links, base_url, tenant, services, monkeypatch)


#: The reading corpus: real documents with the sentences a reader must keep whole.
READING_CORPUS = Path(__file__).resolve().parent.parent / "documents" / "corpus"
#: A quoted passage that ends a sentence, a clause that introduces more, or a line.
_WHOLE_END = re.compile(r"[.!?:;…)\]\"'”’]$")


def _words(text: str) -> str:
    return " ".join(text.split())


def _drive_reading(base: str, key: str, asked: list[tuple[str, dict[str, list[str]]]]) -> int:
    """Ask each question; for each answer that cites, the marked quote and its document's
    text (blocking). Returns how many answers cited a source."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    cited = 0
    with _chromium() as driver:
        wait = WebDriverWait(driver, WAIT_S, poll_frequency=0.05)
        _open_with_key(driver, base, key)
        for question, sentences in asked:
            turn = _ask(driver, wait, question)
            if not turn.find_elements(By.CSS_SELECTOR, ".answer-text a.cite"):
                continue
            cited += 1
            _open_cite(driver, wait, turn)
            title = driver.find_element(By.CSS_SELECTOR, "#panel-body .selected .panel-title")
            marks = driver.execute_script(_TEXTS_JS, f"{SELECTED_CHUNK} mark")
            driver.find_element(By.CSS_SELECTOR, "#panel-body .selected .load-text").click()
            wait.until(
                lambda d: d.find_element(By.ID, "document-text").get_attribute("textContent")
            )
            text = _words(
                str(driver.find_element(By.ID, "document-text").get_attribute("textContent"))
            )
            for mark in marks:  # a quote is whole sentences (or whole lines) of its document
                assert mark in text and _WHOLE_END.search(mark), (question, mark)
            broken = [s for s in sentences.get(title.text, []) if _words(s) not in text]
            assert not broken, (title.text, broken[:3])
            driver.switch_to.active_element.send_keys(Keys.ESCAPE)
            wait.until(lambda d: not d.find_element(By.ID, "sources-panel").is_displayed())
    return cited


@pytest.mark.skipif(SKIP_BROWSER, reason="CONVRAG_SKIP_BROWSER=1")
async def test_quotes_and_document_texts_of_the_reading_corpus_show_whole_sentences(
    base_url: str, tenant: dict[str, str], services: Services
) -> None:
    import json

    from convrag.documents.load import load_path
    from convrag.ingest import ingest_documents

    _require_browser()
    asked: list[tuple[str, dict[str, list[str]]]] = []
    sentences: dict[str, list[str]] = {}
    docs = []
    for expect in sorted(READING_CORPUS.glob("*.expect.json")):
        spec = json.loads(expect.read_text())
        stem = expect.name.removesuffix(".expect.json")
        (path,) = [p for p in READING_CORPUS.glob(f"{stem}.*") if p != expect]
        docs += load_path(path, max_bytes=10**8)
        sentences[str(docs[-1].title)] = [s["text"] for s in spec["sentences"]]
        question = next(q["q"] for q in spec["questions"] if q["answerable"])
        asked.append((question, sentences))
    await ingest_documents(services, tenant["workspace"], docs)  # one run, one flush
    cited = await asyncio.to_thread(_drive_reading, base_url, tenant["key"], asked)
    assert cited >= len(asked) // 2, cited
