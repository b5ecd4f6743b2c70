import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

// Other faces over gpslocd's one gpsd connection and its decisions (the GeoClue face): part of
// `BrokerService`, in a file of its own.
extension BrokerService {
    /// `--geoclue`: also serves GeoClue 2's D-Bus API (docs/geoclue.md) until `stop()`. Nil
    /// when it serves, else why it cannot, saying what to do.
    package func serveGeoClue() -> String? {
        let face = GeoClueFace(service: self)
        do {
            try face.start()
        } catch {
            return error.description
        }
        geoClue.withLock { $0 = face }
        return nil
    }

    static let recentSeconds: TimeInterval = 3
    static let recentLimit = 64

    /// gpsd's fixes and estimates of the last `recentSeconds`, at most `recentLimit`, in time
    /// order (`current`). The ones dropped from the front stay in the buffer until as many as
    /// the limit have gone, then go at once: a report moves no other (an array's `removeFirst`
    /// moved every kept report, each a large value, at every report: 10 k instructions).
    struct RecentReports {
        private var events: [LocationSourceEvent] = []
        private var start = 0

        /// The kept reports, oldest first.
        var current: ArraySlice<LocationSourceEvent> { events[start...] }

        private static func time(of event: LocationSourceEvent) -> Date? {
            switch event {
            case .fix(let fix): fix.time
            case .errorEstimate(let estimate): estimate.time
            default: nil
            }
        }

        /// Keeps `event` when it is a fix or an estimate; a problem forgets them all.
        mutating func remember(_ event: LocationSourceEvent) {
            if case .problem = event {
                events.removeAll(keepingCapacity: true)
                start = 0
                return
            }
            guard let time = Self.time(of: event) else { return }
            func stale(_ old: LocationSourceEvent) -> Bool {
                Self.time(of: old).map { time.timeIntervalSince($0) > recentSeconds } ?? true
            }
            // In time order, so the ones too old are a prefix: in order (every cycle) only that
            // prefix is looked at; a time that went back drops what is now in the future too.
            if let last = events.last.flatMap(Self.time), start < events.count, last > time {
                events = current.filter { old in !stale(old) && Self.time(of: old).map { $0 <= time } ?? false }
                start = 0
            } else {
                while start < events.count, stale(events[start]) { start += 1 }
            }
            events.append(event)
            start = max(start, events.count - recentLimit)
            if start >= recentLimit {
                events.removeFirst(start)
                start = 0
            }
        }
    }

    /// Has the hub decode gpsd's SKY reports only while a watching program asked for the sky
    /// or another face's engine listens (its DOP fallback reads them): a multi-GNSS receiver's
    /// SKY is the costliest line gpsd sends, and most programs never ask. Called under the lock
    /// wherever that changes, so the switches happen in order.
    ///
    /// `client`: one whose watch may have changed (nil: none), counted in or out of
    /// `skyWatchers` first, so each call costs the same however many programs there are.
    func followSkyDemand(_ state: inout State, client: BrokerClient? = nil) {
        if let client {
            if client.watching && client.wantsSky && state.clients[client.id] === client {
                state.skyWatchers.insert(client.id)
            } else {
                state.skyWatchers.remove(client.id)
            }
        }
        let wanted = !state.subscribers.isEmpty || !state.skyWatchers.isEmpty
        guard wanted != state.decodesSky else { return }
        state.decodesSky = wanted
        hub.decodeSky(wanted)
    }

    /// Feeds `handler` every report of gpsd's one connection (starting it if no program has):
    /// another face's engine, which applies the rules itself. Returns the token to unsubscribe.
    func subscribe(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void) -> Int {
        // The recent reports go first, under the lock: gpsd's next report reaches the handler
        // only after them, in order.
        let (token, startHub) = state.withLock { state -> (Int, Bool) in
            let token = state.nextSubscriber
            state.nextSubscriber += 1
            state.subscribers[token] = handler
            followSkyDemand(&state)
            // gpsd's trouble now, at once (as a watching program is told), else its last epochs.
            if let problem = state.lastProblem { handler(problem) } else { state.recent.current.forEach(handler) }
            defer { state.hubStarted = true }
            return (token, !state.hubStarted)
        }
        if startHub { self.startHub() }
        return token
    }

    func unsubscribe(_ token: Int) {
        state.withLock { state in
            state.subscribers[token] = nil
            followSkyDemand(&state)
        }
    }
}
