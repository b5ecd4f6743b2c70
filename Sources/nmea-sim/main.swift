// nmea-sim — writes realistic NMEA 0183 along a simulated drive, for fixtures and benchmarks.
//
// The output is deterministic for a given set of options (seeded random numbers).
// See fixtures/README.md for the scenario and `nmea-sim --help` for the options.
import Foundation
import GNSSCore

let usage = """
    usage: nmea-sim [--rate HZ] [--duration SECONDS] [--talkers gp|multi]
                    [--scenario drive|clean|loop|stops|boundary] [--start ISO8601] [--seed N] [--output FILE]

      --rate HZ          receiver cycles per second: 1, 5 or 10 (default 1)
      --duration S       seconds of recording (default 300)
      --talkers T        gp: GPS-only $GP sentences; multi: $GN with GP/GL/GA/GB satellites (default gp)
      --scenario S       drive: no-fix start, 2D stretch, tunnel dropout and corrupted lines;
                         clean: a 3D fix throughout, no faults (default drive);
                         loop: laps of a 400 m-radius circle round the start at 12 m/s (geofences);
                         stops: a drive with stops — 300 s from 60 s, a stop at 500 s whose fix is
                         lost from 520 s to 720 s, 200 s from 900 s (visits);
                         boundary: standing still at the start for the whole recording (a receiver
                         sitting on a geofence boundary)
      --start T          UTC start time (default 2026-06-15T08:00:00Z)
      --seed N           random seed (default 1)
      --output FILE      write here instead of standard output
      --order O          rmc-first: RMC, GGA, GSA, GST, VTG, GSV, ZDA (default);
                         gga-first: SiRF's order, GGA, GSA, GSV, RMC, with no GST, VTG or ZDA, and
                         the RMC of the 11th cycle lost (as on a serial line): gpsd then takes GGA
                         for a cycle end too and reports each epoch twice, at its GGA and its RMC
    """

struct Options {
    var rate = 1
    var duration = 300.0
    var multiGNSS = false
    var faults = true
    var scenario = "drive"
    var start = Date(timeIntervalSince1970: 1_781_510_400)  // 2026-06-15T08:00:00Z
    var seed: UInt64 = 1
    var output: String?
    var ggaFirst = false
}

func parseOptions(_ arguments: [String]) -> Options {
    var options = Options()
    var iterator = arguments.makeIterator()
    func value(_ name: String) -> String {
        guard let value = iterator.next() else { fail("\(name) needs a value") }
        return value
    }
    while let argument = iterator.next() {
        switch argument {
        case "--rate":
            guard let rate = Int(value(argument)), [1, 2, 5, 10].contains(rate) else {
                fail("--rate must be 1, 2, 5 or 10")
            }
            options.rate = rate
        case "--duration":
            guard let seconds = Double(value(argument)), seconds > 0 else {
                fail("--duration must be a positive number")
            }
            options.duration = seconds
        case "--talkers":
            switch value(argument) {
            case "gp": options.multiGNSS = false
            case "multi": options.multiGNSS = true
            default: fail("--talkers must be gp or multi")
            }
        case "--scenario":
            let scenario = value(argument)
            guard ["drive", "clean", "loop", "stops", "boundary"].contains(scenario) else {
                fail("--scenario must be drive, clean, loop, stops or boundary")
            }
            options.scenario = scenario
            options.faults = scenario == "drive"
        case "--start":
            let text = value(argument)
            guard let date = ISO8601DateFormatter().date(from: text) else {
                fail("--start must be ISO 8601, e.g. 2026-06-15T08:00:00Z")
            }
            options.start = date
        case "--seed":
            guard let seed = UInt64(value(argument)) else { fail("--seed must be a whole number") }
            options.seed = seed
        case "--output":
            options.output = value(argument)
        case "--order":
            switch value(argument) {
            case "rmc-first": options.ggaFirst = false
            case "gga-first": options.ggaFirst = true
            default: fail("--order must be rmc-first or gga-first")
            }
        case "-h", "--help":
            print(usage)
            exit(0)
        default:
            fail("unknown option \(argument)")
        }
    }
    return options
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("nmea-sim: \(message)\n\(usage)\n".utf8))
    exit(2)
}

/// Seeded random numbers for the simulation (the library's SplitMix64).
struct SeededRandom {
    var generator: SplitMix64
    init(state: UInt64) { generator = SplitMix64(seed: state) }
    mutating func next() -> UInt64 { generator.next() }
    /// Uniform in [0, 1).
    mutating func unit() -> Double { generator.unit() }
    /// Roughly normal (sum of uniforms), mean 0, standard deviation `sigma`.
    mutating func gaussian(_ sigma: Double) -> Double {
        var sum = 0.0
        for _ in 0..<6 { sum += unit() }
        return (sum - 3) * sigma * sqrt(2)
    }
}

