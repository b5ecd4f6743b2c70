/// The page's script (`/app.js`): it reads `/api/events` (EventSource resumes with
/// `Last-Event-ID` by itself after a phone slept), draws the track and the accuracy circle with
/// Leaflet, places the satellites on the sky plot, fills the table, and sends start/stop with
/// the page's token.
enum ServeScript {
    static let text = #"""
        "use strict";
        (function () {
          const token = document.querySelector('meta[name="gpsloc-token"]').content;
          const $ = (id) => document.getElementById(id);
          const svgNS = "http://www.w3.org/2000/svg";
          const maxRows = 50, maxPoints = 20000;
          let received = 0, map = null, track = null, circle = null, points = [], centred = false, tracking = null;
          // The map follows the receiver until the person drags or zooms it.
          let following = true, tiled = false;

          function initMap() {
            const box = $("map");
            if (!window.L) {
              box.textContent = "The map needs Leaflet: install Debian's libjs-leaflet on the box.";
              return;
            }
            map = L.map(box, { zoomControl: true });
            const tiles = box.dataset.tiles;
            tiled = Boolean(tiles);
            map.on("dragstart", () => { following = false; });
            if (tiles) {
              L.tileLayer(tiles, { maxZoom: 19, attribution: "map tiles: " + tiles.split("/")[2] }).addTo(map);
            } else {
              map.attributionControl.addAttribution("no map tiles (gpsloc serve --tiles URL adds them); the track is drawn");
            }
            L.control.scale({ imperial: false }).addTo(map);
            track = L.polyline([], { color: "#1565c0", weight: 3 }).addTo(map);
            circle = L.circle([0, 0], { radius: 0, color: "#1565c0", weight: 1, fillOpacity: 0.15 }).addTo(map);
            map.setView([0, 0], 2);
          }

          const fmt = (value, digits, unit) => value === null || value === undefined ? "—" : value.toFixed(digits) + unit;

          function say(text, ok) {
            $("status").textContent = text;
            $("status").className = ok ? "ok" : "";
          }

          function showLocation(loc) {
            $("position").textContent = loc.latitude.toFixed(7) + ", " + loc.longitude.toFixed(7);
            $("altitude").textContent = fmt(loc.altitude, 1, " m");
            $("speed").textContent = fmt(loc.speed, 2, " m/s");
            $("course").textContent = fmt(loc.course, 1, "°");
            $("accuracy").textContent = fmt(loc.horizontalAccuracy, 1, " m") + " (" + loc.accuracyClass + ")";
            $("fix").textContent = loc.fixMode.toUpperCase();
            $("approximate").hidden = !loc.reduced;
            say("Tracking — last location " + loc.timestamp.replace("T", " ").replace("Z", " UTC"), true);
            if (!map) return;
            const here = [loc.latitude, loc.longitude];
            circle.setLatLng(here).setRadius(loc.horizontalAccuracy || 0);
            if (!following) return;
            if (!tiled && points.length > 1) {
              // No map to read: the whole track in view.
              map.fitBounds(track.getBounds(), { padding: [24, 24], maxZoom: 17, animate: false });
            } else if (!centred) {
              map.setView(here, loc.reduced ? 12 : 17);
              centred = true;
            } else if (!map.getBounds().contains(here)) {
              map.panTo(here);
            }
          }

          function addRows(batch) {
            const body = $("locations").tBodies[0];
            for (const loc of batch) {
              const row = body.insertRow(0);
              const cells = [
                loc.timestamp.slice(11, 23),
                loc.latitude.toFixed(6) + ", " + loc.longitude.toFixed(6),
                fmt(loc.horizontalAccuracy, 1, " m"),
                fmt(loc.speed, 2, " m/s"),
                fmt(loc.course, 1, "°"),
              ];
              for (const text of cells) row.insertCell().textContent = text;
            }
            while (body.rows.length > maxRows) body.deleteRow(body.rows.length - 1);
          }

          function onLocations(event) {
            const batch = JSON.parse(event.data);
            received += batch.length;
            $("received").textContent = String(received);
            $("batch").textContent = String(batch.length);
            if (batch.length === 0) return;
            addRows(batch);
            if (track) {
              for (const loc of batch) points.push([loc.latitude, loc.longitude]);
              if (points.length > maxPoints) points.splice(0, points.length - maxPoints);
              track.setLatLngs(points);
            }
            showLocation(batch[batch.length - 1]);
          }

          function signalColour(snr) {
            if (snr === null) return "#9aa5b1";
            if (snr >= 40) return "#2e7d32";
            if (snr >= 30) return "#9e9d24";
            if (snr >= 20) return "#ef6c00";
            return "#c62828";
          }

          function onSky(event) {
            const sky = JSON.parse(event.data);
            const group = $("satellites");
            group.replaceChildren();
            let placed = 0;
            for (const sat of sky.satellites) {
              if (sat.elevation === null || sat.azimuth === null) continue;
              const radius = (90 - Math.max(0, Math.min(90, sat.elevation))) / 90 * 100;
              const angle = sat.azimuth * Math.PI / 180;
              const x = radius * Math.sin(angle), y = -radius * Math.cos(angle);
              const mark = document.createElementNS(svgNS, "g");
              mark.setAttribute("data-prn", String(sat.prn));
              mark.setAttribute("class", "sat " + (sat.used ? "used" : "unused"));
              const dot = document.createElementNS(svgNS, "circle");
              dot.setAttribute("cx", x.toFixed(1));
              dot.setAttribute("cy", y.toFixed(1));
              dot.setAttribute("r", (3 + Math.min(sat.signalToNoise || 0, 50) / 10).toFixed(1));
              dot.setAttribute("fill", signalColour(sat.signalToNoise));
              const title = document.createElementNS(svgNS, "title");
              title.textContent = sat.constellation + " " + sat.svid + ": elevation " + sat.elevation + "°, azimuth " +
                sat.azimuth + "°, " + (sat.signalToNoise === null ? "no signal" : sat.signalToNoise + " dB-Hz") +
                (sat.used ? ", used" : ", not used");
              dot.appendChild(title);
              const label = document.createElementNS(svgNS, "text");
              label.setAttribute("x", x.toFixed(1));
              label.setAttribute("y", (y - 7).toFixed(1));
              label.setAttribute("class", "prn");
              label.textContent = String(sat.prn);
              mark.append(dot, label);
              group.appendChild(mark);
              placed += 1;
            }
            $("skycount").textContent = sky.satellitesUsed + " used of " + sky.satellitesVisible + " in view (" + placed + " placed)";
          }

          function onStatus(event) {
            const status = JSON.parse(event.data);
            // Errors say why no location comes; diagnostics and receivers are notes beside it.
            if (status.type === "error") say(status.message, false);
            else if (status.message) $("note").textContent = status.message;
            else if (status.type === "device") $("note").textContent = "Receiver " + status.path + (status.activated ? " active" : " gone");
          }

          function onAuthorization(event) {
            const auth = JSON.parse(event.data);
            const allowed = auth.status === "authorizedAlways" || auth.status === "authorizedWhenInUse";
            if (!allowed) {
              say("Not authorized (" + auth.status + "): run `gpsloc auth grant gpsloc --always` on the box", false);
            }
            $("approximate").hidden = !(allowed && auth.accuracy === "reducedAccuracy");
          }

          function showTracking(state) {
            tracking = state.tracking;
            const button = $("tracking");
            button.dataset.tracking = String(tracking);
            button.textContent = tracking ? "Stop" : "Start";
            button.disabled = false;
            if (!tracking) say("Tracking is stopped" + (state.reason ? " (" + state.reason + ")" : "") + ".", false);
          }

          async function toggle() {
            const button = $("tracking");
            button.disabled = true;
            try {
              const response = await fetch(tracking ? "/api/stop" : "/api/start", {
                method: "POST", headers: { "X-GPSLoc-Token": token }, credentials: "same-origin",
              });
              const state = await response.json();
              if (!response.ok) say(state.message || ("the server said " + response.status), false);
              else showTracking(state);
            } catch (error) {
              say("The box cannot be reached: " + error, false);
            }
            button.disabled = false;
          }

          function connect() {
            const events = new EventSource("/api/events");
            events.addEventListener("locations", onLocations);
            events.addEventListener("sky", onSky);
            events.addEventListener("status", onStatus);
            events.addEventListener("authorization", onAuthorization);
            events.addEventListener("tracking", (event) => showTracking(JSON.parse(event.data)));
            events.onopen = () => { if ($("status").textContent === "Connecting…") say("Connected — waiting for a location", false); };
            events.onerror = () => say("Connection to the box lost — reconnecting (nothing is missed: the box keeps a day of locations)…", false);
          }

          // The session's track so far, then the stream (whose first location is the latest).
          async function loadTrack() {
            if (!track) return;
            try {
              const response = await fetch("/api/track", { credentials: "same-origin" });
              if (response.ok) {
                const held = await response.json();
                points = held.points.slice(-maxPoints).concat(points);
                track.setLatLngs(points);
              }
            } catch (error) {
              // The stream says what is wrong with the connection.
            }
          }

          initMap();
          $("tracking").addEventListener("click", toggle);
          loadTrack().then(connect);
        })();

        """#
}
