import Dispatch
import Glibc

/// Dispatch signal sources that are live when `install` returns (for gpsloc and gpslocd).
///
/// On Linux, libdispatch registers a signal source on its manager thread after `resume()`: it
/// installs its own `sigaction` handler a moment later. The usual recipe — `signal(n, SIG_IGN)`,
/// then the source — leaves a window in which the signal is *ignored*: a SIGINT or SIGTERM that
/// arrives then is lost, and the program runs on (seen: `gpsloc replay --speed 1` interrupted
/// just after its first line ran to its end, one run in a few dozen). Here the default action stays
/// until libdispatch's handler is in place (a signal in that moment ends the program, as it
/// would have anyway), and `install` waits for the handler before it returns.
public enum SignalSources {
    /// Sources for `signals`, each calling `handler(signal)` on `queue`, registered before
    /// this returns. Keep them: a released source is cancelled. (Once per process: libdispatch
    /// leaves its handler installed when a source is cancelled, so a second `install` of the
    /// same signal could not see its own registration.)
    public static func install(
        _ signals: [Int32], queue: DispatchQueue = .global(), handler: @escaping @Sendable (Int32) -> Void
    ) -> [DispatchSource] {
        let sources = signals.map { number in
            let source = DispatchSource.sendable(DispatchSource.makeSignalSource(signal: number, queue: queue))
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
        // Registration takes microseconds; the bound only keeps a broken libdispatch from
        // hanging start-up (the sources then still work once registered).
        // (A `for … where` loop here once ran all its turns, a sigaction call each, after the
        // handler was in place: 40,000 system calls, ~7 ms, at every start.)
        for number in signals {
            var waits = 0
            while !hasHandler(number) && waits < 20_000 {
                usleep(100)
                waits += 1
            }
        }
        return sources
    }

    /// True when `number` has a handler installed (neither the default action nor ignored).
    static func hasHandler(_ number: Int32) -> Bool {
        var current = sigaction()
        sigaction(number, nil, &current)
        let handler = unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
        return handler != unsafeBitCast(SIG_DFL, to: Int.self) && handler != unsafeBitCast(SIG_IGN, to: Int.self)
    }
}

extension DispatchSource {
    /// A source as the class it is: `DispatchSource` is Sendable, the protocol existentials
    /// `make…Source` return are not, so a source kept in a lock's value would make that value
    /// non-Sendable. On Linux every source libdispatch makes is a `DispatchSource`
    /// (swift-corelibs-libdispatch's `make…Source` functions build one); a source that is not
    /// one stops the program here rather than being silently lost.
    package static func sendable(_ source: any DispatchSourceProtocol) -> DispatchSource {
        guard let source = source as? DispatchSource else {
            preconditionFailure("libdispatch made a source that is not a DispatchSource: \(type(of: source))")
        }
        return source
    }
}