/// What the receiver knows in one cycle.
enum Phase { case noFix, twoD, threeD }

struct Satellite {
    let talker: String
    let systemID: Int
    let prn: Int
    let elevation: Int
    let azimuth: Int
    let snr: Int
}

final class Simulator {
    let options: Options
    var random: SeededRandom
    var output = ""
    /// Where finished text goes, about a megabyte at a time (so a 24-hour recording streams).
    let sink: FileHandle
    var latitude = 51.453_880  // Bristol, heading out east
    var longitude = -2.597_470
    var heading = 72.0
    var speed = 13.4  // m/s (~48 km/h)
    var altitude = 41.5
    let geoidSeparation = 48.2

    init(options: Options, sink: FileHandle) {
        self.options = options
        self.sink = sink
        random = SeededRandom(state: options.seed)
    }

    func flush(force: Bool = false) {
        guard force || output.utf8.count >= 1 << 20 else { return }
        sink.write(Data(output.utf8))
        output = ""
    }

    func phase(at t: Double) -> Phase {
        // stops: the fix is lost while standing at the second stop.
        if options.scenario == "stops" && t >= 520 && t < 720 { return .noFix }
        guard options.faults else { return .threeD }
        let d = options.duration
        if t < min(8, d * 0.05) { return .noFix }
        if t < min(20, d * 0.1) { return .twoD }
        // A tunnel: 15 s without a fix at 60 % of the drive.
        if t >= d * 0.6 && t < d * 0.6 + 15 { return .noFix }
        return .threeD
    }

    lazy var satellites: [Satellite] = {
        var list: [Satellite] = []
        let systems: [(String, Int, ClosedRange<Int>)] =
            options.multiGNSS
            ? [("GP", 1, 1...32), ("GL", 2, 65...96), ("GA", 3, 1...36), ("GB", 4, 1...37)]
            : [("GP", 1, 1...32)]
        for (talker, systemID, prns) in systems {
            let count = talker == "GP" ? 10 : 7
            var used = Set<Int>()
            while used.count < count { used.insert(prns.lowerBound + Int(random.next() % UInt64(prns.count))) }
            for prn in used.sorted() {
                list.append(
                    Satellite(
                        talker: talker, systemID: systemID, prn: prn, elevation: 5 + Int(random.next() % 80),
                        azimuth: Int(random.next() % 360), snr: 22 + Int(random.next() % 25)))
            }
        }
        return list
    }()

    func emit(_ body: String) {
        var checksum: UInt8 = 0
        for byte in body.utf8 { checksum ^= byte }
        output += "$" + body + "*" + String(format: "%02X", checksum) + "\r\n"
    }

    func run() {
        let kind = options.faults ? "drive (no-fix start, 2D, tunnel, corrupted lines)" : "clean 3D"
        output +=
            "# GPSLocation nmea-sim: \(options.rate) Hz, \(Int(options.duration)) s, "
            + "\(options.multiGNSS ? "multi-GNSS" : "GPS-only"), \(kind), seed \(options.seed)"
            + (options.ggaFirst ? ", GGA first\n" : "\n")
        let cycles = Int(options.duration * Double(options.rate))
        let step = 1.0 / Double(options.rate)
        for cycle in 0..<cycles {
            let t = Double(cycle) * step
            advance(by: step, at: t)
            let mark = output.endIndex
            writeCycle(time: options.start.addingTimeInterval(t), phase: phase(at: t), cycle: cycle)
            if options.ggaFirst { reorderGGAFirst(from: mark, cycle: cycle) }
            if options.faults { corrupt(cycle: cycle, cycles: cycles) }
            flush()
        }
        flush(force: true)
    }

    /// The cycle written from `mark` on, in SiRF's order: GGA, GSA, GSV…, RMC (no GST, VTG, ZDA);
    /// the 11th cycle's RMC is lost.
    func reorderGGAFirst(from mark: String.Index, cycle: Int) {
        let lines = String(output[mark...]).components(separatedBy: "\r\n").filter { !$0.isEmpty }.map { $0 + "\r\n" }
        func of(_ type: String) -> [String] { lines.filter { $0.dropFirst(3).hasPrefix(type) } }
        var cycleText = of("GGA") + of("GSA") + of("GSV")
        if cycle != 10 { cycleText += of("RMC") }
        output.removeSubrange(mark...)
        output += cycleText.joined()
    }

