import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import SonoraToolbox
import Testing

/// The README's player, recorder and system sound lines, verbatim but for the device (the
/// timer-paced `null` device: no sound card here) and the files' folder.
@Suite("README's player, recorder and system sound", .serialized)
struct ReadmeServicesExampleTests {
    /// Waits (bounded; nothing is asserted about time) until `condition` holds.
    func waitUntil(_ condition: () -> Bool) -> Bool {
        for _ in 0..<1000 where !condition() { usleep(10_000) }
        return condition()
    }

    @Test func player() throws {
        let folder = try TemporaryFolder()
        let song = folder.path("song.m4a")
        try runTool("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=330:sample_rate=48000:duration=0.2", "-ac", "2", "-c:a", "aac", song])

        let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: song), device: "null")
        player.numberOfLoops = 1; player.volume = 0.8
        try player.play()                      // returns at once; the delegate hears of the end

        #expect(player.isPlaying)
        #expect(waitUntil { !player.isPlaying }, "two passes of 0.2 s end")
        #expect(player.currentTime == 0)
    }

    @Test func recorder() throws {
        let folder = try TemporaryFolder()
        let memo = folder.path("memo.caf")

        let settings = AudioRecorderSettings(formatID: .appleLossless, sampleRate: 44100, numberOfChannels: 1)
        let recorder = try AudioRecorder(url: URL(fileURLWithPath: memo), settings: settings, device: "null")
        try recorder.record(forDuration: 0.25)    // a complete memo.caf a quarter second later

        #expect(waitUntil { FileManager.default.fileExists(atPath: memo) && !recorder.isRecording })
        let file = try AudioFile.open(memo)
        #expect(file.dataFormat.formatID == .appleLossless && file.frameCount == 11025)
    }

    @Test func systemSound() throws {
        let folder = try TemporaryFolder()
        let bell = folder.path("bell.caf")
        try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", bell, "synth", "0.1", "sine", "1200"])
        SystemSoundServices.setDevice("null")
        let rang = folder.path("rang")
        SystemSoundServices.alertAction = .command(["/usr/bin/touch", rang])
        defer { SystemSoundServices.alertAction = nil }

        let id = try SystemSoundServices.createSystemSoundID(URL(fileURLWithPath: bell))
        try SystemSoundServices.playAlertSound(id)   // in the next period; the alert action too

        #expect(waitUntil { FileManager.default.fileExists(atPath: rang) })
        try SystemSoundServices.disposeSystemSoundID(id)
    }
}
