import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension Process {
    /// Sends `signal`, waits up to `grace` seconds, then SIGKILLs and waits for the exit.
    /// A wedged jackd (a client removed mid-cycle: "jack_sem … already deallocated") ignores
    /// SIGTERM, and a script waiting on it waits forever: a test's cleanup must not.
    /// Returns whether the child left within the grace period.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, grace: Double = 5) -> Bool {
        guard isRunning else { return true }
        kill(processIdentifier, signal)
        if waitForExit(seconds: grace) { return true }
        kill(processIdentifier, SIGKILL)
        waitUntilExit()
        return false
    }

    /// Waits up to `seconds` for the child to exit; returns whether it did.
    public func waitForExit(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning {
            if Date() >= deadline { return false }
            usleep(20_000)
        }
        return true
    }
}
