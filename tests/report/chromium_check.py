#!/usr/bin/env python3
"""Render a report.html in headless Chromium (Debian's `chromium`) and check it.

    chromium_check.py REPORT.html --max-height PX [--shot FILE.png] [--self-test]

Three looks at the page, each a fresh headless Chromium:
  1. the report as published, with Chromium's console sent to stderr
     (--enable-logging=stderr): any console message is a failure -- a
     clean report logs nothing, and a script, a remote load or anything
     else the report's Content-Security-Policy blocks logs a violation;
  2. a probe copy: the same page with one inline script allowed by a nonce
     (the CSP is otherwise unchanged) that records window errors, CSP
     violations and console.error/warn, and after load writes the page's
     scrollHeight and scrollWidth into the DOM, read back with --dump-dom;
     the page must be at most --max-height px tall at 1280 px wide, must
     not scroll sideways, no run id (R0001) may wrap over two lines, and at
     most --max-wide-tables tables may need to scroll inside their box;
  3. a full-page screenshot (the artefact), kept at --shot.
--self-test proves the checks can fail: a copy with an injected script and
a remote image must fail check 1, a copy that logs console.error must fail
check 2, a copy with a run id squeezed onto two lines must fail the wrap
check, and a copy padded past the bound must fail the height check.
Exit 0 ok, 1 failed, 77 no chromium.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

WIDTH = 1280
PROBE = """<script nonce="cs-probe">(function(){var errs=[];
addEventListener("error",function(e){errs.push("error: "+(e.message||(e.target&&e.target.outerHTML)||"?"))},true);
addEventListener("securitypolicyviolation",function(e){errs.push("csp: "+e.violatedDirective+" "+e.blockedURI)});
["error","warn"].forEach(function(k){var o=console[k];console[k]=function(){errs.push(k+": "+Array.prototype.join.call(arguments," "));o.apply(console,arguments)}});
addEventListener("load",function(){var d=document.documentElement,b=document.body,p=document.createElement("pre");
var wrapped=[],wide=0;document.querySelectorAll("td").forEach(function(td){var t=td.textContent;
if(/^R[0-9]+$/.test(t)){var g=document.createRange();g.selectNodeContents(td);if(g.getClientRects().length>1)wrapped.push(t)}});
document.querySelectorAll("div.tw").forEach(function(w){if(w.scrollWidth>w.clientWidth+1)wide++});
var r={height:Math.max(d.scrollHeight,b.scrollHeight),width:Math.max(d.scrollWidth,b.scrollWidth),errors:errs,wrapped_ids:wrapped,wide_tables:wide};
p.id="cs-probe";p.textContent=JSON.stringify(r);b.appendChild(p)});})();</script>
"""


def chromium():
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    return None


def run(args, timeout=120):
    base = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--disable-extensions", "--mute-audio", "--disable-dev-shm-usage",
            "--user-data-dir=" + tempfile.mkdtemp(prefix="cs-chromium-")]
    p = subprocess.run(base + args, capture_output=True, text=True, timeout=timeout)
    shutil.rmtree(base[-1].split("=", 1)[1], ignore_errors=True)
    return p


def console_messages(html_path):
    """Check 1: the console lines Chromium logged for the page."""
    url = "file://" + os.path.abspath(html_path)
    p = run(["--enable-logging=stderr", "--v=0", "--window-size=%d,900" % WIDTH,
             "--virtual-time-budget=3000", "--dump-dom", url])
    if p.returncode != 0 or "</html>" not in p.stdout:
        return ["chromium failed on the page: exit %d: %s" % (p.returncode, p.stderr[-300:])]
    return [ln for ln in p.stderr.splitlines() if ":CONSOLE" in ln]


def probe(html_path, tmp):
    """Check 2: height, width and errors seen from inside the page."""
    html = open(html_path, encoding="utf-8").read()
    csp = "content=\"default-src 'none';"
    if csp not in html or "<head>\n" not in html:
        return None, ["the page has no Content-Security-Policy meta or no <head>"]
    html = html.replace(csp, csp + " script-src 'nonce-cs-probe';", 1)
    html = html.replace("<head>\n", "<head>\n" + PROBE, 1)
    pp = os.path.join(tmp, "probe-" + os.path.basename(html_path))
    open(pp, "w", encoding="utf-8").write(html)
    p = run(["--window-size=%d,900" % WIDTH, "--virtual-time-budget=3000", "--dump-dom",
             "file://" + pp])
    m = re.search(r'<pre id="cs-probe">([^<]*)</pre>', p.stdout)
    if not m:
        return None, ["the probe did not report (chromium exit %d)" % p.returncode]
    r = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    return r, r["errors"]


def check(html_path, max_height, shot, tmp, quiet=False, max_wide=0):
    """All checks on one page; returns the list of failures."""
    bad = []
    cons = console_messages(html_path)
    bad += ["console: " + c for c in cons]
    r, errs = probe(html_path, tmp)
    bad += ["in page: " + e for e in errs]
    if r:
        if r["height"] > max_height:
            bad.append("the page is %d px tall at %d px wide (bound %d)" % (r["height"], WIDTH, max_height))
        if r["width"] > WIDTH:
            bad.append("the page scrolls sideways: %d px wide in a %d px window" % (r["width"], WIDTH))
        if r["wrapped_ids"]:
            bad.append("run ids wrapped over two lines: %s" % r["wrapped_ids"][:10])
        if r["wide_tables"] > max_wide:
            bad.append("%d tables wider than the page (bound %d)" % (r["wide_tables"], max_wide))
        if not quiet:
            print("page: %d px tall, %d px wide at %d px; %d console messages; %d tables scroll sideways" %
                  (r["height"], r["width"], WIDTH, len(cons), r["wide_tables"]))
    if shot and r:
        h = min(max(r["height"], 600), 16000)
        p = run(["--window-size=%d,%d" % (WIDTH, h), "--screenshot=" + os.path.abspath(shot),
                 "file://" + os.path.abspath(html_path)])
        if p.returncode != 0 or not os.path.exists(shot):
            bad.append("no screenshot: chromium exit %d" % p.returncode)
        elif not quiet:
            print("screenshot: " + os.path.abspath(shot))
    return bad


def self_test(html_path, max_height, tmp):
    """The checks must catch a script, a remote load, a console error and a tall page."""
    html = open(html_path, encoding="utf-8").read()
    bad = []
    cases = [
        ("injected script and remote image",
         html.replace("</body>", '<script>alert(1)</script><img src="http://example.invalid/x.png"></body>'),
         lambda f: any(x.startswith("console:") for x in f)),
        ("console.error from the page",
         html.replace("<head>\n", '<head>\n<script nonce="cs-probe">console.error("deliberate")</script>\n', 1),
         lambda f: any("deliberate" in x for x in f)),
        ("a run id squeezed onto two lines",
         html.replace("</body>", '<table style="width:1px"><tr><td style="white-space:normal;overflow-wrap:anywhere">R0001</td></tr></table></body>'),
         lambda f: any("wrapped" in x for x in f)),
        ("a page past the height bound",
         html.replace("</body>", '<div style="height:%dpx"></div></body>' % (max_height + 1000)),
         lambda f: any("px tall" in x for x in f)),
    ]
    for name, text, caught in cases:
        p = os.path.join(tmp, "bad.html")
        open(p, "w", encoding="utf-8").write(text)
        f = check(p, max_height, None, tmp, quiet=True)
        if not caught(f):
            bad.append("self-test: %s was not caught (%s)" % (name, f))
        else:
            print("self-test: caught %s" % name)
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("html")
    ap.add_argument("--max-height", type=int, required=True)
    ap.add_argument("--shot")
    ap.add_argument("--max-wide-tables", type=int, default=0,
                    help="tables allowed to scroll sideways in their own box (default 0)")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if not chromium():
        print("no chromium (apt-get install chromium)")
        return 77
    tmp = tempfile.mkdtemp(prefix="cs-chromium-check-")
    try:
        bad = check(a.html, a.max_height, a.shot, tmp, max_wide=a.max_wide_tables)
        if a.self_test:
            bad += self_test(a.html, a.max_height, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for b in bad:
        print("FAIL: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
