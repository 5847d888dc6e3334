// A program that records with AudioRecorder until it is killed: for the test that a
// recorder killed mid-recording (SIGKILL, power loss) leaves a playable file.
//   sonora-test-recorder OUTPUT DEVICE [FORMAT]   (FORMAT: lpcm, ima4, alac, flac by the extension)
import Foundation
import SonoraCore
import SonoraToolbox

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: sonora-test-recorder OUTPUT DEVICE [lpcm|ima4|alac]\n".utf8))
    exit(2)
}
let format: AudioFormatID = switch arguments.count > 3 ? arguments[3] : "lpcm" {
case "ima4": .appleIMA4
case "alac": .appleLossless
default: .linearPCM
}
do {
    let recorder = try AudioRecorder(
        url: URL(fileURLWithPath: arguments[1]), settings: AudioRecorderSettings(formatID: format, sampleRate: 48000, numberOfChannels: 2),
        device: arguments[2])
    try recorder.record()
    FileHandle.standardOutput.write(Data("recording\n".utf8))
    while true { sleep(1) }
} catch {
    FileHandle.standardError.write(Data("sonora-test-recorder: \(error)\n".utf8))
    exit(1)
}
