import Foundation
import TestSupport
import Testing

/// Each rule about what reaches an app is written once (#32): a copy is a place where the CLI,
/// the manager and the coming broker can disagree. This lint names the one place of each and
/// fails on a line elsewhere in `Sources` that writes the rule again.
@Suite("every rule once: each lives in the one place this names")
struct OneRuleOnePlaceTests {
    struct Rule: CustomTestStringConvertible, Sendable {
        let name: String
        /// What writing the rule again looks like.
        let pattern: String
        /// The files (below Sources/) that may contain it.
        let places: Set<String>
        var testDescription: String { name }
    }

    static let rules: [Rule] = [
        Rule(
            name: "is this app authorized (CLAuthorizationStatus.isAuthorized)",
            pattern: #"\.authorizedAlways\s*\|\||\|\|\s*[\w.]*status\s*==\s*\.authorizedWhenInUse"#,
            places: ["LocationCore/Authorization.swift"]),
        Rule(
            name: "which cached location an app may see (AuthorizationDecision.permits(cached:))",
            pattern: #"(fullAccuracy|reducedAccuracy).*gnss\?\.reduced"#,
            places: ["LocationCore/Engine/AuthorizationGate.swift"]),
        Rule(
            name: "the user's XDG folders (PrivateFile.userDirectory)",
            pattern: #""XDG_[A-Z]+_HOME""#,
            places: ["LocationCore/PrivateFile.swift"]),
        Rule(
            name: "once a minute for a repeated message (RepeatLimiter)",
            pattern: #"timeIntervalSince\([^)]*\)\s*(<|>=)\s*60\b|lastDiagnosed|lastNotice"#,
            places: []),
        Rule(
            name: "the stationary detector (the engine's, in its own file)",
            pattern: #"StationaryDetector\(\)|struct StationaryDetector"#,
            places: ["LocationCore/Engine/LocationEngine.swift", "LocationCore/Engine/StationaryDetector.swift"]),
        Rule(
            name: "holding a fix for its estimate (LocationEngine.held; NMEA0183 alone carries its own GST)",
            pattern: #"\.applied\(to:"#,
            places: ["LocationCore/Engine/LocationEngine+Holding.swift", "NMEA0183/EpochAssembler+Fix.swift"]),
        Rule(
            name: "kept regions (RegionKeeper)",
            pattern: #"\.conditions\(monitor:|\.save\([^)]*monitor:|MonitorStore\.Condition\("#,
            places: ["LocationCore/Authorization/RegionKeeper.swift"]),
        Rule(
            name: "what the engine hands an app (LocationEngine.Output, one enum)",
            pattern: #"enum Output\b"#,
            places: ["LocationCore/Engine/LocationEngine+Output.swift"]),
        // #50: the rules a review of 8692a9e found written two or three times, across the
        // engine, the broker and the CLI.
        Rule(
            name: "refused outright: denied or restricted (CLAuthorizationStatus.refusesAll)",
            pattern:
                #"==\s*\.denied\s*\|\|\s*[\w.]*\s*==\s*\.restricted|!=\s*\.denied\s*&&\s*[\w.]*\s*!=\s*\.restricted"#,
            places: ["LocationCore/Authorization.swift"]),
        Rule(
            name: "gpsd's 95 % scale, 1.96 σ (ReceiverErrorEstimate.confidenceScale)",
            pattern: #"\b1\.96\b"#,
            places: ["GNSSCore/Fix.swift"]),
        Rule(
            name: "how often a last location is written (LastLocationCache.defaultWriteInterval)",
            pattern: #"[wW]riteInterval: TimeInterval = \d"#,
            places: ["LocationCore/LastLocationCache.swift"]),
        Rule(
            name: "when a kept last location is written again (WriteThrottle; the cache and gpslocd's store ask it)",
            pattern: #"(<|>=)\s*writeInterval\b"#,
            places: []),
        Rule(
            name: "the distance filter and the minimum interval (DeliveryFilter: the engine's, and per GeoClue client)",
            pattern: #"[iI]nterval\s*-\s*0\.001|distanceFilter\s*>\s*0\b"#,
            places: ["LocationCore/Engine/Stages.swift"]),
        Rule(
            name: "the distance filter's value (LocationEngine.Configuration, nowhere else)",
            pattern: #"var distanceFilter\s*:\s*CLLocationDistance\s*="#,
            places: ["LocationCore/Engine/LocationEngine+Configuration.swift"]),
        Rule(
            name: "the minimum update interval's value (LocationEngine.Configuration; the faces set it there)",
            pattern: #"var minimumUpdateInterval\s*:\s*TimeInterval\s*="#,
            places: ["LocationCore/Engine/LocationEngine+Configuration.swift"]),
        Rule(
            name: "reduced accuracy's 15 minutes between points (LocationFuzzer's default)",
            pattern: #"^\s*(_\s+)?minimumInterval\s*:\s*TimeInterval\s*=\s*\d"#,
            places: ["LocationCore/LocationFuzzer.swift"]),
        Rule(
            name: "a one-shot's end (the engine's: no face drives a manager's requestLocation() and ends it itself)",
            pattern: #"OnceDelegate|\.requestLocation\(\)"#,
            places: []),
    ]

    /// Every Swift line of Sources/, by path below it, comments left out.
    static let sources: [(path: String, lines: [Substring])] = {
        let root = Paths.packageRoot.appendingPathComponent("Sources")
        let files =
            FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        return files.compactMap { url in
            guard let text = try? String(contentsOf: url, encoding: .utf8) else { return nil }
            let path = String(url.path.dropFirst(root.path.count + 1))
            let code = text.split(separator: "\n", omittingEmptySubsequences: false).filter {
                !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//")
            }
            return (path, code)
        }
    }()

    @Test("written once", arguments: rules)
    func once(rule: Rule) throws {
        let expression = try NSRegularExpression(pattern: rule.pattern)
        #expect(Self.sources.count > 50)
        var found: [String] = []
        for (path, lines) in Self.sources {
            for line in lines {
                let text = String(line)
                if expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil,
                    !rule.places.contains(path)
                {
                    found.append("\(path): \(text.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found.isEmpty, "\(rule.name) is written again outside \(rule.places.sorted()): \(found)")
    }

    @Test("each named place exists and holds its rule", arguments: rules.filter { !$0.places.isEmpty })
    func placesHoldTheRule(rule: Rule) throws {
        let expression = try NSRegularExpression(pattern: rule.pattern)
        for place in rule.places {
            let lines = try #require(Self.sources.first { $0.path == place }?.lines, "\(place) is gone")
            #expect(
                lines.contains {
                    let text = String($0)
                    return expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
                }, "\(place) no longer holds \(rule.name): update this lint with the rule's new place")
        }
    }
}
