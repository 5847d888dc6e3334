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
            extendWAVSizesToFileEnd(partial)
            guard lstat(partial, &attributes) == 0 else { continue }
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

    /// A killed recording's WAV header counts the frames of its last rewrite (up to a second
    /// old); the audio after it is in the file. When `data` is the last chunk (as a
    /// recording writes it), its size and RIFF's are set to the whole frames the file
    /// holds, and a torn last frame is cut. Anything else is left as it is.
    static func extendWAVSizesToFileEnd(_ path: String) {
        let descriptor = Glibc.open(path, O_RDWR)
        guard descriptor >= 0 else { return }
        defer { Glibc.close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return }
        let fileSize = Int(status.st_size)
        func read(_ count: Int, at offset: Int) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: count)
            return bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) } == count ? bytes : nil
        }
        func word(_ bytes: [UInt8], _ at: Int) -> Int {
            Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
        }
        guard let riff = read(12, at: 0), riff[0..<4] == [0x52, 0x49, 0x46, 0x46], riff[8..<12] == [0x57, 0x41, 0x56, 0x45] else { return }
        var offset = 12
        var blockAlign = 0
        while offset + 8 <= fileSize, let header = read(8, at: offset) {
            let size = word(header, 4)
            if header[0..<4] == [0x66, 0x6D, 0x74, 0x20], let format = read(16, at: offset + 8) {  // "fmt "
                blockAlign = Int(format[12]) | Int(format[13]) << 8
            }
            if header[0..<4] == [0x64, 0x61, 0x74, 0x61] {  // "data"
                let start = offset + 8
                guard blockAlign > 0, start + size <= fileSize else { return }
                let whole = (fileSize - start) / blockAlign * blockAlign
                guard whole > size, start + whole <= Int(UInt32.max) else { return }
                // Only when audio follows the counted data: a file finished but not yet moved
                // into place has its trailing chunks there instead.
                if let next = read(4, at: start + size + (size & 1)),
                   ["LIST", "cue ", "smpl", "inst", "PEAK", "acid", "bext", "id3 ", "JUNK", "fact", "cart"].contains(String(decoding: next, as: UTF8.self))
                { return }
                var sizes = [UInt8](repeating: 0, count: 4)
                func put(_ value: Int, at position: Int) -> Bool {
                    for index in 0..<4 { sizes[index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
                    return sizes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, 4, off_t(position)) } == 4
                }
                guard put(whole, at: offset + 4), put(start + whole - 8, at: 4) else { return }
                _ = ftruncate(descriptor, off_t(start + whole))
                return
            }
            offset += 8 + size + (size & 1)
        }
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
