/// `gpsloc serve`'s page: the current position, a map of the session's track with the accuracy
/// circle (Leaflet from Debian's libjs-leaflet, tiles only when `--tiles` names a server), the
/// sky, the counts, the latest locations, and the start/stop control. Its script is
/// `ServeScript`; nothing is inline (the page's Content-Security-Policy allows no inline script).
enum ServePage {
    static func html(token: String, replay: String?, tiles: String?) -> String {
        let source =
            replay.map { "Replay of \(escape($0)) — recorded data, not a live receiver" }
            ?? "Live from gpsd"
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="gpsloc-token" content="\(escape(token))">
            <title>gpsloc — where the receiver is</title>
            <link rel="stylesheet" href="/leaflet/leaflet.css">
            <link rel="stylesheet" href="/app.css">
            <script src="/leaflet/leaflet.js" defer></script>
            <script src="/app.js" defer></script>
            </head>
            <body>
            <header>
              <h1>gpsloc</h1>
              <span id="source" class="\(replay == nil ? "live" : "replay")">\(source)</span>
              <button id="tracking" type="button" data-tracking="unknown" disabled>…</button>
            </header>
            <p id="status" role="status">Connecting…</p>
            <p id="note"></p>
            <main>
              <section id="now">
                <div id="position" aria-label="latitude, longitude">—</div>
                <div id="approximate" hidden>approximate — this app has reduced accuracy</div>
                <dl>
                  <dt>Altitude</dt><dd id="altitude">—</dd>
                  <dt>Speed</dt><dd id="speed">—</dd>
                  <dt>Course</dt><dd id="course">—</dd>
                  <dt>Accuracy</dt><dd id="accuracy">—</dd>
                  <dt>Fix</dt><dd id="fix">—</dd>
                  <dt>Received</dt><dd id="received">0</dd>
                  <dt>Last batch</dt><dd id="batch">—</dd>
                </dl>
                <p><a href="/track.gpx" download>Download the track (GPX)</a></p>
              </section>
              <section id="map" data-tiles="\(escape(tiles ?? ""))"></section>
              <section id="skybox">
                <svg id="sky" viewBox="-110 -110 220 220" role="img" aria-label="satellites in view">
                  <circle r="100" class="ring"/><circle r="66.7" class="ring"/><circle r="33.3" class="ring"/>
                  <line x1="-100" y1="0" x2="100" y2="0" class="ring"/><line x1="0" y1="-100" x2="0" y2="100" class="ring"/>
                  <text x="0" y="-102" class="compass">N</text><text x="104" y="4" class="compass">E</text>
                  <text x="0" y="110" class="compass">S</text><text x="-104" y="4" class="compass">W</text>
                  <g id="satellites"></g>
                </svg>
                <p id="skycount">No satellites reported yet.</p>
              </section>
              <section id="history">
                <table id="locations">
                  <thead><tr><th>Time (UTC)</th><th>Position</th><th>Accuracy</th><th>Speed</th><th>Course</th></tr></thead>
                  <tbody></tbody>
                </table>
              </section>
            </main>
            </body>
            </html>

            """
    }

    static let css = """
        body { font-family: system-ui, sans-serif; margin: 0; background: #f6f7f8; color: #1b1f23; }
        header { display: flex; align-items: center; gap: 1em; padding: .5em 1em; background: #20303f; color: #fff; }
        header h1 { font-size: 1.2em; margin: 0; }
        #source.replay { background: #b35c00; padding: .1em .5em; border-radius: .3em; }
        #tracking { margin-left: auto; font-size: 1em; padding: .4em 1.2em; border-radius: .3em; border: 0; }
        #tracking[data-tracking="true"] { background: #c62828; color: #fff; }
        #tracking[data-tracking="false"] { background: #2e7d32; color: #fff; }
        #status { margin: 0; padding: .4em 1em; background: #fff3cd; }
        #status.ok { background: #e8f5e9; }
        #note { margin: 0; padding: 0 1em; font-size: .85em; color: #555; }
        main { display: grid; grid-template-columns: minmax(16em, 1fr) 2fr; gap: 1em; padding: 1em;
          grid-template-areas: "now map" "sky map" "history history"; }
        #now { grid-area: now; } #map { grid-area: map; } #skybox { grid-area: sky; } #history { grid-area: history; }
        #position { font: 600 1.4em ui-monospace, monospace; }
        #approximate { color: #b35c00; font-weight: 600; }
        dl { display: grid; grid-template-columns: auto 1fr; gap: .2em 1em; }
        dt { color: #555; } dd { margin: 0; font-family: ui-monospace, monospace; }
        #map { min-height: 520px; background: #dde3e8; }
        #skybox svg { width: 100%; max-width: 300px; }
        .ring { fill: none; stroke: #9aa5b1; stroke-width: .6; }
        .compass { font-size: 9px; text-anchor: middle; fill: #555; }
        .sat.used { stroke: #1b1f23; stroke-width: 1.2; }
        .sat.unused { opacity: .45; }
        .prn { font-size: 6px; text-anchor: middle; fill: #1b1f23; }
        table { border-collapse: collapse; font: .85em ui-monospace, monospace; width: 100%; }
        th, td { border-bottom: 1px solid #ccd; padding: .2em .5em; text-align: left; }
        #history { overflow-x: auto; }
        @media (max-width: 700px) {
          main { grid-template-columns: 1fr; grid-template-areas: "now" "map" "sky" "history"; }
          #map { min-height: 320px; }
        }

        """

    /// Text for HTML: the five characters that could end an attribute or start a tag.
    static func escape(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
            .replacing("\"", with: "&quot;").replacing("'", with: "&#39;")
    }
}
