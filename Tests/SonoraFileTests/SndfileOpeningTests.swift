import CSndfile
import Foundation
import Synchronization
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// libsndfile keeps a failed open's reason in one process-wide variable that any other
/// open resets. CI once saw "text.m4a: No Error." because a test on another thread opened
/// a good file between the failure and the read of its reason.
@Suite("libsndfile open errors under concurrent opens")
struct SndfileOpeningTests {
    @Test func failedOpensKeepTheirReasonWhileOtherThreadsOpenGoodFiles() throws {
        let folder = try TemporaryFolder(prefix: "sonora-sfopen")
        let good = folder.path("good.wav")
        let writer = try AudioFile.create(good, type: .wave, format: .linearPCM(sampleRate: 48000, channels: 1, sample: .int16))
        let silence = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 64)
        try writer.writeFrames(from: silence.list)
        try writer.close()
        let text = folder.path("text.wav")
        _ = FileManager.default.createFile(atPath: text, contents: Data("not a wave file at all\n".utf8))

        let stop = StopFlag()
        let openers = (0..<2).map { _ in
            Thread {
                while !stop.value.load(ordering: .relaxed) {
                    var info = SF_INFO()
                    if case .success(let handle) = SndfileOpening.open(good, mode: Int32(SFM_READ), info: &info) { sf_close(handle) }
                }
            }
        }
        openers.forEach { $0.start() }
        defer { stop.value.store(true, ordering: .relaxed) }
        var reasons: [String] = []
        for _ in 0..<400 {
            var info = SF_INFO()
            if case .failure(let failure) = SndfileOpening.open(text, mode: Int32(SFM_READ), info: &info) { reasons.append(failure.reason) }
        }
        #expect(reasons.count == 400)
        let lost = reasons.filter { $0 == "No Error." || $0.isEmpty }
        #expect(lost.isEmpty, "\(lost.count) of 400 failed opens reported \(lost.first ?? "")")
        // And through AudioFile, which names the file and libsndfile's reason.
        do {
            _ = try AudioFile.open(text)
            Issue.record("a text file opened as audio")
        } catch {
            #expect(!error.message.contains("No Error"), "\(error.message)")
        }
    }
}

/// Tells the opener threads to finish.
private final class StopFlag: Sendable {
    let value = Atomic(false)
}
