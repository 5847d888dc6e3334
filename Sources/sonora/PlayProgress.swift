import Foundation
import SonoraDSP
import SonoraFile

/// `sonora play`'s progress line on stderr: time played, the total, the pass (with --loop)
/// and the peak level, rewritten in place about four times a second.
final class PlayProgress {
    private let totalSeconds: Double
    private let loops: Bool
    private var lastShown: Double = -1
    private var shown = false

    init(files: [AudioFile], startFrame: Int, loops: Bool) {
        let frames = files.reduce(0.0) { $0 + $1.duration }
        totalSeconds = frames - Double(startFrame) / (files.first?.dataFormat.sampleRate ?? 1)
        self.loops = loops
    }

    /// Shows the line if a quarter second has passed since the last one.
    func update(seconds: Double, pass: Int, peak: Float) {
        let now = Date().timeIntervalSinceReferenceDate
        guard now - lastShown >= 0.25 else { return }
        lastShown = now
        shown = true
        let loop = loops ? String(format: "  pass %d", pass) : ""
        let line = String(format: "\r%@ / %@%@  peak %6.1f dBFS ", Self.clock(seconds), Self.clock(totalSeconds), loop, Decibels.fromLinear(peak))
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Ends the line (once something was shown).
    func finish() {
        if shown { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    /// m:ss.s
    static func clock(_ seconds: Double) -> String {
        let clamped = max(seconds, 0)
        return String(format: "%d:%04.1f", Int(clamped) / 60, clamped.truncatingRemainder(dividingBy: 60))
    }
}
