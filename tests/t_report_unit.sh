#!/bin/bash
# t_report_unit: heapdiff's report layer without a database
# (tests/report_check.c): text cleaning, folding, filters, then every
# output format written from rows built in memory with a hostile function
# name (markup, quotes, ';', invalid UTF-8, control characters), read back
# here with real parsers: the JSON and the SVG parse and hold the cleaned
# name exactly; the folded lines are "frames value" with no ';' inside a
# name; the pprof profile is gzip with the name in its string table.
. "$(dirname "$0")/lib.sh"
"$HA_BUILDDIR/tests/report_check" "$W" || fail "report_check found mismatches"
command -v python3 >/dev/null || skip "python3 is needed to parse the reports"
python3 - "$W" <<'PY' || fail "a report does not parse or lost the name"
import gzip, json, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
name = "evil<script>alert(\"x\")</script>&'a;b' ???tab?here"
j = json.load(open(d + "/report.json", encoding="utf-8"))
assert j["mode"] == "diff", j["mode"]
assert j["rows"][0]["frames"][0]["function"] == name, j["rows"][0]["frames"][0]
assert j["rows"][0]["frames"][0]["file"] == "<file>&\"q\".c"
assert j["rows"][1]["kind"] == "mmap" and j["rows"][1]["live_bytes"] == -500000
assert j["to"]["comm"] == "srv</title>"
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(d + "/report.svg").getroot()
titles = [t.text or "" for t in root.iter(ns + "title")]
assert any(t.startswith(name + " (") for t in titles), titles
for line in open(d + "/report.folded", encoding="utf-8"):
    frames, value = line.rstrip("\n").rsplit(" ", 1)
    assert int(value) > 0, line
    assert frames.split(";")[-1] == name.replace(";", ","), frames
txt = open(d + "/report.txt", encoding="utf-8").read()
assert name in txt and "cache_fill" in txt, txt
pb = gzip.decompress(open(d + "/report.pb.gz", "rb").read())
assert name.encode() in pb, "the name is not in the pprof string table"
print("ok: json, svg, folded, text and pprof hold the cleaned name")
PY
echo ok
