import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// A usage mistake: gpsloc prints it with the command's help and exits 2.
public struct UsageError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// gpsloc's small argument parser: `--name value`, `--name=value`, boolean `--flag`s, and
/// positionals; `--` ends the options. Unknown options are usage errors.
public struct Arguments: Equatable {
    public private(set) var values: [String: String] = [:]
    public private(set) var flags: Set<String> = []
    public private(set) var positionals: [String] = []
    /// Every value given for each valued option, in order (for repeatable options).
    public private(set) var repeated: [String: [String]] = [:]

    /// - Parameters:
    ///   - valued: options that take a value (without the leading dashes).
    ///   - flags: options that take none.
    /// gpsd's clients' short options (gpspipe's -n and -o, cgps's -u) and a few of gpsloc's own,
    /// each standing for its long form where the command takes that one.
    public static let shortForms: [String: String] = [
        "-n": "count", "-o": "output", "-u": "units", "-j": "json", "-a": "app", "-t": "timeout",
    ]

    public init(_ arguments: [String], valued: Set<String>, flags known: Set<String>) throws(UsageError) {
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            var argument = arguments[index]
            index += 1
            if !optionsEnded, let long = Self.shortForms[argument], valued.contains(long) || known.contains(long) {
                argument = "--" + long
            }
            if optionsEnded || !argument.hasPrefix("--") || argument == "-" {
                if !optionsEnded && argument.hasPrefix("-") && argument != "-" && argument != "-h" {
                    throw UsageError("unknown option \(argument)")
                }
                if argument == "-h" {
                    flags.insert("help")
                    continue
                }
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if valued.contains(name) {
                if let inlineValue {
                    values[name] = inlineValue
                } else {
                    guard index < arguments.count else { throw UsageError("--\(name) needs a value") }
                    values[name] = arguments[index]
                    index += 1
                }
                repeated[name, default: []].append(values[name]!)
            } else if known.contains(name) || name == "help" {
                if inlineValue != nil { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }

    public func has(_ flag: String) -> Bool { flags.contains(flag) }
    public subscript(_ name: String) -> String? { values[name] }

    public func integer(_ name: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw UsageError(
                "--\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(text)")
        }
        return value
    }

    static func plain(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(significantDecimal(value))"
    }

    /// A number in [minimum, maximum]; a value outside (or not a number) is a usage error that
    /// names the range, never a crash further on.
    public func number(_ name: String, minimum: Double, maximum: Double = 1e9) throws(UsageError) -> Double? {
        guard let text = values[name] else { return nil }
        guard let value = Double(text), value.isFinite, value >= minimum, value <= maximum else {
            throw UsageError(
                "--\(name) must be a number from \(Self.plain(minimum)) to \(Self.plain(maximum)), not \(text)")
        }
        return value
    }
}

extension Arguments {
    /// The gpsd to talk to, as gpsd's own clients take it: a positional `HOST[:PORT[:DEVICE]]`
    /// (`gpsloc watch 127.0.0.1:2948`), else `GPSLOCATION_GPSD`, else 127.0.0.1:2947; then
    /// `--host`, `--port` and `--device` replace their part. `command` names the command in the
    /// errors.
    func gpsdEndpoint(
        _ command: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(UsageError) -> GPSDEndpoint {
        var endpoint = GPSDEndpoint()
        if let text = environment["GPSLOCATION_GPSD"], !text.isEmpty {
            guard let parsed = GPSDEndpoint.parse(text) else {
                throw UsageError(
                    "GPSLOCATION_GPSD=\(text) is not HOST[:PORT[:DEVICE]] (e.g. 127.0.0.1:2947 or "
                        + "gps.local:2947:/dev/ttyACM0) — fix it or unset it")
            }
            endpoint = parsed
        }
        if positionals.count > 1 {
            throw UsageError(
                "\(command) takes one gpsd, HOST[:PORT[:DEVICE]]; got \(positionals.joined(separator: " "))")
        }
        if let text = positionals.first {
            guard let parsed = GPSDEndpoint.parse(text) else {
                let hint =
                    FileManager.default.fileExists(atPath: text) && command != "replay"
                    ? " — to play a recording, `gpsloc replay \(text)`" : ""
                throw UsageError("\(command): \(text) is not a gpsd, HOST[:PORT[:DEVICE]]\(hint)")
            }
            endpoint = parsed
        }
        if let host = values["host"] { endpoint.host = host }
        if let port = try integer("port", in: 1...65535) { endpoint.port = port }
        if let device = values["device"] { endpoint.device = device }
        return endpoint
    }
}
