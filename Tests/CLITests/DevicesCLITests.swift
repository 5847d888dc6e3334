import Foundation
import Testing

/// `sonora devices` and the device names every command shares.
@Suite("sonora devices and device names", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct DevicesCLITests {
    static var jackPluginInstalled: Bool {
        FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_jack.so")
            || FileManager.default.fileExists(atPath: "/usr/lib/aarch64-linux-gnu/alsa-lib/libasound_module_pcm_jack.so")
    }

    func entries(_ outcome: Outcome) throws -> [[String: Any]] {
        try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [[String: Any]] ?? []
    }

    @Test("every device is listed once, under the name that opens it")
    func eachNameOnce() throws {
        let outcome = try sonora("devices", "--json")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let names = try entries(outcome).compactMap { $0["name"] as? String }
        #expect(names.filter { $0 == "null" }.count == 1)
        #expect(Set(names).count == names.count, "listed twice: \(names)")
        // ALSA's own null PCM stays reachable, under its explicit name.
        if names.contains("alsa:null") {
            let probed = try sonora("devices", "--json", "alsa:null")
            #expect(probed.status == 0, "\(probed.stderr)")
            #expect(probed.stdout.contains("FLOAT_LE"))
        }
        // `null` alone is Sonora's device: described, nothing to probe, no error.
        let sonoraNull = try sonora("devices", "--json", "null")
        #expect(sonoraNull.status == 0, "\(sonoraNull.stderr)")
        #expect(try entries(sonoraNull).first?["source"] as? String == "sonora")
    }

    @Test("--probe keeps JACK's client noise off stderr; --verbose shows it", .enabled(if: jackPluginInstalled))
    func probeIsQuiet() throws {
        let quiet = try runProcess(sonoraBinary!, ["devices", "--probe", "--json", "jack"], environment: ["JACK_NO_START_SERVER": "1"])
        #expect(!quiet.stderr.contains("jack server"), "\(quiet.stderr)")
        #expect(!quiet.stderr.contains("Cannot connect to server"), "\(quiet.stderr)")
        // The failure itself is still reported, in Sonora's words.
        #expect(quiet.stderr.contains("'jack'") || quiet.stdout.contains("'jack'"))
        let verbose = try runProcess(sonoraBinary!, ["devices", "--probe", "--verbose", "jack"], environment: ["JACK_NO_START_SERVER": "1"])
        #expect(verbose.stderr.contains("libjack:"), "\(verbose.stderr)")
    }

    @Test("the listing probe says nothing on stderr", .enabled(if: jackPluginInstalled))
    func listingProbeIsQuiet() throws {
        let outcome = try runProcess(sonoraBinary!, ["devices", "--probe"], environment: ["JACK_NO_START_SERVER": "1"])
        #expect(outcome.status == 0)
        #expect(outcome.stderr.isEmpty, "\(outcome.stderr)")
    }

    /// The probe itself runs against a real master in `NetJackMasterProbeTests` (network
    /// namespaces); here its options and what it says with no master around.
    @Test("--netjack: bad options refused by name; no master answering is said on stderr, exit 0 (or why it could not ask)")
    func netjackProbeOptions() throws {
        for (options, reason) in [(["--netjack-group", "10.0.0"], "'10.0.0' is not an IPv4 address"), (["--netjack-group", "10.0.0.1:0"], "not a UDP port"),
                                  (["--netjack-group", "10.0.0.1,latency=3"], "no options"), (["--netjack-seconds", "0"], "--netjack-seconds must be in 0.1…10"),
                                  (["--netjack-seconds", "nan"], "--netjack-seconds must be in 0.1…10")] {
            let outcome = try runProcess(sonoraBinary!, ["devices", "--netjack"] + options)
            #expect(outcome.status != 0 && outcome.stderr.contains(reason), "\(options): \(outcome.stderr)")
        }
        // A documentation address (TEST-NET-1) where nothing answers: an empty probe, or — on a
        // machine without a route there — the reason it could not send.
        let quiet = try sonora("devices", "--netjack", "--netjack-group", "192.0.2.1", "--netjack-seconds", "0.2", "--json")
        if quiet.status == 0 {
            #expect(quiet.stderr.contains("netjack2: no master answered on 192.0.2.1:19000 within 0.2 s"), "\(quiet.stderr)")
            #expect(try entries(quiet).allSatisfy { ($0["source"] as? String) != "netjack" })
        } else {
            #expect(quiet.stderr.contains("netjack2 probe: cannot send to 192.0.2.1:19000"), "\(quiet.stderr)")
        }
    }

    @Test("`loopback` is refused, naming the two devices it could mean")
    func loopbackRefused() throws {
        let outcome = try sonora("latency", "--device", "loopback")
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains("sonoraloop") && outcome.stderr.contains("inprocess"), "\(outcome.stderr)")
    }

    @Test("bad device names are refused before anything opens, naming the name", arguments: ["inprocess:abc", "sonoraloop:a b", "null:1", "none", ""])
    func badNames(name: String) throws {
        let outcome = try sonora("latency", "--device", name)
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains("'\(name)'") || outcome.stderr.contains("empty device name") || outcome.stderr.contains("'none'"), "\(outcome.stderr)")
        let devices = try sonora("devices", name)
        #expect(devices.status != 0)
    }

    @Test("the in-process loopback measures its own latency by name")
    func inProcessByName() throws {
        let outcome = try sonora("latency", "--device", "inprocess:700", "--seconds", "0.5", "--json")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let result = try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any]
        #expect(abs((result?["measuredFrames"] as? Double ?? 0) - 700) < 0.01)
    }
}
