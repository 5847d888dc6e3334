import Foundation
import Logging
import SonoraCore
import SonoraHAL
import SonoraPipeline
import SonoraTestSupport
import Testing

/// `device: {wake_up: timer, headroom_us: N}`: parsed, refused at line:column when wrong,
/// written back, and handed to the ALSA device.
@Suite("Pipeline configs: device wake_up and headroom_us", .serialized)
struct WakeUpConfigurationTests {
    static let scratch = try! TemporaryFolder(prefix: "sonora-wakeup-config")

    static func write(_ name: String, _ text: String) -> String {
        let path = scratch.path + "/" + name
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    static func config(device: String) -> String {
        "engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}\ndevice: \(device)\nnodes:\n  - {id: t, kind: tone}\nconnections:\n  - {from: t, to: output}\n"
    }

    /// The parsed config, or nil and `line:column: message` of every problem.
    static func parse(_ name: String, _ device: String) -> (PipelineConfiguration?, [String]) {
        do {
            return (try ConfigurationParser.parse(contentsOf: write(name, config(device: device))), [])
        } catch let error as ConfigurationErrors {
            return (nil, error.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" })
        } catch {
            return (nil, ["\(error)"])
        }
    }

    static func problems(_ name: String, _ device: String) -> [String] { parse(name, device).1 }

    @Test("wake_up: timer with headroom_us is read; poll is the default")
    func parsed() throws {
        guard let timer = Self.parse("timer.yaml", "{playback: null, wake_up: timer, headroom_us: 200}").0 else {
            Issue.record("refused")
            return
        }
        #expect(timer.device.wakesOnTimer)
        #expect(timer.device.headroomMicroseconds == 200)
        guard let plain = Self.parse("plain.yaml", "{playback: null}").0 else {
            Issue.record("refused")
            return
        }
        #expect(!plain.device.wakesOnTimer)
        #expect(plain.device.headroomMicroseconds == nil)
    }

    @Test("a wake_up that is not poll or timer, a headroom out of range, or one without timer is refused where it is written")
    func refused() {
        #expect(Self.problems("bad.yaml", "{playback: null, wake_up: sometimes}")
            == ["2:35: device.wake_up must be `poll` (wait for the device's interrupt) or `timer` (wake on a timer predicted from the device's pointer), not 'sometimes'"])
        #expect(Self.problems("range.yaml", "{playback: null, wake_up: timer, headroom_us: 30000}")
            == ["2:55: device.headroom_us 30000 is out of range 0…20000"])
        #expect(Self.problems("alone.yaml", "{playback: null, headroom_us: 100}")
            == ["2:39: device.headroom_us applies to `wake_up: timer` only; add it or remove headroom_us"])
    }

    @Test("the ALSA device a timer config opens wakes on its timer with that headroom", .enabled(if: ALSAConfiguration.loopPluginPath != nil))
    func opensTimerDevice() throws {
        guard let configuration = Self.parse("open.yaml", "{playback: 'sonoraloop:wakeup-config', capture: 'sonoraloop:wakeup-config', wake_up: timer, headroom_us: 250}").0 else {
            Issue.record("refused")
            return
        }
        let device = try DeviceOpener.open(configuration, logger: Logger(label: "test"))
        let alsa = try #require(device as? ALSADevice)
        #expect(alsa.configuration.wakeUp == AudioDeviceConfiguration.WakeUp.timer(headroomMicroseconds: 250))
        #expect(alsa.usesTimerWakeUps)
    }
}
