import Foundation
import SonoraFile
import SonoraUnits

extension NodeKind {
    /// A recorder (FileRecorder): passes audio through and writes it off the realtime thread.
    public static let recorder = NodeKind(
        name: "recorder", aliases: ["FileRecorder"],
        summary: "passes audio through and records it to a file off the realtime thread",
        options: [
            NodeOption("file", .outputFile, required: true, "the file to record into (type from the extension: .wav, .aif, .caf, .flac)"),
        ]
    ) { build in
        let recorder = FileRecorderUnit()
        guard let path = build.path("file") else { return recorder }
        guard AudioFileType(pathExtension: URL(fileURLWithPath: path).pathExtension) != nil else {
            build.error(at: "file", "cannot tell the file type of '\(Diagnostic.excerpt(path))' (use .wav, .aif, .caf, .flac)")
            return recorder
        }
        // Checking creates nothing: the file is opened when the graph initializes.
        if !build.isCheckOnly {
            do { try recorder.setFile(path) } catch { build.error(at: "file", error) }
        }
        return recorder
    }
}
