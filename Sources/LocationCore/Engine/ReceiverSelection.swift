import FoundationEssentials
import GNSSCore

/// Which receiver a manager follows when gpsd reports several.
///
/// Interleaving two receivers would make the location jump between their (different) errors
/// every epoch, so the pipeline delivers one receiver's fixes at a time.
public enum ReceiverSelection: Sendable, Hashable {
    /// The receiver with the best fix (the default; see `ReceiverSelectionStage` for the rule).
    case bestFix
    /// Only this device path (e.g. `/dev/ttyACM0`); fixes from others are ignored. To have gpsd
    /// itself send only one device, use `GPSDEndpoint.device` instead (or as well).
    case path(String)
}

/// Chooses the receiver whose fixes are delivered.
///
/// The rule for `.bestFix`: the first receiver with a usable fix is followed. Another one takes
/// over when the followed one
/// - is deactivated by gpsd (unplugged, or removed with `gpsdctl remove`), or
/// - has had no usable fix for `lossTimeout` seconds (by the source's clock), or
/// - reports a lower fix mode than the other (2D against 3D), or
/// - is at least twice less accurate (68 % horizontal) than the other at the same mode for
///   `betterStreak` consecutive fixes of the other (hysteresis: no flapping between two similar
///   receivers).
///
/// Fixes that name no device (an NMEA replay, one receiver) always pass.
struct ReceiverSelectionStage: Sendable {
    var selection: ReceiverSelection
    /// Seconds without a usable fix after which the followed receiver is given up.
    var lossTimeout: TimeInterval
    var betterStreak: Int
    /// The device followed now, if any.
    private(set) var selected: String?

    private struct Record {
        var usable = false
        var mode = FixMode.notSeen
        var horizontal = Double.infinity
        var lastUsable: Date?
        var streak = 0
    }
    /// One entry per device that reported, in order of first report: a receiver or two in
    /// practice, so a search of a short array (no hashing of the path for every fix). At most
    /// `maximumDevices`: a gpsd naming ever new devices drops the oldest one not followed.
    private var records: [Entry] = []
    /// (A struct, not a tuple: a tuple's copies can go through the runtime's generic witnesses.)
    private struct Entry {
        var device: String
        var record: Record
    }
    static let maximumDevices = 32

    private func index(of device: String) -> Int? { records.firstIndex { $0.device == device } }
    /// How many devices it keeps a record of.
    var deviceCount: Int { records.count }
    /// `.path`: another device reported while the pinned one never has (told once).
    private var missingPin: (pinned: String, reporting: String)?
    private var pinSeen = false
    private var missingPinTold = false

    init(selection: ReceiverSelection = .bestFix, lossTimeout: TimeInterval = 3, betterStreak: Int = 5) {
        self.selection = selection
        self.lossTimeout = lossTimeout
        self.betterStreak = betterStreak
    }

    /// Whether a fix from `device` goes on. `horizontalAccuracy` is nil for an unusable fix
    /// (no fix, or rejected as invalid) and `.infinity` when the receiver gave no estimate.
    mutating func admits(device: String?, mode: FixMode, horizontalAccuracy: Double?, clock: Date) -> Bool {
        guard let device else { return true }
        let index: Int
        if let found = self.index(of: device) {
            index = found
        } else {
            if records.count >= Self.maximumDevices, let oldest = records.firstIndex(where: { $0.device != selected }) {
                records.remove(at: oldest)
            }
            records.append(Entry(device: device, record: Record()))
            index = records.count - 1
        }
        records[index].record.usable = horizontalAccuracy != nil
        records[index].record.mode = mode
        records[index].record.horizontal = horizontalAccuracy ?? .infinity
        if horizontalAccuracy != nil { records[index].record.lastUsable = clock }
        let record = records[index].record

        if case .path(let path) = selection {
            if device == path {
                selected = path
                pinSeen = true
            } else if !pinSeen && !missingPinTold {
                missingPinTold = true
                missingPin = (path, device)
            }
            return device == path
        }
        // An unusable fix goes on (to be diagnosed, and to count for staleness) from the followed
        // receiver, or from any while none is followed yet.
        guard record.usable else { return selected == nil || device == selected }
        guard let current = selected, current != device, let followedIndex = self.index(of: current) else {
            selected = device
            return true
        }
        let followed = records[followedIndex].record
        // Silent, or reporting no fix, for too long.
        let lost = clock.timeIntervalSince(followed.lastUsable ?? .distantPast) >= lossTimeout
        let higherMode = followed.usable && record.mode > followed.mode
        if record.mode == followed.mode && record.horizontal <= followed.horizontal / 2 {
            records[index].record.streak += 1
        } else {
            records[index].record.streak = 0
        }
        if lost || higherMode || records[index].record.streak >= betterStreak {
            selected = device
            for other in records.indices { records[other].record.streak = 0 }
            return true
        }
        return false
    }

    /// gpsd activated or deactivated a device. Returns true when the followed receiver went away.
    @discardableResult
    mutating func deviceChanged(_ event: DeviceEvent) -> Bool {
        guard !event.activated else { return false }
        records.removeAll { $0.device == event.path }
        guard event.path == selected else { return false }
        if case .bestFix = selection { selected = nil }
        return true
    }

    /// Once, when pinned to a path gpsd has not reported while another device has: the pinned
    /// path and the device that is reporting, so the app hears why nothing comes.
    mutating func takeMissingPin() -> (pinned: String, reporting: String)? {
        defer { missingPin = nil }
        return missingPin
    }

    mutating func reset() {
        records.removeAll()
        selected = nil
        missingPin = nil
        pinSeen = false
        missingPinTold = false
    }
}
