import Foundation

#if canImport(Glibc)
import Glibc
#endif


/// What `AudioFile.recoverStalePartials(of:)` did with one partial file left by a dead process.
public struct StalePartialFile: Sendable, Equatable, CustomStringConvertible {
    public enum Outcome: Sendable, Equatable {
        /// Moved to a visible name beside the target; `frames` as its header says.
        case recovered(to: String, frames: Int)
        /// Held no audio (a header only): removed.
        case removedEmpty
        /// Could not be moved; left where it is.
        case left(reason: String)
    }

    public let path: String
    public let processID: pid_t
    public let outcome: Outcome

    public var description: String {
        switch outcome {
        case .recovered(let target, let frames):
            "recovered \(frames) frames left by process \(processID) (killed while writing): \(path) → \(target)"
        case .removedEmpty:
            "removed \(path), left by process \(processID) with no audio in it"
        case .left(let reason):
            "\(path), left by process \(processID), kept where it is: \(reason)"
        }
    }
}

extension AudioFile {
    /// The hidden name a file being created has until `close()`: `.NAME.partial-PID` beside
    /// it (this process's by default). Other writers of whole files use it too.
    public static func partialPath(for path: String, processID: pid_t = getpid()) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        return (directory.isEmpty ? "." : directory) + "/.\((path as NSString).lastPathComponent).partial-\(processID)"
    }

    /// Deals with the partial files of `path` (`.NAME.partial-PID`) whose process is gone:
    /// one holding audio is moved to a visible name that exists nowhere yet
    /// (`NAME-recovered-PID.EXT`: never over the target, which the caller is about to
    /// write again, nor over any other file); one holding no audio is removed. Partials of
    /// running processes (this one included) are left alone. Returns what was done, for
    /// the caller to log.
    public static func recoverStalePartials(of path: String) -> [StalePartialFile] {
        let directory = (path as NSString).deletingLastPathComponent
        let folder = directory.isEmpty ? "." : directory
        let prefix = ".\((path as NSString).lastPathComponent).partial-"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return [] }
        var results: [StalePartialFile] = []
        for name in names.sorted() where name.hasPrefix(prefix) {
            guard let processID = pid_t(name.dropFirst(prefix.count)), processID > 0,
                  processID != getpid(), !isRunning(processID)
            else { continue }
            let partial = folder + "/" + name
            var attributes = stat()
            guard lstat(partial, &attributes) == 0, (attributes.st_mode & S_IFMT) == S_IFREG else { continue }
            let frames = (try? AudioFile.open(partial)).map { file -> Int in
                defer { try? file.close() }
                return file.frameCount
            }
            // A header and nothing else (a render or recording that died before any audio).
            if (frames ?? 0) == 0 && attributes.st_size <= 4096 {
                let removed = unlink(partial) == 0
                results.append(StalePartialFile(
                    path: partial, processID: processID,
                    outcome: removed ? .removedEmpty : .left(reason: String(cString: strerror(errno)))))
                continue
            }
            let target = recoveredName(for: path, processID: processID)
            // link + unlink, not rename: link refuses an existing name, so nothing is replaced.
            // (Filesystems without hard links: rename, the name having just been checked free.)
            if link(partial, target) == 0 || ((errno == EPERM || errno == EOPNOTSUPP) && rename(partial, target) == 0) {
                unlink(partial)
                results.append(StalePartialFile(path: partial, processID: processID, outcome: .recovered(to: target, frames: frames ?? 0)))
            } else {
                results.append(StalePartialFile(
                    path: partial, processID: processID, outcome: .left(reason: "cannot name it \(target): \(String(cString: strerror(errno)))")))
            }
        }
        return results
    }

    /// `NAME-recovered-PID.EXT` beside `path`, with a counter if that exists too.
    private static func recoveredName(for path: String, processID: pid_t) -> String {
        let base = (path as NSString).deletingPathExtension
        let pathExtension = (path as NSString).pathExtension
        let suffix = pathExtension.isEmpty ? "" : "." + pathExtension
        var candidate = "\(base)-recovered-\(processID)\(suffix)"
        var counter = 2
        while FileManager.default.fileExists(atPath: candidate) {
            candidate = "\(base)-recovered-\(processID)-\(counter)\(suffix)"
            counter += 1
        }
        return candidate
    }

    /// Whether a process with this id exists (EPERM: it does, owned by someone else).
    private static func isRunning(_ processID: pid_t) -> Bool {
        kill(processID, 0) == 0 || errno == EPERM
    }
}
