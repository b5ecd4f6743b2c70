import FoundationEssentials
import GNSSCore
import GPSDClient

#if canImport(Glibc)
    import Glibc
#endif

/// A child process spawned with a clean signal state.
///
/// Foundation's `Process` spawns from whatever thread calls it; Dispatch worker threads block
/// every signal and a child inherits that mask, so a gpsfake started that way never receives
/// the SIGTERM/SIGCHLD it relies on and hangs. Here `posix_spawn` resets the mask and every
/// handler to the default in the child.
package final class ChildProcess: Sendable {
    package let pid: pid_t
    /// The exit status once reaped.
    private let exitStatus = Locked<Int32?>(nil)

    /// Spawns `executable` with `arguments`; stdin is /dev/null, stdout goes to `stdoutPath`
    /// (or /dev/null), stderr to `stderrPath` (or /dev/null).
    package init(
        executable: String, arguments: [String], environment: [String: String], stdoutPath: String? = nil,
        stderrPath: String? = nil
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .ENOENT) }
        pid = child
    }

    deinit { terminate() }

    /// The exit status once the child has ended (reaps it without blocking), else nil.
    package var exited: Int32? {
        exitStatus.withLock { exitStatus in
            if let exitStatus { return exitStatus }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { exitStatus = status }
            return exitStatus
        }
    }

    var isRunning: Bool { exited == nil }

    /// A wait status (`exited`) in words: "exit status 1", "killed by signal 9".
    static func describe(_ status: Int32) -> String {
        status & 0x7F == 0 ? "exit status \((status >> 8) & 0xFF)" : "killed by signal \(status & 0x7F)"
    }

    /// Waits (without blocking a thread) until the child exits or `timeout` passes.
    @discardableResult
    package func waitForExit(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// The process IDs of the child's own children (from /proc), e.g. the gpsd a gpsfake started.
    func grandchildren() -> [pid_t] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry -> pid_t? in
            guard let candidate = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // After "pid (comm) ": the state, then the parent's PID.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == pid ? candidate : nil
        }
    }

    /// SIGTERM, then SIGKILL after two seconds, and reaps the child. Idempotent.
    package func terminate() {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        for _ in 0..<200 {
            if !isRunning { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        exitStatus.withLock { exitStatus in
            guard exitStatus == nil else { return }
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            exitStatus = status
        }
    }
}
