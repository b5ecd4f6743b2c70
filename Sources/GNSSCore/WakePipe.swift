import Dispatch
import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// A pipe one thread sleeps on and others write to, to wake it early: the gpsd reader's wait
/// between reconnection attempts, gpslocd's loops, the broker link.
public final class WakePipe: Sendable {
    private let reader: Int32
    private let writer: Int32

    /// `owner` names the thread in the message if the pipe cannot be made.
    public init(owner: String) {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) != 0 {
            fatalError("GPSLocation: cannot make the \(owner)'s wake-up pipe (\(String(cString: strerror(errno))))")
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        reader = ends[0]
        writer = ends[1]
    }

    deinit {
        close(reader)
        close(writer)
    }

    /// Wakes the thread in `wait` (or makes its next `wait` return at once).
    public func signal() {
        var byte: UInt8 = 1
        _ = write(writer, &byte, 1)
    }

    /// Sleeps until `signal()` or `deadline` (`DispatchTime` uptime nanoseconds; nil: none),
    /// then takes the signals that came.
    public func wait(until deadline: UInt64?) {
        var timeout: Int32 = -1
        if let deadline {
            let now = DispatchTime.now().uptimeNanoseconds
            guard deadline > now else { return }
            timeout = Int32(min(Double(Int32.max), (Double(deadline - now) / 1e6).rounded(.up)))
        }
        var descriptor = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, timeout) > 0 else { return }
        var buffer = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        _ = withUnsafeMutableBytes(of: &buffer) { Glibc.read(reader, $0.baseAddress, $0.count) }
    }

    /// The end to poll on (a loop that waits on many descriptors); `drain()` after it fires.
    public var readDescriptor: Int32 { reader }

    /// Takes the signals that came.
    public func drain() {
        var buffer = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        _ = withUnsafeMutableBytes(of: &buffer) { Glibc.read(reader, $0.baseAddress, $0.count) }
    }
}
