import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// A table that refreshes in place on a terminal (like gpsd's cgps, but showing what an app
/// receives). At most 78 columns, so it fits an 80-column terminal; redrawn on every update
/// and once a second (for the fix's age). `finish()` leaves the cursor below it, visible.
final class TableSink: UpdateSink, Sendable {
    private let title: String
    private let units: Units
    /// What the table shows, and its redraw timer.
    private struct Table {
        var location: LocationValue?
        var sky: SkyView?
        var skyTime = Date.distantPast
        var authorization = "—"
        var device = "—"
        var lastMessage = "—"
        /// The last message is a problem a location resolves (an error, no fix, stale, …).
        var messageIsProblem = false
        /// The receiver has no fix now (said by the engine; cleared by the next location).
        var noFix = false
        /// Each monitored region's last state, by identifier.
        var regions: [String: String] = [:]
        var lastVisit: String?
        /// Only receivers that report a heading get the row.
        var heading: HeadingValue?
        var timer: DispatchSource?
        var started = false
        /// Nothing is drawn until `show()`: the screen is cleared only after the consent
        /// questions are answered.
        var shown = false
    }
    private let table = Locked(Table())
    /// Where the screen's bytes go (stdout; a test's buffer).
    private let output: @Sendable (String) -> Void

    /// A table on stdout, redrawn every second once shown.
    convenience init(title: String, units: Units = .metric) {
        self.init(title: title, ticks: true, units: units) { standardOutput(Array($0.utf8)) }
    }

    /// A table writing to `output`; `ticks`: redrawn every second (tests call `tick()` instead).
    init(title: String, ticks: Bool, units: Units = .metric, output: @escaping @Sendable (String) -> Void) {
        self.title = title
        self.units = units
        self.output = output
        guard ticks else { return }
        let timer = DispatchSource.sendable(DispatchSource.makeTimerSource(queue: DispatchQueue(label: "gpsloc.table")))
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { [weak self] in self?.tick() }
        table.withLock { $0.timer = timer }
        timer.resume()
    }

    /// The once-a-second redraw (the fix's age moves on).
    func tick() { redraw() }

    /// A location resolves the problem shown: the message clears, and so does NO FIX.
    func location(_ location: LocationValue) {
        update { table in
            table.location = location
            table.noFix = false
            if table.messageIsProblem {
                table.lastMessage = "—"
                table.messageIsProblem = false
            }
        }
    }
    func error(_ error: CLError) {
        let lost: Set<CLError.Reason> = [.stale, .receiverDeactivated, .gpsdLost, .gpsdSilent, .gpsdUnreachable]
        update { table in
            table.lastMessage = "error (\(error.code)): \(error.description)"
            table.messageIsProblem = true
            if let reason = error.reason, lost.contains(reason) { table.noFix = true }
        }
    }
    static let problemCodes: Set<String> = ["noFix", "stale", "future", "timeWentBack", "timeJumped", "reconnecting"]
    func diagnostic(code: String, message: String) {
        update { table in
            table.lastMessage = message
            table.messageIsProblem = Self.problemCodes.contains(code)
            if code == "noFix" { table.noFix = true }
        }
    }
    func device(_ device: DeviceEvent) {
        update {
            $0.device =
                "\(device.path) \(device.activated ? "active" : "gone")\(device.driver.map { " (\($0))" } ?? "")"
        }
    }
    func authorization(status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization, reason: String?) {
        update { $0.authorization = "\(status.name), \(accuracy.name) accuracy" + (reason.map { " (\($0))" } ?? "") }
    }
    /// gpsd reports the sky one constellation set at a time: keep the fullest report of the
    /// last receiver cycle.
    var showsSky: Bool { true }

    func sky(_ sky: SkyView) {
        update { table in
            let now = Date()
            if table.sky == nil || sky.satellitesVisible >= (table.sky?.satellitesVisible ?? 0)
                || now.timeIntervalSince(table.skyTime) > 1.5
            {
                table.sky = sky
                table.skyTime = now
            }
        }
    }

    func heading(_ heading: HeadingValue) { update { $0.heading = heading } }

    /// `123.4° true, 124.4° magnetic` (a part the receiver cannot give: `—`).
    static func describe(_ heading: HeadingValue) -> String {
        let trueText = heading.trueHeading >= 0 ? "\(fixedDecimal(heading.trueHeading, decimals: 1))° true" : "— true"
        let magnetic =
            heading.magneticHeading >= 0
            ? "\(fixedDecimal(heading.magneticHeading, decimals: 1))° magnetic" : "— magnetic"
        return "\(trueText), \(magnetic)"
    }

    func region(_ event: RegionEvent) {
        update {
            $0.regions[event.identifier] =
                event.state.rawValue + (event.limitation.map { " (\($0.rawValue))" } ?? "") + " since "
                + String(iso8601Milliseconds(event.timestamp).dropFirst(11).prefix(8))
        }
    }

    func visit(_ visit: VisitRecord) {
        update {
            $0.lastVisit =
                "arrived \(iso8601Milliseconds(visit.arrival).dropFirst(11).prefix(8))"
                + (visit.departure.map { ", left \(iso8601Milliseconds($0).dropFirst(11).prefix(8))" }
                    ?? ", still there")
        }
    }

