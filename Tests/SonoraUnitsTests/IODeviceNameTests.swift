import SonoraCore
import SonoraHAL
import SonoraUnits
import Testing

/// The I/O unit opens its own device through the HAL's one parser and factory.
@Suite("The I/O unit's device by name", .serialized)
struct IODeviceNameTests {
    @Test("a bad CurrentDevice name is refused when it is set, naming it")
    func badNameRefusedAtOnce() throws {
        let io = IOUnit()
        #expect {
            try io.setProperty(.currentDevice, scope: .global, element: 0, to: .device("loopback"))
        } throws: { error in
            let message = (error as? AudioError)?.message ?? ""
            return message.contains("'loopback'") && message.contains("sonoraloop") && message.contains("inprocess")
        }
        #expect(throws: AudioError.self) { try io.setDevice(named: "inprocess:zero") }
        // The name in force is unchanged.
        if case .device(let name) = try io.property(.currentDevice, scope: .global, element: 0) { #expect(name == "null") }
    }

    @Test("a device named `inprocess` is opened by the unit at one buffer of latency")
    func opensInProcessByName() throws {
        let graph = AudioGraph()
        let io = IOUnit()
        io.deviceConfiguration = AudioDeviceConfiguration(periodFrames: 128, periods: 3, inputChannels: 0, realtimePriority: nil)
        try io.setProperty(.currentDevice, scope: .global, element: 0, to: .device("inprocess"))
        try io.setIOEnabled(true, scope: .input, element: 1)
        let ioNode = graph.addNode(io)
        let tone = try graph.addNode(ToneGeneratorUnit.componentDescription)
        try graph.connect(tone, bus: 0, to: ioNode, input: 0)
        try graph.initialize()
        #expect(io.device?.driver == "inprocess")
        #expect(io.latency == Double(128 * 3) / 48000)
        graph.uninitialize()
    }
}
