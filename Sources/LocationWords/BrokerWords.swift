import LocationCore

// The words of gpslocd's link: why it could not be used, and what to do.

extension BrokerUnavailable: CustomStringConvertible {
    /// What went wrong, and what to do.
    public var description: String {
        switch self {
        case .socket(let cause):
            return "socket: \(cause)"
        case .pathTooLong(let path):
            return "the broker socket path \(path) is too long"
        case .unreachable(let path, let cause, let brokerRequired, let named):
            return "gpslocd cannot be reached at \(path) (\(cause)) — "
                + Self.unreachableAdvice(path, brokerRequired: brokerRequired, named: named)
        case .refused(let app, let said):
            return "gpslocd refused \(app): \(said)"
        case .closedAtOnce(let path):
            return "gpslocd at \(path) closed the connection at once"
        case .noWelcome(let path, let failure):
            return "gpslocd at \(path) sent no WELCOME (\(failure.map { "\($0)" } ?? "closed")) — "
                + "check `journalctl -u gpslocd`"
        case .noAnswerAtStart(let path, let seconds):
            return "gpslocd at \(path) did not answer within \(seconds) s — check `systemctl status gpslocd` (or "
                + "unset GPSLOCATION_BROKER for direct mode)"
        case .noAnswer(let path, let seconds):
            return "gpslocd at \(path) did not answer within \(seconds) s"
        case .notConnected(let path):
            return "gpslocd at \(path) is not connected — check `systemctl status gpslocd`"
        case .linkClosed:
            return "the connection to gpslocd was closed"
        case .lost(let path, let failure):
            return "the connection to gpslocd at \(path) was lost (\(failure.map { "\($0)" } ?? "it closed it")) — "
                + "reconnecting every second; check `systemctl status gpslocd`"
        }
    }

    /// What to do when gpslocd at `path` cannot be reached: start it, or (where the policy
    /// allows direct mode) read gpsd directly.
    static func unreachableAdvice(_ path: String, brokerRequired: Bool, named: Bool) -> String {
        let start =
            "start it (`systemctl start gpslocd.socket`, or `gpslocd --gpsd HOST:PORT --socket \(path) --state DIR`)"
        if brokerRequired {
            return start + "; the location policy requires gpslocd (brokerRequired), so nothing is delivered without it"
        }
        return start + (named ? ", or unset GPSLOCATION_BROKER" : ", or set GPSLOCATION_BROKER=none")
            + " to read gpsd directly"
    }
}

extension BrokerLineReader.Failure: CustomStringConvertible {
    /// Why reading ended, in words.
    public var description: String {
        switch self {
        case .tooLong(let limit): "a line longer than \(limit) bytes"
        case .readFailed(let cause): cause
        }
    }
}

extension BrokerProtocol.Words {
    /// LocationWords' words: what gpslocd writes for the facts its lines carry as words.
    public static let said = BrokerProtocol.Words(failure: { $0.message }, note: { $0.message })
}
