#!/usr/bin/python3
"""Drives `gpsloc serve`'s page in a real browser: Debian's chromium, headless, through
chromium-driver and python3-selenium (run it with /usr/bin/python3).

usage: serve-browser.py URL [--screenshot FILE] [--expect-replay] [--expect-approximate] [--timeout S]

Prints one line per check as it passes (POSITION, SOURCE, SKY, APPROXIMATE, STOPPED, STARTED),
then OK; on a failed check, FAIL and what the page showed, with exit status 1. The tests in
Tests/GPSLocationTests/ServeTests.swift run it; the README's screenshot is its --screenshot.
"""
import argparse
import json
import re
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

parser = argparse.ArgumentParser()
parser.add_argument("url")
parser.add_argument("--screenshot")
parser.add_argument("--expect-replay", action="store_true")
parser.add_argument("--expect-approximate", action="store_true")
parser.add_argument("--no-sky", action="store_true", help="do not wait for satellites")
parser.add_argument("--points", type=int, default=1, help="locations the page must have received before the picture")
parser.add_argument("--no-control", action="store_true", help="do not press Stop and Start")
parser.add_argument("--timeout", type=float, default=90)
args = parser.parse_args()

options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--window-size=1280,1000", "--no-first-run", "--disable-extensions"):
    options.add_argument(flag)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
wait = WebDriverWait(driver, args.timeout, poll_frequency=0.1)


def text(element_id):
    return driver.find_element(By.ID, element_id).text


def fail(what):
    print("FAIL", what, "| status:", text("status"), "| position:", text("position"),
          "| received:", text("received"), flush=True)
    driver.quit()
    sys.exit(1)


def check(condition, what):
    try:
        wait.until(lambda _: condition())
    except Exception:
        fail(what)


def status():
    base = args.url.split("?")[0].rstrip("/")
    with urllib.request.urlopen(base + "/api/status", timeout=10) as response:
        return json.load(response)


try:
    driver.get(args.url)
    position = re.compile(r"^-?\d{1,2}\.\d+, -?\d{1,3}\.\d+$")
    check(lambda: position.match(text("position")), "no position shown")
    print("POSITION", text("position"), flush=True)
    source = text("source")
    if args.expect_replay and "Replay" not in source:
        fail("the page does not say it is a replay: " + source)
    print("SOURCE", source, flush=True)
    if not args.no_sky:
        check(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#sky [data-prn]")) >= 4, "the sky plot stayed empty")
        used = len(driver.find_elements(By.CSS_SELECTOR, "#sky .sat.used[data-prn]"))
        print("SKY", len(driver.find_elements(By.CSS_SELECTOR, "#sky [data-prn]")), "used", used, flush=True)
    if args.expect_approximate:
        check(lambda: driver.find_element(By.ID, "approximate").is_displayed(), "a reduced location is not marked approximate")
        print("APPROXIMATE", text("approximate"), flush=True)
    check(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#locations tbody tr")) >= 1, "the table stayed empty")
    check(lambda: int(text("received")) >= args.points, "fewer than %d locations arrived" % args.points)
    if args.screenshot:
        time.sleep(0.5)  # let the map finish its pan before the picture (not a check)
        driver.save_screenshot(args.screenshot)
    if args.no_control:
        print("OK", flush=True)
        sys.exit(0)
    button = driver.find_element(By.ID, "tracking")
    check(lambda: button.get_attribute("data-tracking") == "true", "tracking is not shown as on")
    button.click()
    check(lambda: button.get_attribute("data-tracking") == "false", "the control did not stop tracking")
    stopped = status()
    if stopped["tracking"]:
        fail("the server still tracks after Stop")
    print("STOPPED", stopped["newestID"], flush=True)
    shown = text("position")
    button.click()
    check(lambda: button.get_attribute("data-tracking") == "true", "the control did not start tracking again")
    check(lambda: status()["newestID"] > stopped["newestID"], "the server made no location after Start")
    check(lambda: text("position") != shown, "the page showed no new location after Start")
    started = status()
    print("STARTED", started["newestID"], flush=True)
    print("OK", flush=True)
finally:
    driver.quit()
