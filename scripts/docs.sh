#!/usr/bin/env bash
# Builds the API documentation (DocC) of the library products into .build/docs/site, and checks
# it: no DocC warning, and no public declaration without a doc comment (each one missing is
# listed).
#   scripts/docs.sh            build and check
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/docs
symbols="$out/symbol-graphs"
rm -rf "$out/archives" "$out/site" "$symbols"
mkdir -p "$symbols" "$out/archives"
# Symbol graphs of every module, public declarations only, read from the debug build's modules
# (no build of its own: scripts/test.sh has built them; run alone, this builds first), without
# the members a type only inherits from a protocol's default implementations (`map` of an
# AsyncSequence, `!=` of an Equatable): the standard library documents those; every
# declaration written here is in the graph and counted.
modules=.build/debug/Modules
# DocC copies its HTML template (the toolchain's share/docc/render) into a temporary folder with
# the owner of each file; as a user who is not the template's owner (root's /opt/swift) that copy
# stops part way and every page's index.html is missing ("The file doesn't exist"). A copy of the
# user's own, named by DOCC_HTML_DIR, is copied whole.
template="$(dirname "$(command -v docc)")/../share/docc/render"
if [ -z "${DOCC_HTML_DIR:-}" ] && [ -d "$template" ] && [ "$(stat -c %u "$template")" != "$(id -u)" ]; then
  rm -rf "$out/render"
  cp -R "$template" "$out/render"
  export DOCC_HTML_DIR="$out/render"
fi
if [ "${GPSLOCATION_DEBUG_BUILT:-}" != 1 ]; then swift build; fi
for module in GPSLocation LocationCore LocationWords GPSLocationTesting NMEA0183; do
  [ -f "$modules/$module.swiftmodule" ] || { echo "docs: no debug build of $module (swift build)" >&2; exit 1; }
  swift symbolgraph-extract -module-name "$module" -I "$modules" -I Sources/CGPS -I .build/debug/CPseudoTerminal.build -I .build/debug/CTimerFD.build \
    -target "$(uname -m)-unknown-linux-gnu" -minimum-access-level public -skip-synthesized-members \
    -output-dir "$symbols" >"$out/symbolgraph-$module.log" 2>&1 || {
    cat "$out/symbolgraph-$module.log" >&2
    echo "docs: no symbol graph for $module" >&2
    exit 1
  }
done
undocumented=0
archives=()
for module in GPSLocation LocationCore LocationWords GPSLocationTesting NMEA0183; do
  moduleSymbols="$out/symbols-$module"
  rm -rf "$moduleSymbols"; mkdir -p "$moduleSymbols"
  cp "$symbols/$module".symbols.json "$symbols/$module"@*.symbols.json "$moduleSymbols/" 2>/dev/null || true
  log="$out/$module.log"
  docc convert "Sources/$module/$module.docc" --additional-symbol-graph-dir "$moduleSymbols" \
    --output-path "$out/archives/$module.doccarchive" --fallback-display-name "$module" \
    --fallback-bundle-identifier "org.gpslocation.$module" --warnings-as-errors \
    --experimental-documentation-coverage --coverage-summary-level none >"$log" 2>&1 || {
    cat "$log" >&2
    echo "docs: DocC reported warnings or errors for $module" >&2
    exit 1
  }
  archives+=("$out/archives/$module.doccarchive")
  # Counted: declarations written in this package's sources (their symbols carry a source
  # location). Not counted: what the compiler writes (an enum's `init(rawValue:)`, Codable's
  # `init(from:)`), DocC's groups of a conformance's members, and articles (checked by DocC).
  count="$(python3 - "$out/archives/$module.doccarchive/documentation-coverage.json" "$moduleSymbols" <<'PY'
import glob, json, re, sys
entries = json.load(open(sys.argv[1]))
synthesized = set()
for path in glob.glob(sys.argv[2] + "/*.symbols.json"):
    for symbol in json.load(open(path))["symbols"]:
        if "location" not in symbol:
            synthesized.add("/".join(symbol["pathComponents"]))
def key(reference):
    parts = reference.split("/documentation/", 1)[1].split("/")[1:]
    return "/".join(re.sub(r"-(swift\.[a-z]+|[0-9a-z]{4,6})$", "", part) for part in parts)
missing = [e for e in entries if not e.get("hasAbstract", False)
           and e["kind"]["name"] not in ("CollectionGroup", "Article")
           and key(e["referencePath"]) not in synthesized]
for e in missing:
    print("  undocumented: " + e["referencePath"].split("/documentation/", 1)[1], file=sys.stderr)
print(len(missing))
PY
)"
  echo "docs: $module — $count public declarations without a doc comment" >&2
  undocumented=$((undocumented + count))
done
# Pages that teach (#36): every main type's page and every article has a code listing.
python3 - "$out/archives" <<'PY' || exit 1
import json, os, sys
root = sys.argv[1]
pages = {
    "GPSLocation": ["cllocationmanager", "cllocation", "cllocationupdate", "clmonitor", "clgeocoder",
                    "clservicesession"],
    "LocationCore": ["nmeareplaysource", "locationauthorizer"],
    "GPSLocationTesting": ["manuallocationsource"],
}
def listings(node):
    if isinstance(node, dict):
        return (node.get("type") == "codeListing") + sum(listings(v) for v in node.values())
    if isinstance(node, list):
        return sum(listings(v) for v in node)
    return 0
missing, counted = [], 0
for module, names in pages.items():
    folder = os.path.join(root, f"{module}.doccarchive", "data", "documentation", module.lower())
    articles = [n[:-5] for n in os.listdir(folder) if n.endswith(".json")
                and json.load(open(os.path.join(folder, n))).get("metadata", {}).get("role") == "article"]
    for name in names + articles:
        page = json.load(open(os.path.join(folder, name + ".json")))
        found = listings(page.get("primaryContentSections", [])) + listings(page.get("abstract", []))
        counted += 1
        if found == 0:
            missing.append(f"{module}/{name}")
if missing:
    print("docs: no code listing on " + ", ".join(missing) + ": add an example", file=sys.stderr)
    sys.exit(1)
print(f"docs: {counted} main-type pages and articles, each with a code listing", file=sys.stderr)
PY
rm -rf "$out/site.doccarchive"
docc merge "${archives[@]}" --output-path "$out/site.doccarchive" >&2
docc process-archive transform-for-static-hosting "$out/site.doccarchive" --output-path "$out/site" >&2
echo "docs: the static site is $out/site (serve it: python3 -m http.server -d $out/site, then /documentation/)" >&2
if [ "$undocumented" -gt 0 ]; then
  echo "docs: $undocumented public declarations have no doc comment (listed above): document them" >&2
  exit 1
fi
echo "docs: ok — no DocC warning; every public declaration documented" >&2
