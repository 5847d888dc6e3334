import SonoraCore
import SonoraHAL
import Testing

@Suite("netjack: device names")
struct NetJackDeviceNameTests {
    @Test("defaults, address, port and options parse, and read back")
    func parses() throws {
        let plain = try DeviceSpecifier(parsing: "netjack:slave")
        #expect(plain == .netJack(NetJackDeviceName(role: .slave)))
        #expect(plain.driver == "netjack")
        #expect(plain.name == "netjack:slave")
        let full = try NetJackDeviceName.parse("slave@10.0.0.1:19001,latency=0,mtu=9000,encoder=opus,kbps=128,name=kitchen,timeout=3")
        #expect(full.address == "10.0.0.1")
        #expect(full.port == 19001)
        #expect(full.latencyCycles == 0)
        #expect(full.mtu == 9000)
        #expect(full.encoder == .opus)
        #expect(full.kbps == 128)
        #expect(full.clientName == "kitchen")
        #expect(full.timeoutSeconds == 3)
        #expect(try NetJackDeviceName.parse(full.text) == full)
        let master = try DeviceSpecifier(parsing: "netjack:master@225.3.19.154,name=hall")
        #expect(master.name == "netjack:master,name=hall")
    }

    @Test("bad names are refused with what is wrong", arguments: [
        ("netjack", "slave"),
        ("netjack:", "slave"),
        ("netjack:boss", "slave"),
        ("netjack:slave@kitchen.local", "IPv4"),
        ("netjack:slave@10.0.0.256", "IPv4"),
        ("netjack:slave@10.0.0.1:0", "port"),
        ("netjack:slave@10.0.0.1:70000", "port"),
        ("netjack:slave,latency=31", "latency"),
        ("netjack:slave,latency", "OPTION=VALUE"),
        ("netjack:slave,mtu=100", "MTU"),
        ("netjack:slave,encoder=celt", "encoder"),
        ("netjack:slave,encoder=opus", "kbps"),
        ("netjack:slave,kbps=64", "opus only"),
        ("netjack:slave,name=a/b", "name"),
        ("netjack:slave,volume=3", "unknown option"),
        ("netjack:slave,latency=1,latency=2", "twice"),
        ("netjack:master,latency=1", "slave's to choose"),
    ])
    func refuses(_ text: String, _ expected: String) {
        #expect {
            _ = try DeviceSpecifier(parsing: text)
        } throws: { error in
            guard let error = error as? AudioError else { return false }
            return error.code == .badDevice && error.message.contains(expected)
        }
    }
}
