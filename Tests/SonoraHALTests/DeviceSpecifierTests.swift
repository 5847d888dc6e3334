import SonoraCore
import SonoraHAL
import Testing

/// The one parser of device names and the one factory.
@Suite("Device names and the device factory")
struct DeviceSpecifierTests {
    @Test("every spelling Sonora accepts parses to its device", arguments: [
        ("null", DeviceSpecifier.null),
        ("~", .null),
        ("offline", .offline),
        ("inprocess", .inProcess(latencyFrames: nil, paced: true)),
        ("inprocess:480", .inProcess(latencyFrames: 480, paced: true)),
        ("sonoraloop", .alsa(capture: "sonoraloop", playback: "sonoraloop")),
        ("sonoraloop:a-1.b_2", .alsa(capture: "sonoraloop:a-1.b_2", playback: "sonoraloop:a-1.b_2")),
        ("jackloop", .alsa(capture: "sonora_jackloop_capture", playback: "sonora_jackloop_playback")),
        ("alsa:null", .alsa(capture: "null", playback: "null")),
        ("hw:0,0", .alsa(capture: "hw:0,0", playback: "hw:0,0")),
        ("plughw:CARD=PCH,DEV=0", .alsa(capture: "plughw:CARD=PCH,DEV=0", playback: "plughw:CARD=PCH,DEV=0")),
    ])
    func parses(text: String, expected: DeviceSpecifier) throws {
        let specifier = try DeviceSpecifier(parsing: text)
        #expect(specifier == expected)
        // The name reads back as the same device.
        #expect(try DeviceSpecifier(parsing: specifier.name) == specifier)
    }

    @Test("bad names are refused with a message naming them", arguments: [
        ("", "empty device name"),
        ("loopback", "`sonoraloop[:NAME]`"),
        ("loopback:3", "`inprocess[:FRAMES]`"),
        ("none", "'none' is no device"),
        ("inprocess:0", "'inprocess:0'"),
        ("inprocess:ten", "'inprocess:ten'"),
        ("null:1", "'null:1'"),
        ("sonoraloop:a b", "'sonoraloop:a b' contains a space"),
        ("sonoraloop:", "'sonoraloop:'"),
        ("hw:0\n", "'hw:0\\n' contains a control character"),
        ("alsa:", "'alsa:'"),
        ("-x", "'-x'"),
    ])
    func refuses(text: String, message: String) {
        #expect {
            _ = try DeviceSpecifier(parsing: text)
        } throws: { error in
            let error = error as? AudioError
            return error?.code == .badDevice && error?.message.contains(message) == true
        }
    }

    @Test("a long bad name is shown as a short excerpt")
    func longNameExcerpt() {
        let long = "sonoraloop:" + String(repeating: "x ", count: 100_000)
        do {
            _ = try DeviceSpecifier(parsing: long)
            Issue.record("accepted")
        } catch {
            #expect(error.message.count < 200)
        }
    }

    @Test("names per direction combine as a config gives them")
    func combines() throws {
        #expect(try DeviceSpecifier(capture: nil, playback: nil) == .null)
        #expect(try DeviceSpecifier(capture: nil, playback: "null") == .null)
        #expect(try DeviceSpecifier(capture: "hw:1", playback: "hw:0") == .alsa(capture: "hw:1", playback: "hw:0"))
        #expect(try DeviceSpecifier(capture: "null", playback: "hw:0") == .alsa(capture: nil, playback: "hw:0"))
        #expect(try DeviceSpecifier(capture: "hw:1", playback: nil) == .alsa(capture: "hw:1", playback: nil))
        #expect(try DeviceSpecifier(capture: "jackloop", playback: "jackloop") == .alsa(capture: "sonora_jackloop_capture", playback: "sonora_jackloop_playback"))
        #expect(try DeviceSpecifier(capture: "inprocess:300", playback: "inprocess:300") == .inProcess(latencyFrames: 300, paced: true))
        #expect(throws: AudioError.self) { try DeviceSpecifier(capture: "offline", playback: "null") }
        #expect(throws: AudioError.self) { try DeviceSpecifier(capture: "inprocess", playback: "hw:0") }
        #expect(throws: AudioError.self) { try DeviceSpecifier(capture: "loopback", playback: nil) }
    }

    @Test("a name is checked against ALSA's configuration without opening it")
    func checkDefined() throws {
        try DeviceSpecifier(parsing: "null").checkDefined()
        try DeviceSpecifier(parsing: "alsa:null").checkDefined()
        try DeviceSpecifier(parsing: "hw:0").checkDefined()
        try DeviceSpecifier(parsing: "jackloop").checkDefined()
        if ALSAConfiguration.loopPluginPath != nil { try DeviceSpecifier(parsing: "sonoraloop:x").checkDefined() }
        #expect {
            try DeviceSpecifier(parsing: "sonora_no_such_pcm").checkDefined()
        } throws: { error in
            (error as? AudioError)?.message == "no ALSA PCM called 'sonora_no_such_pcm' (`sonora devices` lists the PCMs ALSA knows)"
        }
        try DeviceSpecifier(parsing: "my_pcm").checkDefined(alsaConfiguration: "pcm.my_pcm { type null }")
    }

    @Test("the factory opens each driver, and falls back to the null device when asked")
    func factory() throws {
        let configuration = AudioDeviceConfiguration(periodFrames: 256, periods: 2, inputChannels: 1, outputChannels: 2)
        let inProcess = try AudioDevices.open(named: "inprocess", configuration: configuration)
        #expect(inProcess.driver == "inprocess")
        #expect((inProcess as? TimerDevice)?.mode == .inProcess(latencyFrames: 512, paced: true))
        #expect(try AudioDevices.open(named: "offline", configuration: configuration).driver == "offline")
        #expect(try AudioDevices.open(named: "alsa:null", configuration: configuration).driver == "alsa")
        #expect(throws: AudioError.self) { try AudioDevices.open(named: "sonora_no_such_pcm", configuration: configuration) }
        let fallback = try AudioDevices.open(named: "sonora_no_such_pcm", configuration: configuration, fallback: .null)
        #expect(fallback.driver == "null")
        #expect(fallback.format.outputChannels == 2 && fallback.format.inputChannels == 1)
        // A capture-only ALSA device falls back to a null device that still plays.
        let captureOnly = try AudioDevices.open(.alsa(capture: "sonora_no_such_pcm", playback: nil), configuration: configuration, fallback: .null)
        #expect(captureOnly.format.inputChannels == 1 && captureOnly.format.outputChannels == 1)
        // A bad setting of Sonora's own device is not hidden by the fallback.
        #expect(throws: AudioError.self) { try AudioDevices.open(named: "inprocess:100", configuration: configuration, fallback: .null) }
    }
}
