#!/usr/bin/python3
"""Drives `gpsloc serve`'s page in a real browser, headless: Debian's chromium through
chromium-driver and python3-selenium (run it with /usr/bin/python3), or Debian's Firefox ESR
through its own remote protocol, Marionette, with Mozilla's marionette_driver (bookworm has no
geckodriver; scripts/setup.sh puts marionette_driver in .build/marionette: run it with
.build/marionette/bin/python and --browser firefox).

usage: serve-browser.py URL [--browser chromium|firefox] [--screenshot FILE] [--expect-replay]
                            [--expect-approximate] [--no-sky] [--no-control] [--timeout S]

Prints one line per check as it passes (POSITION, SOURCE, SKY, APPROXIMATE, STOPPED, STARTED),
then OK; on a failed check, FAIL and what the page showed, with exit status 1. The tests in
Tests/GPSLocationTests/ServeTests.swift run it; the README's screenshot is its --screenshot.
"""
import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

parser = argparse.ArgumentParser()
parser.add_argument("url")
parser.add_argument("--browser", choices=("chromium", "firefox"), default="chromium")
parser.add_argument("--screenshot")
parser.add_argument("--expect-replay", action="store_true")
parser.add_argument("--expect-approximate", action="store_true")
parser.add_argument("--no-sky", action="store_true", help="do not wait for satellites")
parser.add_argument("--points", type=int, default=1, help="locations the page must have received before the picture")
parser.add_argument("--no-control", action="store_true", help="do not press Stop and Start")
parser.add_argument("--timeout", type=float, default=90)
args = parser.parse_args()


class Page:
    """What the checks ask of a browser: its driver (Selenium's or Marionette's, which find
    elements the same way) and its `By`."""

    def element(self, element_id):
        return self.driver.find_element(self.by.ID, element_id)

    def count(self, css):
        return len(self.driver.find_elements(self.by.CSS_SELECTOR, css))


class Chromium(Page):
    """The page in chromium, through chromedriver (Selenium)."""

    def __init__(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        self.by = By
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1000", "--no-first-run", "--disable-extensions"):
            options.add_argument(flag)
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)

    def open(self, url):
        self.driver.get(url)

    def screenshot(self, path):
        self.driver.save_screenshot(path)

    def quit(self):
        self.driver.quit()


class Firefox(Page):
    """The page in Firefox ESR, headless, through Marionette on a port of its own (a new
    profile: `marionette.port` 0, the port read back from the profile's MarionetteActivePort)."""

    def __init__(self):
        from marionette_driver.by import By
        from marionette_driver.marionette import Marionette
        self.by = By
        self.profile = tempfile.mkdtemp(prefix="gpsloc-serve-firefox-")
        with open(os.path.join(self.profile, "user.js"), "w") as f:
            for name, value in (("marionette.port", "0"), ("browser.shell.checkDefaultBrowser", "false"),
                                ("datareporting.policy.dataSubmissionEnabled", "false"),
                                ("toolkit.telemetry.reportingpolicy.firstRun", "false"),
                                ("app.update.disabledForTesting", "true"),
                                ("browser.startup.homepage_override.mstone", '"ignore"')):
                f.write(f'user_pref("{name}", {value});\n')
        self.process = subprocess.Popen(
            ["/usr/bin/firefox-esr", "--headless", "--marionette", "--no-remote", "--profile", self.profile,
             "--window-size=1280,1000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        active = os.path.join(self.profile, "MarionetteActivePort")
        deadline = time.monotonic() + args.timeout
        while not (os.path.exists(active) and open(active).read().strip()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                print("FAIL Firefox ESR did not start its remote protocol (exit %s)" % self.process.poll(), flush=True)
                sys.exit(1)
            time.sleep(0.1)
        self.driver = Marionette(host="127.0.0.1", port=int(open(active).read().strip()))
        self.driver.start_session()

    def open(self, url):
        self.driver.navigate(url)

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.driver.screenshot()))

    def quit(self):
        try:
            self.driver.delete_session()
        except Exception:
            pass
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


browser = Firefox() if args.browser == "firefox" else Chromium()


def text(element_id):
    return browser.element(element_id).text


def fail(what):
    print("FAIL", what, "| status:", text("status"), "| position:", text("position"),
          "| received:", text("received"), flush=True)
    browser.quit()
    sys.exit(1)


def check(condition, what):
    """Polls `condition` every 0.1 s until it holds or the timeout passes (an exception while
    the page changes counts as not yet)."""
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception:
            pass
        time.sleep(0.1)
    fail(what)


def status():
    base = args.url.split("?")[0].rstrip("/")
    with urllib.request.urlopen(base + "/api/status", timeout=10) as response:
        return json.load(response)


try:
    browser.open(args.url)
    position = re.compile(r"^-?\d{1,2}\.\d+, -?\d{1,3}\.\d+$")
    check(lambda: position.match(text("position")), "no position shown")
    print("POSITION", text("position"), flush=True)
    source = text("source")
    if args.expect_replay and "Replay" not in source:
        fail("the page does not say it is a replay: " + source)
    print("SOURCE", source, flush=True)
    if not args.no_sky:
        check(lambda: browser.count("#sky [data-prn]") >= 4, "the sky plot stayed empty")
        print("SKY", browser.count("#sky [data-prn]"), "used", browser.count("#sky .sat.used[data-prn]"), flush=True)
    if args.expect_approximate:
        check(lambda: browser.element("approximate").is_displayed(), "a reduced location is not marked approximate")
        print("APPROXIMATE", text("approximate"), flush=True)
    check(lambda: browser.count("#locations tbody tr") >= 1, "the table stayed empty")
    check(lambda: int(text("received")) >= args.points, "fewer than %d locations arrived" % args.points)
    if args.screenshot:
        time.sleep(0.5)  # let the map finish its pan before the picture (not a check)
        browser.screenshot(args.screenshot)
    if args.no_control:
        print("OK", flush=True)
        sys.exit(0)
    check(lambda: browser.element("tracking").get_attribute("data-tracking") == "true", "tracking is not shown as on")
    browser.element("tracking").click()
    check(lambda: browser.element("tracking").get_attribute("data-tracking") == "false",
          "the control did not stop tracking")
    stopped = status()
    if stopped["tracking"]:
        fail("the server still tracks after Stop")
    print("STOPPED", stopped["newestID"], flush=True)
    shown = text("position")
    browser.element("tracking").click()
    check(lambda: browser.element("tracking").get_attribute("data-tracking") == "true",
          "the control did not start tracking again")
    check(lambda: status()["newestID"] > stopped["newestID"], "the server made no location after Start")
    check(lambda: text("position") != shown, "the page showed no new location after Start")
    started = status()
    print("STARTED", started["newestID"], flush=True)
    print("OK", flush=True)
finally:
    browser.quit()
