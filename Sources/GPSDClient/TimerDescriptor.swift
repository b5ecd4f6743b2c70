internal import CTimerFD

#if canImport(Glibc)
    import Glibc
#endif

/// A monotonic timer one thread sleeps on (timerfd(2)): armed for an absolute deadline, re-armed
/// by any thread, it wakes the sleeper only when a deadline it is armed for comes. Moving the
/// deadline later wakes nothing — where a `poll` timeout, fixed when the sleep began, would end
/// at the old one. For the engines' timer thread. (It lives here, in the layer of system calls
/// LocationCore builds on, because GNSSCore stays free of C: NMEA0183 builds on it alone.)
public final class TimerDescriptor: Sendable {
    private let descriptor: Int32

    /// `owner` names the thread in the message if the descriptor cannot be made.
    public init(owner: String) {
        let made = ctimerfd_create()
        if made < 0 {
            fatalError("GPSLocation: cannot make the \(owner)'s timer descriptor (\(String(cString: strerror(-made))))")
        }
        descriptor = made
    }

    deinit { close(descriptor) }

    /// The monotonic clock deadlines count in, in nanoseconds (`CLOCK_MONOTONIC`).
    public static func now() -> UInt64 { ctimerfd_now() }

    /// Arms the timer for `deadline` (`now()`'s clock; one already past fires at once), or
    /// disarms it (`.max`). A pending expiry not yet waited for is replaced.
    public func arm(for deadline: UInt64) {
        let result = ctimerfd_arm(descriptor, deadline)
        // Only a bad descriptor or value can fail, and neither can happen here; if one did, the
        // sleeper would never wake again, so it is not let pass quietly.
        if result != 0 {
            fatalError("GPSLocation: cannot arm a timer descriptor (\(String(cString: strerror(-result))))")
        }
    }

    /// Sleeps until the deadline the timer is armed for comes (at once if it has come since the
    /// last wait).
    public func wait() {
        var expirations: UInt64 = 0
        while withUnsafeMutableBytes(of: &expirations, { read(descriptor, $0.baseAddress, $0.count) }) < 0 {
            if errno != EINTR {
                fatalError("GPSLocation: cannot read a timer descriptor (\(String(cString: strerror(errno))))")
            }
        }
    }
}
