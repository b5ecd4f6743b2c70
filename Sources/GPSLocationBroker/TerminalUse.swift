import CBrokerSupport
import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc

/// When In Use, judged on who holds the connection **now** (#51), not on the process that
/// connected: a program connected in a terminal's foreground could fork, let the parent exit and
/// `setsid()` in the child, or pass the descriptor to a daemon (`SCM_RIGHTS`), and kept receiving
/// full-accuracy fixes with nothing in any foreground.
///
/// A connection is in use when all of these hold, and otherwise not (in doubt, not in use):
/// 1. the processes holding the program's end of the connection are found — the socket at the
///    other end of gpslocd's (`sock_diag`), looked for among the descriptors of every process of
///    the program's uid (`/proc/PID/fdinfo`; gpslocd needs root or `CAP_SYS_PTRACE` to read them,
///    and a process of the uid whose descriptors it cannot read makes the answer "not in use");
/// 2. every one of them is in the foreground process group of its controlling terminal, and that
///    terminal is the one the program connected from — a new terminal made after the connection
///    (`script`, `unshare`, a pty of its own) does not count;
/// 3. that terminal is a login's: a console or serial line, or a pseudo-terminal whose master
///    side is held by a program with no terminal of its own (a terminal emulator, sshd, tmux's
///    server) or by another user's process; a pseudo-terminal made by a program that itself runs
///    on a terminal (`script` or `unshare` in a shell) counts only while that program is in use by
///    the same rule — the nested terminal gives no more than its maker's own session.
///
/// What it cannot tell: within one uid, a program that makes its own pseudo-terminal from no
/// terminal at all, *before* it connects, looks like a terminal emulator's window (as it does to
/// the person); and a window, a tmux session or an ssh login the person is not looking at is
/// still a terminal's foreground. docs/broker.md states the rule and these limits.
enum TerminalUse {
    /// One connection to judge.
    struct Connection {
        var id: Int
        /// The inode of the program's end of the connection (0: unknown).
        var peerInode: UInt
        /// The controlling terminal of the process that connected (`tty_nr`; 0: none).
        var terminal: Int
    }

    /// Whether each connection is in use, with the reason when it is not; one scan of `/proc`
    /// for all of one uid's connections.
    static func judge(uid: UInt32, _ connections: [Connection]) -> [Int: (inUse: Bool, reason: String)] {
        var inodes = connections.map(\.peerInode).filter { $0 != 0 }
        var found = [gpslocd_holding](repeating: gpslocd_holding(), count: 4096)
        var unreadable: Int32 = 0
        let count = inodes.withUnsafeMutableBufferPointer { inodes in
            gpslocd_scan_holders(uid, inodes.baseAddress, Int32(inodes.count), &found, Int32(found.count), &unreadable)
        }
        var verdicts: [Int: (inUse: Bool, reason: String)] = [:]
        guard count >= 0 else {
            for connection in connections { verdicts[connection.id] = (false, "gpslocd cannot list the processes") }
            return verdicts
        }
        var holders: [UInt: [Int32]] = [:]
        var masters: [Int: [Int32]] = [:]
        for holding in found[..<Int(count)] {
            if holding.pty >= 0 {
                masters[Int(holding.pty), default: []].append(holding.pid)
            } else {
                holders[UInt(holding.inode), default: []].append(holding.pid)
            }
        }
        for connection in connections {
            verdicts[connection.id] = verdict(
                connection, uid: uid, holders: holders, masters: masters, unreadable: unreadable)
        }
        return verdicts
    }

    private static func verdict(
        _ connection: Connection, uid: UInt32, holders: [UInt: [Int32]], masters: [Int: [Int32]], unreadable: Int32
    ) -> (inUse: Bool, reason: String) {
        guard connection.terminal != 0 else { return (false, "it connected from no terminal") }
        guard connection.peerInode != 0 else { return (false, "its end of the connection cannot be traced") }
        guard unreadable == 0 else {
            return (
                false,
                "gpslocd cannot read the descriptors of \(unreadable) process(es) of uid \(uid) "
                    + "(it needs root or CAP_SYS_PTRACE)"
            )
        }
        guard let pids = holders[connection.peerInode], !pids.isEmpty else {
            return (false, "no process of uid \(uid) holds the connection any more")
        }
        for pid in pids {
            guard let status = ProcessTerminal.read(pid) else { return (false, "pid \(pid) could not be read") }
            guard status.terminal == connection.terminal else {
                return (
                    false,
                    status.terminal == 0
                        ? "pid \(pid), which holds the connection, has no terminal"
                        : "pid \(pid), which holds the connection, is on another terminal than the one it connected from"
                )
            }
            guard status.isForeground else { return (false, "pid \(pid) is not in its terminal's foreground") }
            if let reason = nestedReason(status.terminal, masters: masters, depth: 0) { return (false, reason) }
        }
        return (true, "")
    }

    /// Nil when `terminal` is a login's (see the type); else why not.
    private static func nestedReason(_ terminal: Int, masters: [Int: [Int32]], depth: Int) -> String? {
        guard let index = ProcessTerminal.ptyIndex(terminal) else { return nil }  // a console or serial line
        guard depth < 4 else { return "pseudo-terminals nested more than four deep" }
        for master in masters[index] ?? [] {
            guard let maker = ProcessTerminal.read(master) else { return "pid \(master) could not be read" }
            if maker.terminal == 0 { continue }  // a terminal emulator, sshd, tmux's server
            guard maker.isForeground else {
                return "its terminal was made by pid \(master), which is not in its own terminal's foreground"
            }
            if let reason = nestedReason(maker.terminal, masters: masters, depth: depth + 1) { return reason }
        }
        return nil
    }
}

/// A process's controlling terminal and whether it is that terminal's foreground, from
/// `/proc/PID/stat` (fields 5, 7, 8: pgrp, tty_nr, tpgid).
struct ProcessTerminal {
    var terminal: Int
    var isForeground: Bool

    static func read(_ pid: Int32) -> ProcessTerminal? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 5, let group = Int(fields[2]), let terminal = Int(fields[4]),
            let foreground = Int(fields[5])
        else { return nil }
        return ProcessTerminal(terminal: terminal, isForeground: terminal != 0 && group == foreground)
    }

    /// The index of a Unix 98 pseudo-terminal (`/dev/pts/N`: majors 136–143), or nil.
    static func ptyIndex(_ terminal: Int) -> Int? {
        let major = (terminal >> 8) & 0xfff
        let minor = (terminal & 0xff) | ((terminal >> 12) & 0xfff00)
        guard (136...143).contains(major) else { return nil }
        return (major - 136) * 256 + minor
    }
}
