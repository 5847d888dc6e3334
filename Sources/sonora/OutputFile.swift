import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// "May this command write OUTPUT?" — the one answer every command that writes a file
/// gives (convert, render, voice process, plugins apply, plugins save-preset): never over
/// one of its own inputs, even with --overwrite (the same file by device and inode, so
/// `./a.wav`, `a.wav`, a symlink and a hard link to it are all the same), and never over
/// an existing file without --overwrite.
enum OutputFile {
    /// Throws a CLIError naming the file and the way out; returns nothing when the write may go ahead.
    static func check(_ output: String, inputs: [String], overwrite: Bool) throws {
        for input in inputs where isSameFile(output, input) {
            throw CLIError("\(output) is the input \(input): write the result to another file (--overwrite never replaces an input)")
        }
        var attributes = stat()
        if lstat(output, &attributes) == 0 {
            if (attributes.st_mode & S_IFMT) == S_IFDIR {
                throw CLIError("\(output) is a directory; give a file name")
            }
            guard overwrite else { throw CLIError("\(output) exists; use --overwrite to replace it") }
        }
    }

    /// Whether two paths name one existing file (symlinks followed).
    static func isSameFile(_ a: String, _ b: String) -> Bool {
        var first = stat(), second = stat()
        guard stat(a, &first) == 0, stat(b, &second) == 0 else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }
}
