/// The device paths fixes and locations name, each kept once for the life of the process and
/// numbered from 1: a `Fix` (and a location's `GNSSDetails`) holds the number, so it stays plain
/// data. Bounded: past 4,096 distinct paths (a receiver on a new path at every replug takes years
/// to get there), further paths share one number, read back as `DeviceNameTable.overflowName`.
public enum DeviceNames {
    static let shared = DeviceNameTable(capacity: 4_096)

    /// `path`'s number (0 for nil), given at its first use.
    public static func number(_ path: String?) -> UInt32 { shared.number(path) }

    /// The path of `number` (nil for 0).
    public static func name(_ number: UInt32) -> String? { shared.name(number) }
}

/// A table of paths numbered from 1, at most `capacity` of them (`DeviceNames`'s).
final class DeviceNameTable: Sendable {
    let capacity: Int
    /// What every path past `capacity` reads back as.
    static let overflowName = "(a device beyond the paths GPSLocation numbers)"
    /// Slot `n - 1` holds path number `n`. Each is written once, under `numbers`' lock, before
    /// its number is handed out; a number reaches another thread only with a fix passed through a
    /// lock or a queue, so reading a slot needs no lock of its own. Never freed (the shared table
    /// lives as long as the process).
    private nonisolated(unsafe) let paths: UnsafeMutablePointer<String>
    private let numbers = Locked<[String: UInt32]>([:])

    init(capacity: Int) {
        self.capacity = capacity
        paths = .allocate(capacity: capacity)
    }

    func number(_ path: String?) -> UInt32 {
        guard let path else { return 0 }
        return numbers.withLock { numbers in
            if let number = numbers[path] { return number }
            guard numbers.count < capacity else { return UInt32(capacity + 1) }
            let number = UInt32(numbers.count + 1)
            (paths + numbers.count).initialize(to: path)
            numbers[path] = number
            return number
        }
    }

    func name(_ number: UInt32) -> String? {
        if number == 0 { return nil }
        if number > UInt32(capacity) { return Self.overflowName }
        return paths[Int(number) - 1]
    }
}