    /// Where the loop scenario's circle is centred (the start point).
    lazy var loopCentre = (latitude: latitude, longitude: longitude)

    /// Whether the stops scenario stands still at `t`.
    func standing(at t: Double) -> Bool {
        (t >= 60 && t < 360) || (t >= 500 && t < 740) || (t >= 900 && t < 1100)
    }

    func advance(by seconds: Double, at t: Double) {
        switch options.scenario {
        case "boundary":
            speed = 0
            return
        case "loop":
            // Counter-clockwise laps of a 400 m circle, starting due south of its centre... of
            // the start point, which is the centre.
            let radius = 400.0
            speed = 12
            let angle = (t + seconds) * speed / radius
            let centre = loopCentre
            latitude = centre.latitude - radius * cos(angle) / 111_132
            longitude = centre.longitude + radius * sin(angle) / (111_320 * cos(centre.latitude * .pi / 180))
            heading = (90 + angle * 180 / .pi).truncatingRemainder(dividingBy: 360)
            return
        case "stops" where standing(at: t):
            speed = 0
            return
        default:
            break
        }
        heading = (heading + sin(t / 40) * 0.8 * seconds + 360).truncatingRemainder(dividingBy: 360)
        speed = max(0, 13.4 + 4 * sin(t / 55))
        let metersPerDegreeLatitude = 111_132.0
        let metersPerDegreeLongitude = 111_320.0 * cos(latitude * .pi / 180)
        latitude += speed * seconds * cos(heading * .pi / 180) / metersPerDegreeLatitude
        longitude += speed * seconds * sin(heading * .pi / 180) / metersPerDegreeLongitude
        altitude += sin(t / 30) * 0.05
    }

    func writeCycle(time: Date, phase: Phase, cycle: Int) {
        let hasFix = phase != .noFix
        let noise = (north: random.gaussian(1.2), east: random.gaussian(1.2), up: random.gaussian(2.0))
        let lat = latitude + noise.north / 111_132
        let lon = longitude + noise.east / (111_320 * cos(latitude * .pi / 180))
        let alt = altitude + noise.up
        let talker = options.multiGNSS ? "GN" : "GP"
        let components = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: time)
        let centiseconds = Int((time.timeIntervalSince1970 * 100).rounded()) % 100
        let hms = String(
            format: "%02d%02d%02d.%02d", components.hour!, components.minute!, components.second!, centiseconds)
        let dmy = String(format: "%02d%02d%02d", components.day!, components.month!, components.year! % 100)
        let used = hasFix ? satellites.filter { $0.elevation > 12 } : []
        let hdop = hasFix ? 0.8 + Double(cycle % 7) * 0.05 : 99.99
        let vdop = hasFix ? 1.2 + Double(cycle % 5) * 0.05 : 99.99
        let pdop = hasFix ? (hdop * hdop + vdop * vdop).squareRoot() : 99.99
        let knots = speed * 3600 / 1852
        let position =
            Self.coordinate(lat, degreesWidth: 2, positive: "N", negative: "S") + ","
            + Self.coordinate(lon, degreesWidth: 3, positive: "E", negative: "W")

