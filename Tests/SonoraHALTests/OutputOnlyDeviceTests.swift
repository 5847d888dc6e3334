import SonoraCore
import SonoraHAL
import Testing

/// An output-only (or input-only) user of a duplex ALSA name — an audio queue playing on
/// `sonoraloop` or `default` — opens only the direction it has channels for: ALSA has no
/// 0-channel PCM, and opening capture with 0 channels failed (`sonora play --device sonoraloop`).
@Suite("A duplex ALSA name opened for one direction", .serialized, .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct OutputOnlyDeviceTests {
    @Test("output only: no capture PCM is opened; input only: no playback PCM")
    func oneDirection() throws {
        let output = try AudioDevices.open(named: "sonoraloop:oneway-out", configuration: AudioDeviceConfiguration(inputChannels: 0, outputChannels: 2))
        let playing = try #require(output as? ALSADevice)
        #expect(playing.captureName == nil && playing.playbackName == "sonoraloop:oneway-out")
        #expect(playing.format.inputChannels == 0 && playing.format.outputChannels == 2)
        let input = try AudioDevices.open(named: "sonoraloop:oneway-in", configuration: AudioDeviceConfiguration(inputChannels: 1, outputChannels: 0))
        let capturing = try #require(input as? ALSADevice)
        #expect(capturing.playbackName == nil && capturing.captureName == "sonoraloop:oneway-in")
        // Neither direction: still an error naming the PCM, not a device with no stream.
        #expect(throws: AudioError.self) {
            try AudioDevices.open(named: "sonoraloop:oneway-none", configuration: AudioDeviceConfiguration(inputChannels: 0, outputChannels: 0))
        }
    }
}