    func finish() {
        table.withLock {
            $0.timer?.cancel()
            // Below the table, cursor visible again.
            if $0.shown { write("\u{1B}[?25h\n") }
        }
    }

    func show() {
        table.withLock { $0.shown = true }
        redraw()
    }

    private func update(_ change: (inout Table) -> Void) {
        table.withLock { change(&$0) }
        redraw()
    }

    private func redraw() {
        table.withLock { table in
            guard table.shown else { return }
            var lines: [String] = []
            lines.append(Self.fit("gpsloc watch — \(title)"))
            lines.append(String(repeating: "─", count: 78))
            if let location = table.location {
                let gnss = location.gnss
                let age = Date().timeIntervalSince(location.timestamp)
                lines.append(row("Time", "\(iso8601Milliseconds(location.timestamp))  (age \(Self.age(age)))"))
                lines.append(
                    row("Latitude", "\(padLeft(fixedDecimal(location.coordinate.latitude, decimals: 8), 12))°"))
                lines.append(
                    row("Longitude", "\(padLeft(fixedDecimal(location.coordinate.longitude, decimals: 8), 12))°"))
                lines.append(
                    row(
                        "Altitude",
                        location.verticalAccuracy > 0
                            ? "\(units.length(location.altitude)) MSL, \(units.length(location.ellipsoidalAltitude)) ellipsoid"
                            : "—"))
                let horizontal =
                    location.horizontalAccuracy < CLLocationDistanceMax
                    ? "±" + units.length(location.horizontalAccuracy) : "unknown"
                lines.append(row("Horizontal", "\(horizontal)  [\(gnss?.accuracyClass.description ?? "?")]"))
                lines.append(
                    row(
                        "Vertical",
                        location.verticalAccuracy > 0 ? "±" + units.length(location.verticalAccuracy) : "—"))
                lines.append(row("Speed", location.speed >= 0 ? units.speed(location.speed) : "—"))
                lines.append(
                    row("Course", location.course >= 0 ? "\(fixedDecimal(location.course, decimals: 1))°" : "—"))
                if let heading = table.heading { lines.append(row("Heading", Self.describe(heading))) }
                let fix =
                    table.noFix
                    ? "NO FIX (the location above is the last one)"
                    : "\(gnss?.fixMode.description ?? "?"), \(gnss?.quality.description ?? "?")\(gnss?.reduced == true ? ", REDUCED" : "")"
                lines.append(row("Fix", fix))
            } else {
                lines.append(row("Location", "none yet"))
                for _ in 0..<8 { lines.append("") }
            }
            if let sky = table.sky {
                lines.append(row("Satellites", "\(sky.satellitesUsed) used of \(sky.satellitesVisible) seen"))
            } else {
                lines.append(row("Satellites", "—"))
            }
            lines.append(row("Device", table.device))
            lines.append(row("Authorization", table.authorization))
            for (identifier, state) in table.regions.sorted(by: { $0.key < $1.key }).prefix(8) {
                lines.append(row("Region", "\(identifier): \(state)"))
            }
            if table.regions.count > 8 { lines.append(row("Regions", "… and \(table.regions.count - 8) more")) }
            if let lastVisit = table.lastVisit { lines.append(row("Visit", lastVisit)) }
            // Whole, over as many rows as it needs (at most six), never cut mid-sentence.
            for (index, part) in Self.wrap(terminalSafe(table.lastMessage), width: 64).prefix(6).enumerated() {
                lines.append(row(index == 0 ? "Last message" : "", part))
            }
            lines.append(String(repeating: "─", count: 78))
            lines.append(Self.fit("Ctrl-C to stop"))
            var text = table.started ? "" : "\u{1B}[?25l\u{1B}[H\u{1B}[2J"
            table.started = true
            // Clear below too: a shorter table than the last one leaves nothing behind.
            text += "\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\n") + "\u{1B}[J"
            write(text)
        }
    }

    /// Every value is made terminal-safe: device paths, driver names and messages come from gpsd.
    private func row(_ label: String, _ value: String) -> String {
        Self.fit(label.paddedRight(to: 14) + terminalSafe(value))
    }

    /// `text` in lines of at most `width` characters, broken at spaces.
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var current = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            if !current.isEmpty && current.count + 1 + word.count > width {
                lines.append(current)
                current = ""
            }
            current += current.isEmpty ? String(word) : " " + word
            while current.count > width {
                lines.append(String(current.prefix(width)))
                current = String(current.dropFirst(width))
            }
        }
        if !current.isEmpty || lines.isEmpty { lines.append(current) }
        return lines
    }

    private static func fit(_ text: String) -> String { text.count <= 78 ? text : String(text.prefix(77)) + "…" }

    private static func age(_ seconds: Double) -> String {
        if seconds < 0 { return "\(fixedDecimal(-seconds, decimals: 1)) s in the future: check this machine's clock" }
        if seconds < 120 { return "\(fixedDecimal(seconds, decimals: 1)) s" }
        if seconds < 7200 { return "\(fixedDecimal(seconds / 60, decimals: 0)) min" }
        return "\(fixedDecimal(seconds / 86_400, decimals: 1)) days"
    }

    private func write(_ text: String) { output(text) }
}