        // RMC
        let rmcMode = hasFix ? "A" : "N"
        if hasFix {
            emit(
                "\(talker)RMC,\(hms),A,\(position),\(String(format: "%.3f", knots)),\(String(format: "%.2f", heading)),\(dmy),,,\(rmcMode)"
            )
        } else {
            emit("\(talker)RMC,\(hms),V,,,,,,,\(dmy),,,\(rmcMode)")
        }
        // GGA: altitude empty in 2D.
        switch phase {
        case .noFix:
            emit("\(talker)GGA,\(hms),,,,,0,00,99.99,,,,,,")
        case .twoD:
            emit(
                "\(talker)GGA,\(hms),\(position),1,\(String(format: "%02d", used.count)),\(String(format: "%.2f", hdop)),,,,,,"
            )
        case .threeD:
            emit(
                "\(talker)GGA,\(hms),\(position),1,\(String(format: "%02d", min(used.count, 12))),\(String(format: "%.2f", hdop)),"
                    + "\(String(format: "%.1f", alt)),M,\(String(format: "%.1f", geoidSeparation)),M,,")
        }
        // GSA: GPS-only every cycle; multi-GNSS one per constellation (NMEA 4.10 system ID), once a second.
        let gsaMode = phase == .noFix ? 1 : (phase == .twoD ? 2 : 3)
        let systems = Dictionary(grouping: used, by: \.systemID).sorted { $0.key < $1.key }
        if !options.multiGNSS || cycle % options.rate == 0 {
            if options.multiGNSS {
                for systemID in 1...4 {
                    let prns = (systems.first { $0.key == systemID }?.value ?? []).prefix(12).map {
                        String(format: "%02d", $0.prn)
                    }
                    let fields = (prns + Array(repeating: "", count: 12 - prns.count)).joined(separator: ",")
                    emit(
                        "GNGSA,A,\(gsaMode),\(fields),\(String(format: "%.2f,%.2f,%.2f", pdop, hdop, vdop)),\(systemID)"
                    )
                }
            } else {
                let prns = used.prefix(12).map { String(format: "%02d", $0.prn) }
                let fields = (prns + Array(repeating: "", count: 12 - prns.count)).joined(separator: ",")
                emit("GPGSA,A,\(gsaMode),\(fields),\(String(format: "%.2f,%.2f,%.2f", pdop, hdop, vdop))")
            }
        }
        // GST: pseudorange error statistics, metres (1 sigma).
        if hasFix {
            emit(
                "\(talker)GST,\(hms),\(String(format: "%.1f", hdop * 2.1)),\(String(format: "%.1f,%.1f,%.1f", hdop * 1.9, hdop * 1.3, 35.0)),"
                    + "\(String(format: "%.1f,%.1f,%.1f", hdop * 1.5, hdop * 1.4, vdop * 2.2))")
        }
        // VTG
        if hasFix {
            emit(
                "\(talker)VTG,\(String(format: "%.2f", heading)),T,,M,\(String(format: "%.3f", knots)),N,\(String(format: "%.3f", speed * 3.6)),K,A"
            )
        } else {
            emit("\(talker)VTG,,T,,M,,N,,K,N")
        }
        // GSV once a second, per constellation.
        if cycle % options.rate == 0 {
            for talkerID in ["GP", "GL", "GA", "GB"] {
                let inView = satellites.filter { $0.talker == talkerID }
                guard !inView.isEmpty else { continue }
                let messages = (inView.count + 3) / 4
                for message in 0..<messages {
                    let group = inView[(message * 4)..<min(inView.count, message * 4 + 4)]
                    let fields = group.map { sat in
                        String(format: "%02d,%02d,%03d,", sat.prn, sat.elevation, sat.azimuth)
                            + (hasFix ? String(format: "%02d", sat.snr) : "")
                    }
                    emit(
                        "\(talkerID)GSV,\(messages),\(message + 1),\(String(format: "%02d", inView.count)),\(fields.joined(separator: ","))"
                    )
                }
            }
        }
        // ZDA closes the cycle.
        emit(
            "\(talker)ZDA,\(hms),\(String(format: "%02d,%02d,%04d", components.day!, components.month!, components.year!)),00,00"
        )
    }

    /// A few realistic faults: a bad checksum, a truncated line, and line noise with NUL bytes.
    func corrupt(cycle: Int, cycles: Int) {
        if cycle == cycles / 3 {
            output += "$GPGGA,000000.00,5127.0000,N,00235.0000,W,1,08,0.9,40.0,M,48.2,M,,*00\r\n"  // bad checksum
        }
        if cycle == cycles / 2 {
            output += "$GPRMC,123519,A,4807.038,N,01131.0\r\n"  // truncated, no checksum
        }
        if cycle == (cycles * 3) / 4 {
            output += "\u{1}\u{0}\u{7F}garbage\u{0}\u{0}$$**\r\n"  // line noise
        }
    }

    /// `ddmm.mmmmmmm,H` (latitude) or `dddmm.mmmmmmm,H` (longitude).
    static func coordinate(_ value: Double, degreesWidth: Int, positive: String, negative: String) -> String {
        let magnitude = abs(value)
        let degrees = Int(magnitude)
        let minutes = (magnitude - Double(degrees)) * 60
        let format = degreesWidth == 2 ? "%02d%010.7f" : "%03d%010.7f"
        return String(format: format, degrees, minutes) + "," + (value < 0 ? negative : positive)
    }
}

let options = parseOptions(Array(CommandLine.arguments.dropFirst()))
let sink: FileHandle
if let path = options.output {
    guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path)
    else {
        fail("cannot write \(path): check the folder exists and is writable")
    }
    sink = handle
} else {
    sink = FileHandle.standardOutput
}
Simulator(options: options, sink: sink).run()
