import Foundation
import TestSupport
import Testing

/// A small parser and evaluator for udev rule files (the grammar is in udev/README.md).
struct UdevRules {
    struct Pair: Equatable {
        var key: String
        var attribute: String?
        var op: String
        var value: String
    }

    enum ParseError: Error, Equatable {
        case malformed(line: Int, text: String)
        case unknownKey(line: Int, key: String)
    }

    static let matchKeys: Set<String> = [
        "ACTION", "SUBSYSTEM", "SUBSYSTEMS", "KERNEL", "KERNELS", "DRIVER", "DRIVERS", "ATTR", "ATTRS", "ENV", "TAG",
        "TAGS", "DEVPATH", "NAME", "SYMLINK", "TEST", "PROGRAM", "RESULT",
    ]
    static let assignKeys: Set<String> = [
        "SYMLINK", "TAG", "ENV", "GOTO", "LABEL", "GROUP", "MODE", "OWNER", "RUN", "NAME", "ATTR", "OPTIONS",
    ]

    var rules: [(line: Int, pairs: [Pair])] = []

    init(_ text: String) throws {
        let pattern = /^\s*([A-Z_]+)(\{([^}]+)\})?\s*(==|!=|\+=|-=|:=|=)\s*"([^"]*)"\s*$/
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            var pairs: [Pair] = []
            for part in Self.splitPairs(line) {
                guard let match = part.wholeMatch(of: pattern) else {
                    throw ParseError.malformed(line: index + 1, text: part)
                }
                let pair = Pair(
                    key: String(match.1), attribute: match.3.map(String.init), op: String(match.4),
                    value: String(match.5))
                let known = pair.op == "==" || pair.op == "!=" ? Self.matchKeys : Self.assignKeys
                guard known.contains(pair.key) else { throw ParseError.unknownKey(line: index + 1, key: pair.key) }
                pairs.append(pair)
            }
            rules.append((index + 1, pairs))
        }
    }

    /// Splits on commas outside quotes.
    static func splitPairs(_ line: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var quoted = false
        for character in line {
            if character == "\"" { quoted.toggle() }
            if character == "," && !quoted {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.trimmingCharacters(in: .whitespaces).isEmpty { parts.append(current) }
        return parts
    }

    var labels: Set<String> { Set(rules.flatMap { $0.pairs }.filter { $0.key == "LABEL" }.map(\.value)) }

    /// Runs the rules for a device (keys like "ACTION", "SUBSYSTEM", "ATTRS{idVendor}") and returns
    /// what they assign: symlinks and SYSTEMD_WANTS.
    func evaluate(_ device: [String: String]) -> (symlinks: [String], wants: [String]) {
        var symlinks: [String] = []
        var wants: [String] = []
        var skipTo: String?
        for rule in rules {
            if let target = skipTo {
                if rule.pairs.contains(where: { $0.key == "LABEL" && $0.value == target }) { skipTo = nil }
                continue
            }
            let matches = rule.pairs.filter { $0.op == "==" || $0.op == "!=" }.allSatisfy { pair in
                let name = pair.attribute.map { "\(pair.key){\($0)}" } ?? pair.key
                let value = device[name] ?? ""
                let hit = fnmatch(pair.value, value, 0) == 0
                return pair.op == "==" ? hit : !hit
            }
            guard matches else { continue }
            for pair in rule.pairs where pair.op != "==" && pair.op != "!=" {
                switch (pair.key, pair.attribute) {
                case ("SYMLINK", _): symlinks.append(pair.value)
                case ("ENV", "SYSTEMD_WANTS"): wants.append(pair.value)
                case ("GOTO", _): skipTo = pair.value
                default: break
                }
            }
        }
        return (symlinks, wants)
    }
}

@Suite("udev rules", .timeLimit(.minutes(5)))
struct UdevRulesTests {
    static func load() throws -> UdevRules {
        try UdevRules(
            String(
                contentsOf: Paths.packageRoot.appendingPathComponent("udev/61-gpslocation-gnss.rules"), encoding: .utf8)
        )
    }

    @Test("parses, and every GOTO has its LABEL")
    func parses() throws {
        let rules = try Self.load()
        #expect(rules.rules.count >= 10)
        for rule in rules.rules {
            for pair in rule.pairs where pair.key == "GOTO" {
                #expect(rules.labels.contains(pair.value), "line \(rule.line): GOTO \(pair.value) without LABEL")
            }
        }
    }

    @Test("is additive: SYMLINK+= and SYSTEMD_WANTS+= only, no gps%n, no remove rule")
    func additive() throws {
        let rules = try Self.load()
        for rule in rules.rules {
            for pair in rule.pairs {
                if pair.key == "SYMLINK" && pair.op != "==" { #expect(pair.op == "+=", "line \(rule.line)") }
                if pair.key == "ENV" && pair.attribute == "SYSTEMD_WANTS" {
                    #expect(pair.op == "+=", "line \(rule.line)")
                }
                if pair.key == "SYMLINK" {
                    #expect(!pair.value.hasPrefix("gps%"), "line \(rule.line) takes gpsd's name")
                }
                if pair.key == "ACTION" { #expect(!(pair.op == "==" && pair.value == "remove"), "line \(rule.line)") }
                #expect(
                    !["GROUP", "MODE", "OWNER", "RUN", "NAME"].contains(pair.key), "line \(rule.line): \(pair.key)")
            }
        }
        // Bare USB-serial bridges appear only narrowed by a product string.
        let bridges: Set<String> = ["0403:6001", "067b:2303", "10c4:ea60", "1a86:7523"]
        for rule in rules.rules {
            let vendor = rule.pairs.first { $0.attribute == "idVendor" }?.value ?? ""
            let product = rule.pairs.first { $0.attribute == "idProduct" }?.value ?? ""
            if bridges.contains("\(vendor):\(product)") {
                #expect(
                    rule.pairs.contains { $0.attribute == "product" && $0.op == "==" },
                    "line \(rule.line): a bare bridge")
            }
        }
    }

    @Test("matches real receivers and not bare bridges")
    func matching() throws {
        let rules = try Self.load()
        func tty(_ vendor: String, _ product: String, _ name: String = "", action: String = "add") -> [String: String] {
            [
                "ACTION": action, "SUBSYSTEM": "tty", "ATTRS{idVendor}": vendor, "ATTRS{idProduct}": product,
                "ATTRS{product}": name,
            ]
        }
        for id in ["01a5", "01a6", "01a7", "01a8", "01a9"] {
            #expect(rules.evaluate(tty("1546", id, "u-blox GNSS receiver")).symlinks == ["gpslocation-gnss%n"])
        }
        #expect(rules.evaluate(tty("091e", "0003")).symlinks == ["gpslocation-gnss%n"])
        #expect(rules.evaluate(tty("0403", "6001", "FT232R USB UART")).symlinks.isEmpty)
        #expect(rules.evaluate(tty("067b", "2303", "USB-Serial Controller")).symlinks.isEmpty)
        #expect(rules.evaluate(tty("10c4", "ea60", "CP2102 USB to UART Bridge Controller")).symlinks.isEmpty)
        #expect(rules.evaluate(tty("067b", "2303", "USB GPS Receiver")).symlinks == ["gpslocation-gnss%n"])
        let quectel = rules.evaluate(tty("10c4", "ea60", "Quectel GNSS EVB"))
        #expect(quectel.symlinks == ["gpslocation-gnss%n"] && quectel.wants == ["gpsdctl@%k.service"])
        #expect(rules.evaluate(tty("1546", "01a8", action: "remove")).symlinks.isEmpty)
        #expect(rules.evaluate(["ACTION": "add", "SUBSYSTEM": "gnss"]).symlinks == ["gpslocation-gnss%n"])
        #expect(
            rules.evaluate([
                "ACTION": "add", "SUBSYSTEM": "block", "ATTRS{idVendor}": "1546", "ATTRS{idProduct}": "01a8",
            ]).symlinks.isEmpty)
    }

    @Test("the parser rejects what udev would")
    func rejects() {
        #expect(throws: UdevRules.ParseError.self) { try UdevRules(#"ATTRS{idVendor}=="1546" SYMLINK+="x""#) }
        #expect(throws: UdevRules.ParseError.self) { try UdevRules(#"BOGUS=="1""#) }
        #expect(throws: UdevRules.ParseError.self) { try UdevRules(#"SUBSYSTEM=="tty", SYMLINK+=unquoted"#) }
    }
}
